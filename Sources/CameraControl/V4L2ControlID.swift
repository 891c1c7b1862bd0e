#if os(Linux)
internal import CV4L2

/// A V4L2 control id (CID). PoseCast identifies controls ONLY by CID: the names a
/// driver reports changed in Linux 5.16 ("Focus, Auto" became "Focus, Automatic
/// Continuous", "Exposure, Auto" became "Auto Exposure", "Exposure (Absolute)" became
/// "Exposure Time, Absolute"), the CIDs did not.
public struct V4L2ControlID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    init(_ macro: Int32) { rawValue = UInt32(bitPattern: macro) }

    /// Continuous autofocus (boolean; 0 = manual focus).
    public static let focusAuto = V4L2ControlID(V4L2_CID_FOCUS_AUTO)
    /// Lens position; unit undefined, larger is nearer per the V4L2 spec.
    public static let focusAbsolute = V4L2ControlID(V4L2_CID_FOCUS_ABSOLUTE)
    /// Exposure mode (menu: auto, manual, shutter priority, aperture priority).
    public static let exposureAuto = V4L2ControlID(V4L2_CID_EXPOSURE_AUTO)
    /// Exposure time in units of 100 µs.
    public static let exposureAbsolute = V4L2ControlID(V4L2_CID_EXPOSURE_ABSOLUTE)
    /// Automatic gain (boolean; 0 = manual gain).
    public static let autoGain = V4L2ControlID(V4L2_CID_AUTOGAIN)
    /// Gain (user class; unit undefined).
    public static let gain = V4L2ControlID(V4L2_CID_GAIN)
    /// Analogue gain (image-source class, sensor drivers; unit undefined).
    public static let analogueGain = V4L2ControlID(V4L2_CID_ANALOGUE_GAIN)
    /// Automatic white balance (boolean; 0 = manual).
    public static let autoWhiteBalance = V4L2ControlID(V4L2_CID_AUTO_WHITE_BALANCE)
    /// White-balance colour temperature in kelvin.
    public static let whiteBalanceTemperature = V4L2ControlID(V4L2_CID_WHITE_BALANCE_TEMPERATURE)

    private static let symbols: [V4L2ControlID: String] = [
        .focusAuto: "V4L2_CID_FOCUS_AUTO",
        .focusAbsolute: "V4L2_CID_FOCUS_ABSOLUTE",
        .exposureAuto: "V4L2_CID_EXPOSURE_AUTO",
        .exposureAbsolute: "V4L2_CID_EXPOSURE_ABSOLUTE",
        .autoGain: "V4L2_CID_AUTOGAIN",
        .gain: "V4L2_CID_GAIN",
        .analogueGain: "V4L2_CID_ANALOGUE_GAIN",
        .autoWhiteBalance: "V4L2_CID_AUTO_WHITE_BALANCE",
        .whiteBalanceTemperature: "V4L2_CID_WHITE_BALANCE_TEMPERATURE",
    ]

    /// The kernel header's macro name, for the CIDs PoseCast uses (nil for others).
    public var symbol: String? { Self.symbols[self] }

    /// The control class (V4L2_CTRL_CLASS_USER, V4L2_CTRL_CLASS_CAMERA, …).
    public var controlClass: UInt32 { pcv_control_class(rawValue) }

    /// Whether VIDIOC_G_CTRL/S_CTRL may be used; other classes need the extended ioctls.
    public var isUserClass: Bool { controlClass == UInt32(V4L2_CTRL_CLASS_USER) }

    /// "V4L2_CID_FOCUS_ABSOLUTE (0x009a090a)", for error messages.
    public var description: String {
        let digits = String(rawValue, radix: 16)
        let hex = "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
        return symbol.map { "\($0) (\(hex))" } ?? "CID \(hex)"
    }
}
#endif
