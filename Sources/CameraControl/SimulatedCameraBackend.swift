import Synchronization
import SyntheticCamera

/// The synthetic camera as a `CameraBackend`: settings go straight into the shared
/// `LensControl` the renderer reads once per frame, so a change shows from the next
/// rendered frame on.
///
/// Mappings (`LensState` units on the right):
/// - `lensPosition` p ∈ 0…1 is linear in dioptres, D = `farDioptres` + p·(`nearDioptres` −
///   `farDioptres`), focusDistance = 1/D: p = 0 focuses at 50 m (standing in for infinity),
///   p = 1 at the nearest focus, 0.25 m. Depth of field is constant in dioptres, so a step
///   of p blurs the same anywhere in the range.
/// - `exposureMs` 0.1–33 ms: exposure = ms / 16.67 (one frame at 60 Hz is nominal).
/// - `gain` 1–8: gain.
/// - `whiteBalanceKelvin` 2800–10000 K: whiteBalanceKelvin (kept above the ~2500 K where
///   the renderer turns red surfaces towards the annotation-marker hues).
public final class SimulatedCameraBackend: CameraBackend {
    public static let farDioptres = 0.02
    public static let nearDioptres = 4.0
    public static let nominalExposureMs = 16.67

    public let lens: LensControl
    /// The last value set of each setting: reported back as it was sent while the lens
    /// still holds it (`LensState` keeps floats, which would not round-trip exactly).
    private let sent = Mutex<[CameraSetting: Double]>([:])
    public var name: String { "simulated" }
    public let capabilities: [CameraSetting: SettingRange] = [
        .lensPosition: SettingRange(minimum: 0, maximum: 1, defaultValue: SimulatedCameraBackend.lensPosition(focusDistance: 3)),
        .exposureMs: SettingRange(minimum: 0.1, maximum: 33, defaultValue: SimulatedCameraBackend.nominalExposureMs),
        .gain: SettingRange(minimum: 1, maximum: 8, defaultValue: 1),
        .whiteBalanceKelvin: SettingRange(minimum: 2800, maximum: 10_000, defaultValue: Double(LensState.sceneKelvin)),
    ]

    public init(lens: LensControl) { self.lens = lens }

    /// Focus distance (metres) of a lens position.
    public static func focusDistance(lensPosition p: Double) -> Double {
        1 / (farDioptres + p * (nearDioptres - farDioptres))
    }

    /// Lens position focusing at `focusDistance` metres (outside the range: clamped).
    public static func lensPosition(focusDistance d: Double) -> Double {
        guard d > 0, d.isFinite else { return 0 }
        return min(max((1 / d - farDioptres) / (nearDioptres - farDioptres), 0), 1)
    }

    /// The settings a frame rendered with `lens` was captured with (for
    /// `CameraMeter.process(frame:frameId:timeNanos:capturedWith:)`).
    public func settings(of lens: LensState) -> [CameraSetting: Double] {
        var result: [CameraSetting: Double] = [:]
        for setting in CameraSetting.allCases {
            if let v = sent.withLock({ $0[setting] }), Self.field(setting, of: v) == Self.field(setting, of: lens) {
                result[setting] = v
                continue
            }
            result[setting] = switch setting {
            case .lensPosition: Self.lensPosition(focusDistance: Double(lens.focusDistance))
            case .exposureMs: Double(lens.exposure) * Self.nominalExposureMs
            case .gain: Double(lens.gain)
            case .whiteBalanceKelvin: Double(lens.whiteBalanceKelvin)
            }
        }
        return result
    }

    public func value(of setting: CameraSetting) -> Double? { settings(of: lens.current)[setting] }

    /// The `LensState` field a setting drives, as the lens holds it.
    private static func field(_ setting: CameraSetting, of l: LensState) -> Float {
        switch setting {
        case .lensPosition: l.focusDistance
        case .exposureMs: l.exposure
        case .gain: l.gain
        case .whiteBalanceKelvin: l.whiteBalanceKelvin
        }
    }

    /// The `LensState` field value of a setting's value.
    private static func field(_ setting: CameraSetting, of v: Double) -> Float {
        switch setting {
        case .lensPosition: Float(focusDistance(lensPosition: v))
        case .exposureMs: Float(v / nominalExposureMs)
        case .gain, .whiteBalanceKelvin: Float(v)
        }
    }

    public func set(_ setting: CameraSetting, to value: Double) throws(CameraControlError) {
        guard value.isFinite, let range = capabilities[setting] else { throw .invalidValue(setting, value) }
        let v = range.clamp(value)
        do {
            let f = Self.field(setting, of: v)
            try lens.update { l in
                switch setting {
                case .lensPosition: l.focusDistance = f
                case .exposureMs: l.exposure = f
                case .gain: l.gain = f
                case .whiteBalanceKelvin: l.whiteBalanceKelvin = f
                }
            }
            sent.withLock { $0[setting] = v }
        } catch {
            throw .deviceError(setting, reason: "\(error)")
        }
    }
}
