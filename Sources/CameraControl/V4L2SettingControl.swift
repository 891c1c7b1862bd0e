#if os(Linux)
internal import CV4L2

/// The automatic-mode control that owns a setting while it is on.
struct V4L2AutoControl: Sendable, Hashable {
    var id: V4L2ControlID
    /// The value that hands the setting to us (0 for a boolean; V4L2_EXPOSURE_MANUAL).
    var manualValue: Int32
    /// Values that count as automatic, the one `restoreAuto` writes first; empty when
    /// the camera can be switched to manual but offers no automatic mode to return to.
    var automaticValues: [Int32]
}

/// A setting the device supports: the control that takes the value, its automatic
/// mode if any, and the unit conversion.
struct V4L2SettingControl: Sendable, Hashable {
    var setting: CameraSetting
    /// As last queried (ranges and the inactive flag can change at run time).
    var info: V4L2ControlInfo
    var auto: V4L2AutoControl?
    var units: V4L2Units

    var mapping: V4L2UnitMapping { units.mapping(for: info) }
    var range: SettingRange { mapping.range(of: info) }
}

/// The CIDs behind each CameraSetting and how they are discovered. Only CIDs are
/// used; the labels the driver reports are never looked at.
enum V4L2Discovery {
    enum Outcome: Sendable, Hashable {
        case supported(V4L2SettingControl)
        case unsupported(reason: String)
    }

    /// The value controls to try, in order, and the automatic-mode control.
    static func controls(for setting: CameraSetting) -> (values: [V4L2ControlID], auto: V4L2ControlID) {
        switch setting {
        case .lensPosition: ([.focusAbsolute], .focusAuto)
        case .exposureMs: ([.exposureAbsolute], .exposureAuto)
        case .gain: ([.gain, .analogueGain], .autoGain)
        case .whiteBalanceKelvin: ([.whiteBalanceTemperature], .autoWhiteBalance)
        }
    }

    static func units(for setting: CameraSetting, focus: V4L2FocusDirection, gain: V4L2GainMapping) -> V4L2Units {
        switch setting {
        case .lensPosition: .normalisedFocus(focus)
        case .exposureMs: .hundredMicroseconds
        case .gain: .linearGain(gain)
        case .whiteBalanceKelvin: .kelvin
        }
    }

    /// Queries the controls of `setting`. A control that is absent, disabled,
    /// read-only, not an integer or has a single value makes the setting unsupported
    /// (with the reason); an inactive one does not (its automatic mode owns it until
    /// turned off). Throws only when the device fails a query.
    static func discover(_ setting: CameraSetting, on device: any V4L2Device, units: V4L2Units) throws(V4L2Error) -> Outcome {
        let (valueIDs, autoID) = controls(for: setting)
        var problems: [String] = []
        var found: V4L2ControlInfo?
        for id in valueIDs {
            guard let info = try device.queryControl(id) else { problems.append("no \(id)"); continue }
            if let problem = unusable(info) { problems.append(problem); continue }
            found = info
            break
        }
        guard let info = found else {
            return .unsupported(reason: problems.joined(separator: "; ") + " on \(device.path)")
        }
        switch try discoverAuto(autoID, on: device) {
        case let .failure(reason): return .unsupported(reason: "\(reason) on \(device.path)")
        case let .success(auto): return .supported(V4L2SettingControl(setting: setting, info: info, auto: auto, units: units))
        }
    }

    /// Why a value control cannot be driven, nil when it can.
    static func unusable(_ info: V4L2ControlInfo) -> String? {
        if info.flags.contains(.disabled) { return "\(info.id) is disabled" }
        if info.flags.contains(.readOnly) { return "\(info.id) is read-only" }
        if info.type != .integer { return "\(info.id) is a \(info.type) control, not an integer" }
        if info.maximum <= info.minimum { return "\(info.id) has the single value \(info.minimum)" }
        return nil
    }

    struct Refusal: Error { var reason: String }

    /// The automatic-mode control: nil when absent, disabled or read-only (nothing to
    /// switch). A failure makes the setting unsupported (no manual mode, unknown type).
    private static func discoverAuto(_ id: V4L2ControlID, on device: any V4L2Device) throws(V4L2Error) -> Result<V4L2AutoControl?, Refusal> {
        guard let info = try device.queryControl(id), info.flags.isDisjoint(with: [.disabled, .readOnly]) else {
            return .success(nil)
        }
        switch info.type {
        case .boolean:
            return .success(V4L2AutoControl(id: id, manualValue: 0, automaticValues: [1]))
        case .menu where id == .exposureAuto:
            func offers(_ item: Int32) throws(V4L2Error) -> Bool {
                guard (info.minimum...info.maximum).contains(item) else { return false }
                return try device.hasMenuItem(id, index: UInt32(item))
            }
            let manual = Int32(V4L2_EXPOSURE_MANUAL.rawValue)
            guard try offers(manual) else { return .failure(Refusal(reason: "\(id) offers no manual mode")) }
            // Full auto and aperture priority (exposure time automatic, iris fixed) both
            // hand exposure time to the camera; its default mode goes first.
            var automatic: [Int32] = []
            for mode in [V4L2_EXPOSURE_AUTO, V4L2_EXPOSURE_APERTURE_PRIORITY] {
                let value = Int32(mode.rawValue)
                if try offers(value) { automatic.append(value) }
            }
            if let i = automatic.firstIndex(of: info.defaultValue) { automatic.swapAt(0, i) }
            return .success(V4L2AutoControl(id: id, manualValue: manual, automaticValues: automatic))
        default:
            return .failure(Refusal(reason: "\(id) is a \(info.type) control, expected boolean or the exposure menu"))
        }
    }
}
#endif
