import PoseCastKit
import Imaging
import PoseMedia

/// A blob of pixels found by colour in a decoded picture.
public struct ColorBlob: Sendable, Hashable {
    /// Centroid in pixel coordinates (pixel centres at +0.5).
    public var x: Float, y: Float
    /// How many pixels matched.
    public var pixels: Int

    /// Centroid of the pixels in the square of half-side `radius` around `centre` (pixel
    /// coordinates) whose RGB levels (BT.601, 0–255) satisfy `matches`; nil when fewer than
    /// `minimum` match or the square lies outside the picture.
    public static func find(in picture: DecodedPicture, around centre: (x: Float, y: Float), radius: Int, minimum: Int,
                            matches: (_ red: Float, _ green: Float, _ blue: Float) -> Bool) -> ColorBlob? {
        guard centre.x.isFinite, centre.y.isFinite, abs(centre.x) < 1e6, abs(centre.y) < 1e6 else { return nil }
        let x0 = max(0, Int(centre.x) - radius), x1 = min(picture.width - 1, Int(centre.x) + radius)
        let y0 = max(0, Int(centre.y) - radius), y1 = min(picture.height - 1, Int(centre.y) + radius)
        guard x0 < x1, y0 < y1 else { return nil }
        var sx: Float = 0, sy: Float = 0, n = 0
        for y in y0...y1 {
            for x in x0...x1 {
                let p = picture.yuv(x: x, y: y)
                let c = BT601.rgb(y: Float(p.y), u: Float(p.u), v: Float(p.v))
                if matches(c.red, c.green, c.blue) { sx += Float(x) + 0.5; sy += Float(y) + 0.5; n += 1 }
            }
        }
        return n >= max(minimum, 1) ? ColorBlob(x: sx / Float(n), y: sy / Float(n), pixels: n) : nil
    }
}

/// Where the coloured part of an annotation's mark lies around its anchor in a frame of a
/// given height, as the publisher draws it (`AnnotationSprite`, sized by `AnnotationStyle`):
/// a pin's disc and a label's dot are centred on the anchor; an arrow's coloured polygon
/// ends at the anchor and comes from the upper left, so its centroid lies up and left of it.
public struct MarkerShape: Sendable {
    public let kind: AnnotationKind
    /// Offset of the coloured area's centroid from the anchor, pixels (y down).
    public let centroidOffset: (x: Float, y: Float)
    /// Area of the coloured part, square pixels.
    public let colorArea: Float
    /// How far the whole mark (outline included) reaches from the anchor: a mark whose
    /// anchor is this far inside every edge is drawn whole.
    public let extent: Float
    /// Half-side of the square searched around the expected centroid: the coloured area
    /// plus room for a few pixels of misplacement.
    public let searchRadius: Int
    /// Fewer matching pixels than this is "no mark" (a fifth of the area: chroma is
    /// subsampled and the codec smears the rim).
    public let minimumPixels: Int
    /// Frame height / 480, the scale the publisher draws marks at.
    public let scale: Float

    public init(kind: AnnotationKind, frameHeight: Int) {
        let style = AnnotationStyle(frameHeight: frameHeight)
        self.kind = kind
        scale = Float(style.scale)
        let margin = 8 * Float(style.scale)
        switch kind {
        case .pin, .label:
            let r = Float(kind == .pin ? style.pinRadius : style.dotRadius)
            centroidOffset = (0, 0)
            colorArea = .pi * r * r
            extent = kind == .pin ? Float(style.pinOuterRadius) : r + Float(style.outlineWidth)
            searchRadius = Int((r + margin).rounded(.up))
        case .arrow:
            // The arrow polygon `AnnotationSprite` draws (tip at the anchor): its area and
            // centroid by the shoelace formula.
            let points = style.arrowOutline().map { (x: Float($0.x), y: Float($0.y)) }
            var twiceArea: Float = 0, cx: Float = 0, cy: Float = 0
            for (i, p) in points.enumerated() {
                let q = points[(i + 1) % points.count]
                let cross = p.x * q.y - q.x * p.y
                twiceArea += cross
                cx += (p.x + q.x) * cross
                cy += (p.y + q.y) * cross
            }
            let area = abs(twiceArea) / 2
            let centroid = (x: cx / (3 * twiceArea), y: cy / (3 * twiceArea))
            centroidOffset = centroid
            colorArea = area
            // Farthest coloured point from the centroid, and from the anchor along x or y.
            let reach = points.map { p -> Float in
                let dx = p.x - centroid.x, dy = p.y - centroid.y
                return (dx * dx + dy * dy).squareRoot()
            }.max() ?? 0
            extent = (points.map { max(abs($0.x), abs($0.y)) }.max() ?? 0) + Float(style.outlineWidth)
            searchRadius = Int((reach + margin).rounded(.up))
        }
        minimumPixels = max(4, Int((colorArea / 5).rounded()))
    }

