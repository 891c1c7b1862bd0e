import PoseCastKit

/// Depth of every pixel (or every `scale`-th pixel) of one rendered frame: z-depth along
/// the optical axis in metres, `+infinity` where the pixel shows sky. A value type the
/// publisher can keep beside the frame it belongs to.
public struct DepthMap: Sendable, Hashable {
    /// Size of the map (cells).
    public let width: Int
    public let height: Int
    /// Image pixels per cell, each way.
    public let scale: Int
    /// Size of the image the map was taken from.
    public let imageWidth: Int
    public let imageHeight: Int
    /// Row-major depths; cell (i, j) holds the depth of image pixel
    /// (min(i·scale + scale/2, imageWidth − 1), min(j·scale + scale/2, imageHeight − 1)).
    public let values: [Float]

    public init(width: Int, height: Int, scale: Int, imageWidth: Int, imageHeight: Int, values: [Float]) {
        precondition(values.count == width * height, "a depth map needs width × height values")
        self.width = width; self.height = height; self.scale = scale
        self.imageWidth = imageWidth; self.imageHeight = imageHeight; self.values = values
    }

    /// Depth of cell (x, y).
    public func depth(x: Int, y: Int) -> Float { values[y * width + x] }

    /// Depth at an image point, from the cell holding it (nearest, never interpolated, so
    /// a point on an object's edge reports that object or its background, not a blend).
    /// Nil outside the image and where the pixel shows sky.
    public func depth(at point: NormalizedPoint) -> Float? {
        guard point.isInImage else { return nil }
        let px = min(Int(point.x * Float(imageWidth)), imageWidth - 1)
        let py = min(Int(point.y * Float(imageHeight)), imageHeight - 1)
        let d = depth(x: min(px / scale, width - 1), y: min(py / scale, height - 1))
        return d.isFinite ? d : nil
    }
}
