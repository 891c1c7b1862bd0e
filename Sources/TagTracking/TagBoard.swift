import PoseCastKit

/// A calibration board: tags printed in a grid on one flat sheet. It is an ordinary
/// `TagMap` (its file is a tag map file), laid out so calibration can read it as a
/// plane: the board lies in the world's z = 0 plane, printed face towards +Z, x to the
/// right and y up as it is read, its centre at the origin. Tag `firstID` is at the top
/// left and the ids go along the rows.
extension TagMap {
    /// The default board: 6 × 4 tags of 5 cm with 1.25 cm between them (two cells, the
    /// two tags' white rings), 37.5 × 25 cm with its white margin: an A3 sheet at 100 %.
    /// 24 tags stay under what one picture reports (`TagDetector.capacity`).
    public static let defaultBoard = try! TagMap.board(columns: 6, rows: 4, tagSize: 0.05, gap: 0.0125)

    /// A board of `columns` × `rows` tags whose black squares are `tagSize` wide and
    /// `gap` apart (metres; at least two of the tag's cells, `tagSize / 4`, so the white
    /// rings that let the detector find each square do not overlap).
    public static func board(columns: Int, rows: Int, tagSize: Float, gap: Float, firstID: Int = 0) throws(TagBoardError) -> TagMap {
        guard columns > 0, rows > 0 else { throw .badLayout("\(columns) × \(rows) tags: needs at least one of each") }
        guard gap.isFinite, gap >= tagSize / 4 - 1e-6 else {
            throw .badLayout("gap \(gap) m is under two cells of a \(tagSize) m tag (\(tagSize / 4) m): the white rings would overlap")
        }
        let pitch = tagSize + gap
        var tags: [Tag] = []
        for row in 0..<rows {
            for column in 0..<columns {
                let x = (Float(column) - Float(columns - 1) / 2) * pitch
                let y = (Float(rows - 1) / 2 - Float(row)) * pitch
                tags.append(Tag(id: firstID + row * columns + column, size: tagSize, position: Vector3(x, y, 0),
                                orientation: .identity))
            }
        }
        do { return try TagMap(tags) } catch { throw .badMap(error) }
    }

    /// The board's corner points (x, y in its plane, metres) for each tag, in the order of
    /// `TagSighting.corners`. Throws when a tag's corners are not in the z = 0 plane:
    /// calibration needs a flat board laid out as `board` lays it.
    public func boardCorners() throws(TagBoardError) -> [Int: [SIMD2<Double>]] {
        var out: [Int: [SIMD2<Double>]] = [:]
        for tag in tags.values {
            let corners = TagPoseSolver.corners.map { tag.world(($0 * Double(tag.size)).vector3) }
            guard corners.allSatisfy({ abs($0.z) < 1e-4 }) else { throw .notFlat(id: tag.id) }
            out[tag.id] = corners.map { SIMD2(Double($0.x), Double($0.y)) }
        }
        return out
    }

    /// The map as its JSON file (`TagMap.load` reads it back), one tag a line, by id.
    public var jsonFile: String {
        let lines = tags.values.sorted { $0.id < $1.id }.map { t in
            let q = t.orientation
            return "  {\"id\": \(t.id), \"size\": \(t.size), \"position\": [\(t.position.x), \(t.position.y), \(t.position.z)], "
                + "\"orientation\": [\(q.x), \(q.y), \(q.z), \(q.w)]}"
        }
        return "{\"tags\": [\n" + lines.joined(separator: ",\n") + "\n]}\n"
    }

    /// The board's extent in its plane (metres), white rings included.
    public var boardSize: (width: Float, height: Float) {
        let xs = tags.values.flatMap { [$0.position.x - $0.size * 5 / 8, $0.position.x + $0.size * 5 / 8] }
        let ys = tags.values.flatMap { [$0.position.y - $0.size * 5 / 8, $0.position.y + $0.size * 5 / 8] }
        return (xs.max()! - xs.min()!, ys.max()! - ys.min()!)
    }
}

/// Why a board was refused.
public enum TagBoardError: Error, Sendable, Hashable, CustomStringConvertible {
    case badLayout(String)
    case badMap(TagMapError)
    case notFlat(id: Int)

    public var description: String {
        switch self {
        case .badLayout(let why): "board: \(why)"
        case .badMap(let error): "board: \(error)"
        case .notFlat(let id): "board: tag \(id) is not in the board's plane (a calibration board lies at z = 0, face towards +Z)"
        }
    }
}
