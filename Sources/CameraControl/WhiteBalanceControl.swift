import PoseCastKit

/// One step of the white-balance routine: grey world over the region, steering the
/// colour temperature until the region's mean colour has as much blue as red.
///
/// The cast ln(B/R) is close to linear in mireds (10⁶/K) for black-body light, about
/// `slopePerMired` per mired, so the step is a damped Newton step in mireds. Only the
/// blue–amber axis can be corrected with a colour temperature; a green or magenta cast
/// is left as it is.
struct WhiteBalanceControl: Sendable, Hashable {
    /// |ln(B/R)| within which the routine has converged.
    var tolerance: Double
    /// d ln(B/R) / d mired of the setting for a typical sensor (the simulated camera:
    /// ≈ 0.0072; a setting one mired above the light's, i.e. warmer, turns the image that
    /// much bluer).
    var slopePerMired = 0.0072
    /// Fraction of the Newton step taken.
    var damping = 0.85
    /// Regions darker than this mean luma carry no usable colour.
    var minimumBrightness = 24.0

    /// What to do for a frame of grey-world cast `cast` (ln(B/R)) at `kelvin`.
    func step(cast: Double, brightness: Double, kelvin: Double, range: SettingRange, continuous: Bool)
        -> (state: RoutineState, kelvin: Double?) {
        guard brightness >= minimumBrightness, cast.isFinite else { return (.metering, nil) }
        let inBand = abs(cast) <= tolerance
        if inBand && (!continuous || abs(cast) <= tolerance / 2) { return (.converged, nil) }
        // Too blue (cast > 0): the camera assumes warmer light than there is; raise the kelvin.
        let mired = 1e6 / kelvin - damping * cast / slopePerMired
        let next = range.clamp(1e6 / max(mired, 1e6 / range.maximum))
        if abs(next - kelvin) < 1 { return (inBand ? .converged : .diverged, nil) }
        return (inBand ? .converged : .metering, next)
    }
}
