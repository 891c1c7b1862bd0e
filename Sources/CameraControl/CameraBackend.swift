/// A camera parameter a metering routine can drive.
public enum CameraSetting: String, Sendable, Hashable, CaseIterable, Codable {
    /// Focus, normalised: 0 = infinity, 1 = the nearest focus the lens reaches.
    case lensPosition
    /// Exposure time in milliseconds.
    case exposureMs
    /// Analogue gain, linear (1 = unity).
    case gain
    /// White-balance colour temperature in kelvin.
    case whiteBalanceKelvin
}

/// The range a backend accepts for one setting (in the setting's units above).
public struct SettingRange: Sendable, Hashable, Codable {
    public var minimum: Double
    public var maximum: Double
    /// Smallest change the device honours (0: continuous).
    public var step: Double
    public var defaultValue: Double

    public init(minimum: Double, maximum: Double, step: Double = 0, defaultValue: Double) {
        self.minimum = minimum; self.maximum = maximum; self.step = step; self.defaultValue = defaultValue
    }

    /// `value` clamped into the range and rounded to the step.
    public func clamp(_ value: Double) -> Double {
        var v = Swift.min(Swift.max(value, minimum), maximum)
        if step > 0 { v = minimum + ((v - minimum) / step).rounded() * step }
        return Swift.min(Swift.max(v, minimum), maximum)
    }
}

/// Why the camera could not be driven.
public enum CameraControlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The camera has no such control (or it cannot be set manually).
    case unsupported(CameraSetting, reason: String)
    /// The device refused the value or the call failed (errno text included).
    case deviceError(CameraSetting, reason: String)
    case invalidValue(CameraSetting, Double)

    public var description: String {
        switch self {
        case let .unsupported(s, reason): "\(s.rawValue) is not supported by this camera: \(reason)"
        case let .deviceError(s, reason): "setting \(s.rawValue) failed: \(reason)"
        case let .invalidValue(s, v): "\(v) is not a valid value for \(s.rawValue)"
        }
    }
}

/// One camera as the metering routines see it: what it can set, and setting it.
/// Implementations: the V4L2 backend (controls by CID) and the simulated camera.
/// Calls come from one streaming thread at a time; implementations must be thread-safe
/// for reads from others (status).
public protocol CameraBackend: AnyObject, Sendable {
    /// For messages and status ("v4l2 /dev/video0", "simulated").
    var name: String { get }
    /// The settings this camera can be driven on and their ranges; a setting that is
    /// absent is unsupported.
    var capabilities: [CameraSetting: SettingRange] { get }
    /// The current value of a setting, nil when unsupported or unknown.
    func value(of setting: CameraSetting) -> Double?
    /// Sets a manual value (clamped to the range). A backend whose camera has its own
    /// automatic mode for the setting turns that off first.
    func set(_ setting: CameraSetting, to value: Double) throws(CameraControlError)
}
