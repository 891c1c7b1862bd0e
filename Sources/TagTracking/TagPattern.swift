import CAprilTag
import PoseCastKit

/// The printed pattern of a tag36h11 tag, from the library's own drawing of the code:
/// what the synthetic camera paints and the tests render.
public struct TagPattern: Sendable, Hashable {
    /// How many tags the family has.
    public static let familySize = Int(pcat_family_size())

    public let id: Int
    /// Cells per side, the white outer ring included (10).
    public let side: Int
    /// Cells per side of the black square, the width a tag's size is measured at (8).
    public let border: Int
    /// `side` × `side` cells, row by row from the top as the tag is read: 0 black, 255 white.
    public let cells: [UInt8]

    /// Nil for an id outside the family.
    public init?(id: Int) {
        var border: Int32 = 0
        let side = Int(pcat_tag_pattern(Int32(clamping: id), nil, 0, &border))
        guard side > 0 else { return nil }
        var cells = [UInt8](repeating: 0, count: side * side)
        guard cells.withUnsafeMutableBufferPointer({ pcat_tag_pattern(Int32(id), $0.baseAddress, Int32(side * side), nil) }) == side
        else { return nil }
        self.id = id; self.side = side; self.border = Int(border); self.cells = cells
    }

    /// The pattern's value at a point of the tag's own frame (metres, x right, y up, the
    /// tag's centre at 0) for a tag whose black square is `size` wide: 0 or 255 inside the
    /// pattern (white ring included), nil outside it.
    public func value(atX x: Float, y: Float, size: Float) -> UInt8? {
        let cell = size / Float(border)
        let half = Float(side) / 2
        let column = (x / cell + half).rounded(.down), row = (-y / cell + half).rounded(.down)
        guard column >= 0, row >= 0, column < Float(side), row < Float(side) else { return nil }
        return cells[Int(row) * side + Int(column)]
    }
}
