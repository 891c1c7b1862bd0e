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

    /// Depth at an image point. Within one surface, inverse depth is interpolated
    /// bilinearly between the four nearest cells (exact on planes, where inverse depth is
    /// affine in the image); where those cells disagree by more than 5% (an object's
    /// edge) the nearest cell decides, so an edge reports the object or its background,
    /// never a blend. Nil outside the image and where the pixel shows sky.
    public func depth(at point: NormalizedPoint) -> Float? {
        guard point.isInImage else { return nil }
        let px = min(Int(point.x * Float(imageWidth)), imageWidth - 1)
        let py = min(Int(point.y * Float(imageHeight)), imageHeight - 1)
        let nearest = depth(x: min(px / scale, width - 1), y: min(py / scale, height - 1))
        guard nearest.isFinite else { return nil }
        // Cell (i, j) samples the pixel centred at (i·scale + scale/2 + 0.5, …).
        let half = Float(scale / 2) + 0.5
        let u = max(0, min((point.x * Float(imageWidth) - half) / Float(scale), Float(width - 1)))
        let v = max(0, min((point.y * Float(imageHeight) - half) / Float(scale), Float(height - 1)))
        let i0 = Int(u), j0 = Int(v), i1 = min(i0 + 1, width - 1), j1 = min(j0 + 1, height - 1)
        let corners = [depth(x: i0, y: j0), depth(x: i1, y: j0), depth(x: i0, y: j1), depth(x: i1, y: j1)]
        guard corners.allSatisfy({ $0.isFinite && abs($0 - nearest) <= 0.05 * nearest }) else { return nearest }
        let fu = u - Float(i0), fv = v - Float(j0)
        let inverse = (1 / corners[0]) * (1 - fu) * (1 - fv) + (1 / corners[1]) * fu * (1 - fv)
            + (1 / corners[2]) * (1 - fu) * fv + (1 / corners[3]) * fu * fv
        return 1 / inverse
    }
}
