import PoseCastKit

/// One step of the exposure routine: steer the region's mean luma to a target by scaling
/// the total exposure (exposure time × gain) multiplicatively, exposure time first and
/// gain only once the time is at its maximum (and gain back down first when darkening).
///
/// The step is proportional to (target − 16)/(luma − 16): exact in one frame on a linear
/// sensor, and still converging (geometrically) through a gamma curve. A clipped region
/// (luma at the 235 ceiling) halves at least.
struct ExposureControl: Sendable, Hashable {
    /// Target mean luma (16–235 scale).
    var target: Double
    /// ± fraction of the target within which the routine has converged.
    var tolerance: Double
    /// ± fraction below which a continuous routine leaves the exposure alone.
    var deadband: Double

    struct Settings: Sendable, Hashable {
        var exposureMs: Double?
        var gain: Double?
    }

    /// What to do for a frame of mean luma `brightness` taken at `current`: the routine's
    /// state and the new settings (nil: leave as is).
    func step(brightness: Double, current: Settings, exposureRange: SettingRange?, gainRange: SettingRange?,
              continuous: Bool) -> (state: RoutineState, next: Settings?) {
        let error = (brightness - target) / target
        let inBand = abs(error) <= tolerance
        if inBand && (!continuous || abs(error) <= deadband) { return (.converged, nil) }
        var factor = (target - 16) / max(brightness - 16, 1)
        if brightness >= 234 { factor = min(factor, 0.5) }
        factor = min(max(factor, 1.0 / 8), 8)

        var ms = current.exposureMs, gain = current.gain
        let total = (ms ?? 1) * (gain ?? 1)
        let desired = total * factor
        if let range = exposureRange, ms != nil {
            let fixedGain = gainRange == nil ? (gain ?? 1) : (gainRange?.minimum ?? 1)
            ms = range.clamp(desired / fixedGain)
            if let gRange = gainRange { gain = gRange.clamp(desired / ms!) }
        } else if let gRange = gainRange, gain != nil {
            gain = gRange.clamp(desired / (ms ?? 1))
        }
        let next = Settings(exposureMs: ms, gain: gain)
        let achieved = (ms ?? 1) * (gain ?? 1)
        if abs(achieved - total) <= 1e-4 * total {
            // Nothing left to turn: too dark at the maximum or too bright at the minimum.
            return (inBand ? .converged : .diverged, nil)
        }
        return (inBand ? .converged : .metering, next)
    }
}
