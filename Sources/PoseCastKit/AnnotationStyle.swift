/// An annotation's colour: `#RRGGBB`, components in 0…1.
public struct AnnotationColor: Hashable, Sendable {
    public var red: Double, green: Double, blue: Double

    /// Drawn when an annotation's colour string is not `#RRGGBB` (the control channel
    /// validates colours, so this only guards the frame against a bad one slipping through).
    public static let fallback = AnnotationColor(red: 1, green: 0.6, blue: 0)

    public init(red: Double, green: Double, blue: Double) { self.red = red; self.green = green; self.blue = blue }

    /// Parses exactly `#` and six ASCII hex digits (either case); nil for anything else.
    public init?(hex: String) {
        let bytes = Array(hex.utf8)
        guard bytes.count == 7, bytes[0] == UInt8(ascii: "#") else { return nil }
        var value: UInt32 = 0
        for byte in bytes[1...] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        self.init(red: Double(value >> 16 & 0xFF) / 255, green: Double(value >> 8 & 0xFF) / 255,
                  blue: Double(value & 0xFF) / 255)
    }

    /// The colour of `hex`, or `fallback` when it is malformed.
    public static func parse(_ hex: String) -> AnnotationColor { AnnotationColor(hex: hex) ?? .fallback }
}

/// Sizes of the annotation marks, in pixels of a frame `scale` × 480 lines tall
/// (so marks keep their size relative to the picture at any resolution).
public struct AnnotationStyle: Hashable, Sendable {
    /// Frame height / 480.
    public var scale: Double

    public init(frameHeight: Int) { scale = Double(max(frameHeight, 1)) / 480 }
    public init(scale: Double) { self.scale = scale }

    // Pin: a disc in the annotation colour, a white ring around it, a dark outline around that.
    public var pinRadius: Double { 7 * scale }
    public var pinRingWidth: Double { max(1, 1.5 * scale) }
    public var outlineWidth: Double { max(1, 1 * scale) }
    public var pinOuterRadius: Double { pinRadius + pinRingWidth + outlineWidth }

    // Arrow: tip at the anchor, coming from the upper left.
    public var arrowLength: Double { 40 * scale }
    public var arrowHeadLength: Double { 13 * scale }
    public var arrowHeadHalfWidth: Double { 7 * scale }
    public var arrowShaftHalfWidth: Double { 2.5 * scale }

    // Label: a small dot at the anchor.
    public var dotRadius: Double { 3.5 * scale }

    // Label text in a dark rounded box to the right of the anchor.
    public static let maxLabelCharacters = 64
    public static let fontFamily = "DejaVu Sans"
    public var fontSize: Double { 13 * scale }
    public var boxPaddingX: Double { 4 * scale }
    public var boxPaddingY: Double { 2.5 * scale }
    public var boxCornerRadius: Double { 3 * scale }
    public var boxGap: Double { 5 * scale }

    public static let outline = AnnotationColor(red: 0.1, green: 0.1, blue: 0.1)
    public static let ring = AnnotationColor(red: 1, green: 1, blue: 1)
    public static let text = AnnotationColor(red: 1, green: 1, blue: 1)
    public static let box = AnnotationColor(red: 0.08, green: 0.08, blue: 0.08)
    public static let boxAlpha = 0.78

    /// Where the label box starts, right of the anchor: clear of the mark of `kind`.
    public func labelOffset(for kind: AnnotationKind) -> Double {
        switch kind {
        case .pin: pinOuterRadius + boxGap
        case .arrow: boxGap + outlineWidth
        case .label: dotRadius + outlineWidth + boxGap
        }
    }

    /// The text shown for a label: control characters become spaces; longer than
    /// `maxLabelCharacters` is cut to that many, the last being an ellipsis.
    public static func displayText(_ label: String) -> String {
        let cleaned = String(String.UnicodeScalarView(label.unicodeScalars.map {
            $0.properties.generalCategory == .control ? " " : $0
        }))
        guard cleaned.count > maxLabelCharacters else { return cleaned }
        return String(cleaned.prefix(maxLabelCharacters - 1)) + "…"
    }
}

extension AnnotationStyle {
    /// The arrow as one polygon: tail at the upper left, tip at the origin. The publisher
    /// draws it; the marker detector takes its area and centroid from this same polygon.
    public func arrowOutline() -> [(x: Double, y: Double)] {
        let d = (x: 1 / 2.0.squareRoot(), y: 1 / 2.0.squareRoot())   // tail → tip, down and right
        let n = (x: d.y, y: -d.x)                                        // perpendicular
        func at(_ along: Double, _ across: Double) -> (x: Double, y: Double) {
            (d.x * along + n.x * across, d.y * along + n.y * across)
        }
        let tail = -arrowLength, base = -arrowHeadLength
        let shaft = arrowShaftHalfWidth, head = arrowHeadHalfWidth
        return [at(tail, shaft), at(base, shaft), at(base, head), (0, 0),
                at(base, -head), at(base, -shaft), at(tail, -shaft)]
    }
}
