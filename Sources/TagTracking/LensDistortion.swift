/// The lens's departure from a pinhole, Brown–Conrady: radial (k1, k2, k3) and
/// tangential (p1, p2) terms with OpenCV's order and meaning, on normalised camera
/// coordinates (`PixelIntrinsics`): a ray through (x, y) lands at
///
///     r² = x² + y²,  radial = 1 + k1 r² + k2 r⁴ + k3 r⁶
///     x' = x · radial + 2 p1 x y + p2 (r² + 2 x²)
///     y' = y · radial + p1 (r² + 2 y²) + 2 p2 x y
///
/// The coefficients do not change with the picture's size, only the pixel intrinsics do.
public struct LensDistortion: Sendable, Hashable, Codable {
    public var k1: Double, k2: Double, p1: Double, p2: Double, k3: Double

    public init(k1: Double = 0, k2: Double = 0, p1: Double = 0, p2: Double = 0, k3: Double = 0) {
        self.k1 = k1; self.k2 = k2; self.p1 = p1; self.p2 = p2; self.k3 = k3
    }

    /// A pinhole: no distortion.
    public static let none = LensDistortion()

    /// From OpenCV's list `[k1, k2, p1, p2, k3]`; a list of 4 leaves k3 at 0. Nil for
    /// any other length or a number that is not finite.
    public init?(coefficients c: [Double]) {
        guard c.count == 4 || c.count == 5, c.allSatisfy(\.isFinite) else { return nil }
        self.init(k1: c[0], k2: c[1], p1: c[2], p2: c[3], k3: c.count == 5 ? c[4] : 0)
    }

    /// `[k1, k2, p1, p2, k3]`, OpenCV's order.
    public var coefficients: [Double] { [k1, k2, p1, p2, k3] }

    public var isNone: Bool { self == .none }

    /// Where the lens puts the ray through the normalised point `p`.
    public func distort(normalized p: SIMD2<Double>) -> SIMD2<Double> {
        let (x, y) = (p.x, p.y)
        let r2 = x * x + y * y
        let radial = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
        return SIMD2(x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x),
                     y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y)
    }

    /// The ray (normalised point) the lens put at the normalised point `q`: the inverse of
    /// `distort`, by Newton's method from `q` itself. Close to the centre the map is
    /// nearly the identity, and over a picture it stays one-to-one, so a few steps reach
    /// double precision; a point beyond where the lens folds back (strong barrel
    /// distortion far outside any picture) gets the nearest the iteration came.
    public func undistort(normalized q: SIMD2<Double>) -> SIMD2<Double> {
        guard !isNone else { return q }
        var p = q
        for _ in 0..<20 {
            let f = distort(normalized: p) - q
            let (a, b, c, d) = jacobian(normalized: p)
            let det = a * d - b * c
            guard abs(det) > 1e-12 else { break }
            let step = SIMD2((d * f.x - b * f.y) / det, (a * f.y - c * f.x) / det)
            p -= step
            if (step * step).sum() < 1e-26 { break }
        }
        return p
    }

    /// The derivatives of `distort` at `p`: ∂x'/∂x, ∂x'/∂y, ∂y'/∂x, ∂y'/∂y.
    func jacobian(normalized p: SIMD2<Double>) -> (Double, Double, Double, Double) {
        let (x, y) = (p.x, p.y)
        let r2 = x * x + y * y
        let radial = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
        let slope = k1 + r2 * (2 * k2 + 3 * k3 * r2)   // d radial / d r²
        let cross = 2 * x * y * slope + 2 * p1 * x + 2 * p2 * y
        return (radial + 2 * x * x * slope + 2 * p1 * y + 6 * p2 * x, cross,
                cross, radial + 2 * y * y * slope + 6 * p1 * y + 2 * p2 * x)
    }

    /// Where the lens puts the pixel a pinhole with `intrinsics` would put at `pixel`.
    public func distort(pixel: SIMD2<Double>, intrinsics k: PixelIntrinsics) -> SIMD2<Double> {
        k.pixel(distort(normalized: k.normalize(pixel)))
    }

    /// Where a pinhole with `intrinsics` would put what the lens shows at `pixel`: a
    /// measured point (a tag's corner) made ready for pinhole geometry.
    public func undistort(pixel: SIMD2<Double>, intrinsics k: PixelIntrinsics) -> SIMD2<Double> {
        k.pixel(undistort(normalized: k.normalize(pixel)))
    }

    /// The sightings with their corners undistorted, for the pinhole pose solver. The
    /// library's per-tag poses stay as they were (they only start the solver's search).
    public func undistorted(_ sightings: [TagSighting], intrinsics k: PixelIntrinsics) -> [TagSighting] {
        guard !isNone else { return sightings }
        return sightings.map { s in
            var s = s
            s.corners = s.corners.map { undistort(pixel: $0, intrinsics: k) }
            return s
        }
    }
}
