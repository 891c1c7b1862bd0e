import PoseCastKit

/// A pinhole camera's focal lengths and principal point in pixels of one picture size,
/// the form calibration works in. Pixel coordinates have the picture's top-left corner
/// at (0, 0), x right and y down, so a pixel's centre is at +0.5, as `CameraModel.pixel`
/// has them (OpenCV puts centres at whole numbers: its cx is this cx − 0.5).
/// Normalised camera coordinates are OpenCV's: x = (u − cx) / fx, y = (v − cy) / fy,
/// y down; the project's camera looks down −Z with y up, so its point (X, Y, Z) is
/// (X / −Z, −Y / −Z) here.
public struct PixelIntrinsics: Sendable, Hashable, Codable {
    public var fx: Double, fy: Double, cx: Double, cy: Double

    public init(fx: Double, fy: Double, cx: Double, cy: Double) {
        self.fx = fx; self.fy = fy; self.cx = cx; self.cy = cy
    }

    /// The pixels of normalised intrinsics at `width` × `height`.
    public init(_ k: CameraIntrinsics, width: Int, height: Int) {
        self.init(fx: Double(k.fx) * Double(width), fy: Double(k.fy) * Double(height),
                  cx: Double(k.cx) * Double(width), cy: Double(k.cy) * Double(height))
    }

    /// The intrinsics normalised to a picture of `width` × `height` (the project's form).
    public func normalized(width: Int, height: Int) -> CameraIntrinsics {
        let (w, h) = (Double(width), Double(height))
        return CameraIntrinsics(fx: Float(fx / w), fy: Float(fy / h), cx: Float(cx / w), cy: Float(cy / h))
    }

    /// The same lens for a picture `factor` times as wide and as high (the same sensor
    /// area read out at another size).
    public func scaled(by factor: Double) -> PixelIntrinsics {
        PixelIntrinsics(fx: fx * factor, fy: fy * factor, cx: cx * factor, cy: cy * factor)
    }

    /// Pixel → normalised camera coordinates.
    public func normalize(_ pixel: SIMD2<Double>) -> SIMD2<Double> { SIMD2((pixel.x - cx) / fx, (pixel.y - cy) / fy) }
    /// Normalised camera coordinates → pixel.
    public func pixel(_ normalized: SIMD2<Double>) -> SIMD2<Double> { SIMD2(cx + fx * normalized.x, cy + fy * normalized.y) }
}
