#if os(Linux)
/// Which way a camera's V4L2_CID_FOCUS_ABSOLUTE counts. The V4L2 spec says positive
/// values focus closer, and most UVC webcams agree (e.g. 0 = infinity … 250 = macro);
/// the UVC spec's focus control reads as a distance in millimetres (larger = farther),
/// which a few cameras follow. Wrong direction shows as an inverted focus sweep.
public enum V4L2FocusDirection: Sendable, Hashable {
    case largerIsNearer
    case largerIsFarther
}

/// How a gain code maps to linear gain. V4L2 leaves the unit of V4L2_CID_GAIN and
/// V4L2_CID_ANALOGUE_GAIN undefined (it is sensor-specific), so this is an assumption:
/// the code is linear in gain, the device's minimum code is unity and its maximum code
/// is `maximumGain`.
public struct V4L2GainMapping: Sendable, Hashable {
    public var maximumGain: Double
    public init(maximumGain: Double) { self.maximumGain = maximumGain }
    /// 8× (18 dB) at the maximum code: typical of webcam sensors' analogue gain.
    public static let `default` = V4L2GainMapping(maximumGain: 8)
}

/// How a device's integer codes for one control become a CameraSetting's units.
enum V4L2Units: Sendable, Hashable {
    /// The control's range min…max becomes lensPosition 0…1 (1 = nearest).
    case normalisedFocus(V4L2FocusDirection)
    /// V4L2_CID_EXPOSURE_ABSOLUTE counts 100 µs; exposureMs = code / 10.
    case hundredMicroseconds
    case linearGain(V4L2GainMapping)
    /// V4L2_CID_WHITE_BALANCE_TEMPERATURE is already in kelvin.
    case kelvin

    /// The affine map for a control with this range.
    func mapping(for info: V4L2ControlInfo) -> V4L2UnitMapping {
        let span = Double(info.maximum) - Double(info.minimum)
        switch self {
        case .normalisedFocus(.largerIsNearer):
            return V4L2UnitMapping(base: 0, origin: info.minimum, numerator: 1, denominator: span)
        case .normalisedFocus(.largerIsFarther):
            return V4L2UnitMapping(base: 0, origin: info.maximum, numerator: -1, denominator: span)
        case .hundredMicroseconds:
            return V4L2UnitMapping(base: 0, origin: 0, numerator: 1, denominator: 10)
        case let .linearGain(g):
            return V4L2UnitMapping(base: 1, origin: info.minimum, numerator: g.maximumGain - 1, denominator: span)
        case .kelvin:
            return V4L2UnitMapping(base: 0, origin: 0, numerator: 1, denominator: 1)
        }
    }
}

/// setting = base + (code − origin) × numerator / denominator (numerator may be
/// negative). Kept as a fraction so that e.g. 333 × 100 µs is exactly 33.3 ms.
struct V4L2UnitMapping: Sendable, Hashable {
    var base: Double
    var origin: Int32
    var numerator: Double
    var denominator: Double

    func setting(fromCode code: Int32) -> Double {
        base + (Double(code) - Double(origin)) * numerator / denominator
    }

    /// The device's range in the setting's units.
    func range(of info: V4L2ControlInfo) -> SettingRange {
        let a = setting(fromCode: info.minimum), b = setting(fromCode: info.maximum)
        return SettingRange(minimum: Swift.min(a, b), maximum: Swift.max(a, b),
                            step: abs(numerator) * Double(Swift.max(info.step, 1)) / denominator,
                            defaultValue: setting(fromCode: info.defaultValue))
    }

    /// The code for `value`: clamped into the device's range and rounded to its step
    /// (counted from the minimum, as V4L2 does), never above the maximum.
    func code(for value: Double, in info: V4L2ControlInfo) -> Int32 {
        let lo = Double(info.minimum), hi = Double(info.maximum)
        let step = Double(Swift.max(info.step, 1))
        let exact = Double(origin) + (value - base) * denominator / numerator
        let raw = Swift.min(Swift.max(exact, lo), hi)
        var code = lo + ((raw - lo) / step).rounded() * step
        if code > hi { code -= step }
        return Int32(code)
    }
}
#endif
