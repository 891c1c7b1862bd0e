import PoseCastKit

/// The part of the capture an output frame shows: a rectangle in capture pixels. Real
/// numbers, not whole pixels: the resampler interpolates, so a crop may move by a
/// fraction of a pixel and smooth framing never jumps by a rounding step.
///
/// Coordinates follow the pose's convention: (0, 0) is the top-left corner of the top-left
/// pixel, a pixel's centre is at (i + 0.5, j + 0.5), and a normalised point is a pixel
/// position over the image's size.
public struct CropWindow: Sendable, Hashable, CustomStringConvertible {
    public var x: Double, y: Double, width: Double, height: Double
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }

    /// The whole capture.
    public static func full(width: Int, height: Int) -> CropWindow {
        CropWindow(x: 0, y: 0, width: Double(width), height: Double(height))
    }

    /// The largest crop of `aspect` (width over height) inside a `width × height` picture,
    /// centred: framing's widest view, and a picture scaled to cover a frame.
    public static func centred(aspect: Double, inWidth width: Int, height: Int) -> CropWindow {
        let w = Double(width), h = Double(height)
        let (cw, ch) = w / h >= aspect ? (h * aspect, h) : (w, w / aspect)
        return CropWindow(x: (w - cw) / 2, y: (h - ch) / 2, width: cw, height: ch)
    }

    public var centerX: Double { x + width / 2 }
    public var centerY: Double { y + height / 2 }

    /// The intrinsics (normalised) of an output frame that shows this crop of a capture
    /// whose own normalised intrinsics are `capture`. A pinhole camera cropped and scaled
    /// is a pinhole camera: the focal lengths grow by the zoom and the principal point
    /// moves with the crop. Exact for any crop, so the pose of a framed or zoomed frame
    /// projects the world where its pixels show it.
    public func intrinsics(of capture: CameraIntrinsics, captureWidth: Int, captureHeight: Int) -> CameraIntrinsics {
        let w = Double(captureWidth), h = Double(captureHeight)
        return CameraIntrinsics(fx: Float(Double(capture.fx) * w / width), fy: Float(Double(capture.fy) * h / height),
                                cx: Float((Double(capture.cx) * w - x) / width), cy: Float((Double(capture.cy) * h - y) / height))
    }

    /// A point normalised in the output frame, normalised in the capture.
    public func capturePoint(_ p: NormalizedPoint, captureWidth: Int, captureHeight: Int) -> NormalizedPoint {
        NormalizedPoint(x: Float((x + Double(p.x) * width) / Double(captureWidth)),
                        y: Float((y + Double(p.y) * height) / Double(captureHeight)))
    }

    /// A point normalised in the capture, normalised in the output frame (outside [0, 1]
    /// when the crop does not show it).
    public func outputPoint(_ p: NormalizedPoint, captureWidth: Int, captureHeight: Int) -> NormalizedPoint {
        NormalizedPoint(x: Float((Double(p.x) * Double(captureWidth) - x) / width),
                        y: Float((Double(p.y) * Double(captureHeight) - y) / height))
    }

    /// How many times the crop magnifies against `reference` (the widest crop).
    public func zoom(against reference: CropWindow) -> Double { reference.width / width }

    public var description: String {
        "\(Int(x.rounded())),\(Int(y.rounded())) \(Int(width.rounded()))×\(Int(height.rounded()))"
    }
}
