#if os(Linux)
internal import CV4L2

/// What VIDIOC_QUERYCTRL says about one control.
public struct V4L2ControlInfo: Sendable, Hashable {
    public var id: V4L2ControlID
    public var type: V4L2ControlType
    /// The driver's label. For display only: it differs between kernels (see
    /// `V4L2ControlID`), so nothing in PoseCast matches on it.
    public var name: String
    public var minimum: Int32
    public var maximum: Int32
    public var step: Int32
    public var defaultValue: Int32
    public var flags: V4L2ControlFlags

    public init(id: V4L2ControlID, type: V4L2ControlType, name: String, minimum: Int32, maximum: Int32,
                step: Int32, defaultValue: Int32, flags: V4L2ControlFlags = []) {
        self.id = id; self.type = type; self.name = name
        self.minimum = minimum; self.maximum = maximum; self.step = step
        self.defaultValue = defaultValue; self.flags = flags
    }

    /// Converts the kernel struct (the label is NUL-terminated, at most 32 bytes).
    init(_ q: v4l2_queryctrl) {
        let label = withUnsafeBytes(of: q.name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        self.init(id: V4L2ControlID(rawValue: q.id), type: V4L2ControlType(rawValue: q.type), name: label,
                  minimum: q.minimum, maximum: q.maximum, step: q.step,
                  defaultValue: q.default_value, flags: V4L2ControlFlags(rawValue: q.flags))
    }
}

/// `enum v4l2_ctrl_type`, the kinds PoseCast meets (others keep their raw value).
public struct V4L2ControlType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let integer = V4L2ControlType(rawValue: V4L2_CTRL_TYPE_INTEGER.rawValue)
    public static let boolean = V4L2ControlType(rawValue: V4L2_CTRL_TYPE_BOOLEAN.rawValue)
    public static let menu = V4L2ControlType(rawValue: V4L2_CTRL_TYPE_MENU.rawValue)
    public static let integerMenu = V4L2ControlType(rawValue: V4L2_CTRL_TYPE_INTEGER_MENU.rawValue)
    public static let button = V4L2ControlType(rawValue: V4L2_CTRL_TYPE_BUTTON.rawValue)

    public var description: String {
        switch self {
        case .integer: "integer"
        case .boolean: "boolean"
        case .menu: "menu"
        case .integerMenu: "integer menu"
        case .button: "button"
        default: "type \(rawValue)"
        }
    }
}

/// V4L2_CTRL_FLAG_* as reported by VIDIOC_QUERYCTRL.
public struct V4L2ControlFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The driver lists the control but it cannot be used at all.
    public static let disabled = V4L2ControlFlags(rawValue: UInt32(V4L2_CTRL_FLAG_DISABLED))
    /// Temporarily unchangeable (e.g. while streaming).
    public static let grabbed = V4L2ControlFlags(rawValue: UInt32(V4L2_CTRL_FLAG_GRABBED))
    public static let readOnly = V4L2ControlFlags(rawValue: UInt32(V4L2_CTRL_FLAG_READ_ONLY))
    /// Setting the control may change other controls.
    public static let update = V4L2ControlFlags(rawValue: UInt32(V4L2_CTRL_FLAG_UPDATE))
    /// Currently without effect, usually because an automatic mode owns it.
    public static let inactive = V4L2ControlFlags(rawValue: UInt32(V4L2_CTRL_FLAG_INACTIVE))
    public static let writeOnly = V4L2ControlFlags(rawValue: UInt32(V4L2_CTRL_FLAG_WRITE_ONLY))
    public static let volatile = V4L2ControlFlags(rawValue: UInt32(V4L2_CTRL_FLAG_VOLATILE))
}
#endif
