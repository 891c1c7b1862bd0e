#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The simulated camera's settings for one frame: lens, exposure and white balance.
///
/// The rendering is linear: with no tone curve, code values scale directly with
/// `exposure × gain` until they clip, so "twice the exposure" really is twice as bright.
public struct LensState: Sendable, Hashable {
    /// The colour temperature the scene is lit at (kelvin). A white-balance setting equal
    /// to it leaves colours as they are.
    public static let sceneKelvin: Float = 5500

    /// Distance (metres, > 0) at which the lens is focused.
    public var focusDistance: Float
    /// Blur strength: the circle-of-confusion radius, in pixels of a 640-pixel-wide image,
    /// per dioptre of defocus (thin lens: radius ∝ |1/focus − 1/depth|). It scales with
    /// the image width, so a frame looks the same at any resolution. 0 is a pinhole.
    public var aperture: Float
    /// Linear exposure (1 nominal): scales the signal only.
    public var exposure: Float
    /// Analogue gain (1 nominal): scales the signal and the sensor noise alike.
    public var gain: Float
    /// The white balance the camera is set to (kelvin). Below `sceneKelvin` the camera
    /// expects warmer light than there is and the image turns blue; above, it turns amber.
    /// Far below (around 2500 K and less) red surfaces take on a purple cast, the hue
    /// annotation markers use; tests that look for markers keep white balance near 5500 K.
    public var whiteBalanceKelvin: Float
    /// Sensor noise standard deviation in 8-bit luma levels at gain 1 (chroma gets half).
    public var noise: Float

    /// The defaults: focused at 3 m (the orbit's target), aperture 10 px/dioptre — an
    /// object at 1.5 m is blurred by a 5 px radius (640 wide) when focus is at 6 m —
    /// nominal exposure, daylight white balance, noise σ = 1.5 levels.
    public init(focusDistance: Float = 3, aperture: Float = 10, exposure: Float = 1, gain: Float = 1,
                whiteBalanceKelvin: Float = LensState.sceneKelvin, noise: Float = 1.5) {
        self.focusDistance = focusDistance; self.aperture = aperture; self.exposure = exposure
        self.gain = gain; self.whiteBalanceKelvin = whiteBalanceKelvin; self.noise = noise
    }

    /// Circle-of-confusion radius (pixels) of a point at `depth` metres along the optical
    /// axis, in an image `imageWidth` pixels wide. Infinite depth (sky) counts as 0 dioptres.
    public func circleOfConfusion(depth: Float, imageWidth: Int) -> Float {
        let inverse: Float = depth.isFinite && depth > 0 ? 1 / depth : 0
        return aperture * Float(imageWidth) / 640 * abs(1 / focusDistance - inverse)
    }

    /// Red and blue gains (green = 1) the camera applies at `whiteBalanceKelvin`.
    public var whiteBalanceGains: (red: Float, blue: Float) { Self.whiteBalanceGains(kelvin: whiteBalanceKelvin) }

    /// Red and blue gains (green = 1) of a camera white-balanced for `kelvin` looking at a
    /// scene lit at `sceneKelvin`: the ratio of the scene light's colour to the colour
    /// the camera assumes. Light colours come from Planck's law sampled at one wavelength
    /// per channel (610, 550, 465 nm), a fair stand-in for sensor curves: 3200 K gives
    /// about (0.72, 1.86), 8000 K about (1.15, 0.77). `kelvin` is clamped to 1000–40000.
    public static func whiteBalanceGains(kelvin: Float) -> (red: Float, blue: Float) {
        let scene = illuminantRatios(kelvin: Double(sceneKelvin))
        let assumed = illuminantRatios(kelvin: Double(min(max(kelvin, 1000), 40000)))
        return (Float(scene.red / assumed.red), Float(scene.blue / assumed.blue))
    }

    /// Black-body radiance at the red and blue sample wavelengths relative to green.
    private static func illuminantRatios(kelvin: Double) -> (red: Double, blue: Double) {
        func planck(_ nanometres: Double) -> Double {
            let lambda = nanometres * 1e-9
            let c2 = 1.438_776_877e-2  // second radiation constant h·c/k, m·K
            return 1 / (pow(lambda, 5) * (exp(c2 / (lambda * kelvin)) - 1))
        }
        let g = planck(550)
        return (planck(610) / g, planck(465) / g)
    }

    /// Checks every field is usable; names the first that is not.
    public func validate() throws(SyntheticCameraError) {
        func check(_ ok: Bool, _ field: String, _ value: Float, _ rule: String) throws(SyntheticCameraError) {
            guard ok else { throw .invalidLens(field: field, value: value, rule: rule) }
        }
        try check(focusDistance.isFinite && focusDistance > 0, "focusDistance", focusDistance, "finite and > 0")
        try check(aperture.isFinite && aperture >= 0, "aperture", aperture, "finite and ≥ 0")
        try check(exposure.isFinite && exposure >= 0, "exposure", exposure, "finite and ≥ 0")
        try check(gain.isFinite && gain >= 0, "gain", gain, "finite and ≥ 0")
        try check(whiteBalanceKelvin.isFinite && whiteBalanceKelvin > 0, "whiteBalanceKelvin", whiteBalanceKelvin, "finite and > 0")
        try check(noise.isFinite && noise >= 0, "noise", noise, "finite and ≥ 0")
    }
}
