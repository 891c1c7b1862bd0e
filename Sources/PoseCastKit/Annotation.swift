/// What an annotation looks like when drawn.
public enum AnnotationKind: String, Sendable, Hashable, Codable, CaseIterable {
    case pin, arrow, label
}

/// An expert's mark, anchored at a world position (metres, y up).
public struct Annotation: Sendable, Hashable, Codable {
    /// Assigned by the publisher (`a1`, `a2`, …) unless the expert chose one.
    public var id: String
    public var kind: AnnotationKind
    public var position: Vector3
    /// Frame on which the expert tapped, and where (normalised).
    public var frameId: UInt32
    public var tap: NormalizedPoint
    public var label: String
    /// `#RRGGBB`.
    public var color: String
    /// Session of the expert who placed it.
    public var author: String
    /// How its position was found: `world` (the expert's), `publisherDepth` or `screen`
    /// (never `auto`: the one `auto` chose).
    public var placement: AnnotationPlacement

    public init(id: String, kind: AnnotationKind, position: Vector3, frameId: UInt32, tap: NormalizedPoint,
                label: String, color: String, author: String, placement: AnnotationPlacement = .world) {
        self.id = id; self.kind = kind; self.position = position; self.frameId = frameId
        self.tap = tap; self.label = label; self.color = color; self.author = author; self.placement = placement
    }
}
