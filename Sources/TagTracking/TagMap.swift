import Foundation
import PoseCastKit

/// Where the tags are: each tag's id in the tag36h11 family, its size (the side of its
/// black square, metres) and its pose in the world. A tag's own frame has its origin at
/// the tag's centre, x to the right and y up as the tag is read, and z out of its
/// printed face. The world is the project's (right-handed, y up, metres).
///
/// On disk, JSON:
/// `{"tags": [{"id": 0, "size": 0.16, "position": [0, 0, 0], "orientation": [x, y, z, w]}]}`
/// where `orientation` is the tag-to-world rotation as a unit quaternion; it may be left
/// out for a tag lying on the ground, face up, read from the +Z side.
public struct TagMap: Sendable, Hashable {
    public struct Tag: Sendable, Hashable {
        public var id: Int
        public var size: Float
        public var position: Vector3
        /// Tag-to-world rotation.
        public var orientation: Quaternion

        public init(id: Int, size: Float, position: Vector3, orientation: Quaternion = TagMap.faceUp) {
            self.id = id; self.size = size; self.position = position; self.orientation = orientation
        }

        /// The world position of a point given in the tag's own frame (metres).
        public func world(_ local: Vector3) -> Vector3 { orientation.rotate(local) + position }
    }

    /// The tags by id.
    public private(set) var tags: [Int: Tag]

    /// A tag on the ground, face up, its top towards −Z (read by a camera looking down
    /// the −Z direction, as the synthetic camera's orbit starts).
    public static let faceUp = Quaternion.fromBasis(right: Vector3(1, 0, 0), up: Vector3(0, 0, -1), back: Vector3(0, 1, 0))
    /// The map when none is given: tag 0, 16 cm, lying at the world's origin.
    public static let standard = try! TagMap([Tag(id: 0, size: 0.16, position: .zero)])
    /// The synthetic scene's tag field: six 40 cm tags lying on its ground among its
    /// objects, clear of its boxes, balls and discs (`posecast-scene tags`, and what the
    /// publisher's synthetic camera paints for `--pose apriltag`).
    public static let sceneField = try! TagMap([
        Tag(id: 0, size: 0.4, position: Vector3(0, 0, 0.75)),
        Tag(id: 1, size: 0.4, position: Vector3(0.75, 0, -0.35)),
        Tag(id: 2, size: 0.4, position: Vector3(-0.35, 0, -0.85)),
        Tag(id: 3, size: 0.4, position: Vector3(-0.95, 0, 0.6)),
        Tag(id: 4, size: 0.4, position: Vector3(1.4, 0, 0.55)),
        Tag(id: 5, size: 0.4, position: Vector3(-1.45, 0, -0.35)),
    ])

    public init(_ tags: [Tag]) throws(TagMapError) {
        var byID: [Int: Tag] = [:]
        for tag in tags {
            guard (0..<TagPattern.familySize).contains(tag.id) else {
                throw .badTag(id: tag.id, "not a tag36h11 id (0…\(TagPattern.familySize - 1))")
            }
            guard tag.size.isFinite, tag.size > 0.005, tag.size < 10 else {
                throw .badTag(id: tag.id, "size \(tag.size) m is not between 5 mm and 10 m")
            }
            guard tag.position.x.isFinite, tag.position.y.isFinite, tag.position.z.isFinite else {
                throw .badTag(id: tag.id, "position is not finite")
            }
            guard tag.orientation.isFinite, abs(tag.orientation.norm - 1) < 1e-3 else {
                throw .badTag(id: tag.id, "orientation is not a unit quaternion (norm \(tag.orientation.norm))")
            }
            guard byID[tag.id] == nil else { throw .badTag(id: tag.id, "listed twice") }
            byID[tag.id] = tag
        }
        guard !byID.isEmpty else { throw .empty }
        self.tags = byID
    }

    /// The map in the JSON file at `path`.
    public static func load(path: String) throws(TagMapError) -> TagMap {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .unreadable(path: path, error.localizedDescription)
        }
        do { return try decode(data) } catch let TagMapError.badJSON(_, why) { throw .badJSON(path: path, why) }
    }

    /// The map in `data` (JSON as above).
    public static func decode(_ data: Data) throws(TagMapError) -> TagMap {
        struct File: Decodable {
            struct Entry: Decodable { var id: Int; var size: Float; var position: [Float]; var orientation: [Float]? }
            var tags: [Entry]
        }
        let file: File
        do { file = try JSONDecoder().decode(File.self, from: data) } catch {
            throw .badJSON(path: nil, "\(error)")
        }
        var tags: [Tag] = []
        for e in file.tags {
            guard e.position.count == 3 else { throw .badTag(id: e.id, "position needs 3 numbers, not \(e.position.count)") }
            var orientation = TagMap.faceUp
            if let q = e.orientation {
                guard q.count == 4 else { throw .badTag(id: e.id, "orientation needs 4 numbers (x, y, z, w), not \(q.count)") }
                orientation = Quaternion(x: q[0], y: q[1], z: q[2], w: q[3])
            }
            tags.append(Tag(id: e.id, size: e.size, position: Vector3(e.position[0], e.position[1], e.position[2]),
                            orientation: orientation))
        }
        return try TagMap(tags)
    }
}

/// Why a tag map was refused.
public enum TagMapError: Error, Sendable, Hashable, CustomStringConvertible {
    case unreadable(path: String, String)
    case badJSON(path: String?, String)
    case badTag(id: Int, String)
    case empty

    public var description: String {
        switch self {
        case .unreadable(let path, let why): "tag map \(path): cannot be read: \(why)"
        case .badJSON(let path, let why): "tag map\(path.map { " " + $0 } ?? ""): not a tag map ({\"tags\": [{\"id\", \"size\", \"position\", \"orientation\"?}]}): \(why)"
        case .badTag(let id, let why): "tag map: tag \(id): \(why)"
        case .empty: "tag map: no tags"
        }
    }
}
