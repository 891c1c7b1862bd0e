import PoseCastKit

/// Where a routine measures: a metering mode around a point of the image.
///
/// - `spot`: a square `spotFraction` of the frame width on a side, centred on the point;
/// - `weighted`: a square `weightedFraction` of the frame width on a side, centred on the
///   point, each pixel weighted by a Gaussian of σ = side/4 about the centre;
/// - `uniform`: the whole frame, every pixel alike (read on a subsampled grid), whatever
///   the point.
///
/// A square that would stick out of the image is slid back inside it (its size kept, so
/// a spot at an edge measures as many pixels as one in the middle).
public struct MeteringArea: Sendable, Hashable {
    public var mode: MeteringMode
    public var point: NormalizedPoint

    public static let spotFraction = 0.08
    public static let weightedFraction = 0.25
    public static let center = NormalizedPoint(x: 0.5, y: 0.5)

    public init(mode: MeteringMode, point: NormalizedPoint = MeteringArea.center) {
        self.mode = mode; self.point = point
    }

    /// The pixels measured in a `width`×`height` frame.
    public func pixelRect(width: Int, height: Int) -> PixelRect {
        let fraction: Double
        switch mode {
        case .uniform: return PixelRect(x: 0, y: 0, width: width, height: height)
        case .spot: fraction = Self.spotFraction
        case .weighted: fraction = Self.weightedFraction
        }
        let side = max(4, Int((fraction * Double(width)).rounded()))
        func place(_ centre: Float, _ extent: Int) -> (Int, Int) {
            let size = min(side, extent)
            let start = Int((Double(centre) * Double(extent) - Double(size) / 2).rounded())
            return (min(max(start, 0), extent - size), size)
        }
        let (x, w) = place(point.x.isFinite ? point.x : 0.5, width)
        let (y, h) = place(point.y.isFinite ? point.y : 0.5, height)
        return PixelRect(x: x, y: y, width: w, height: h)
    }

    /// The measured rectangle in normalised image coordinates (for status).
    public func normalizedRect(width: Int, height: Int) -> NormalizedRect {
        let r = pixelRect(width: width, height: height)
        return NormalizedRect(x: Float(r.x) / Float(width), y: Float(r.y) / Float(height),
                              width: Float(r.width) / Float(width), height: Float(r.height) / Float(height))
    }
}

/// A rectangle of whole pixels (origin top-left).
public struct PixelRect: Sendable, Hashable {
    public var x: Int, y: Int, width: Int, height: Int
    public init(x: Int, y: Int, width: Int, height: Int) { self.x = x; self.y = y; self.width = width; self.height = height }
    public var maxX: Int { x + width }
    public var maxY: Int { y + height }
    public var area: Int { width * height }
}