    /// True when a mark anchored at pixel `anchor` is drawn whole inside a `width` × `height` frame.
    public func isWhollyInside(_ anchor: (x: Float, y: Float), width: Int, height: Int) -> Bool {
        let e = extent + 1
        return anchor.x >= e && anchor.y >= e && anchor.x <= Float(width) - e && anchor.y <= Float(height) - e
    }
}

/// One annotation mark looked for in a picture.
public struct MarkerSighting: Sendable {
    /// Where the mark's coloured area was found (its centroid), pixels.
    public var found: ColorBlob
    /// Where it should be: the anchor's projection plus the shape's centroid offset.
    public var expected: (x: Float, y: Float)
    /// Distance between the two, pixels.
    public var errorPixels: Float
}

/// Finds the publisher's annotation marks in decoded pictures by colour: the pixels near
/// where the anchor projects whose colour is within `tolerance` of the annotation's, per
/// channel. Only a colour the scene never shows makes this unambiguous: magenta
/// (`#FF00FF`, the default), which `SyntheticScene` reserves for marks (`isMarkerHue`).
public struct MarkerDetector: Sendable, Hashable {
    /// Target colour, RGB levels 0–255.
    public var red: Float, green: Float, blue: Float
    /// Largest difference per channel still counted as the mark's colour.
    public var tolerance: Float = 105

    /// The marker colour the subscriber's checks ask for.
    public static let magentaHex = "#FF00FF"
    public static let magenta = MarkerDetector(red: 255, green: 0, blue: 255)

    public init(red: Float, green: Float, blue: Float) { self.red = red; self.green = green; self.blue = blue }

    /// The colour of an annotation's `#RRGGBB` string; nil when it is malformed.
    public init?(hex: String) {
        guard let c = AnnotationColor(hex: hex) else { return nil }
        self.init(red: Float(c.red * 255), green: Float(c.green * 255), blue: Float(c.blue * 255))
    }

    /// True for RGB levels within `tolerance` of the target on every channel.
    @inline(__always)
    public func matches(_ r: Float, _ g: Float, _ b: Float) -> Bool {
        abs(r - red) <= tolerance && abs(g - green) <= tolerance && abs(b - blue) <= tolerance
    }

    /// Looks for the mark of `shape` anchored at pixel `anchor` (the projection of the
    /// annotation's world position with the picture's own pose); nil when no blob of the
    /// colour is near enough.
    public func locate(_ shape: MarkerShape, anchor: (x: Float, y: Float), in picture: DecodedPicture) -> MarkerSighting? {
        let expected = (x: anchor.x + shape.centroidOffset.x, y: anchor.y + shape.centroidOffset.y)
        guard let blob = ColorBlob.find(in: picture, around: expected, radius: shape.searchRadius,
                                        minimum: shape.minimumPixels, matches: { matches($0, $1, $2) }) else { return nil }
        let dx = blob.x - expected.x, dy = blob.y - expected.y
        return MarkerSighting(found: blob, expected: expected, errorPixels: (dx * dx + dy * dy).squareRoot())
    }
}
