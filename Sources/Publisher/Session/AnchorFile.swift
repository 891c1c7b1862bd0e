import Foundation
import PoseCastKit
import Synchronization

/// `--anchors FILE`: the annotations kept across sessions, in the world of the poses (the
/// tag map's with `--pose apriltag`, the scene's with the synthetic camera), so a pin
/// placed today is on the same valve tomorrow. The file is JSON (`{"annotations": [...]}`,
/// each as the control channel's `annotations` reply lists it), read once at start and
/// rewritten whole after every change.
///
/// Ownership: writes go to one serial queue of its own, each to a new file renamed over
/// the old one, so a crash never leaves half a file and the session's task never waits
/// on the disk. A write that fails is reported once per distinct reason.
public final class AnchorFile: Sendable {
    public let path: String
    private let queue = DispatchQueue(label: "posecast.anchors")
    private let onFailure: @Sendable (String) -> Void
    private let lastFailure = Mutex<String?>(nil)

    private struct Contents: Codable { var annotations: [Annotation] }

    public init(path: String, onFailure: @escaping @Sendable (String) -> Void) {
        self.path = path; self.onFailure = onFailure
    }

    /// The annotations kept in the file; none when it does not exist yet (the first
    /// session). A file that exists but cannot be read or is not a list of annotations
    /// is refused, never overwritten.
    public func load() throws(AnchorFileError) -> [Annotation] {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .unreadable(path: path, error.localizedDescription)
        }
        let list: [Annotation]
        do { list = try JSONDecoder().decode(Contents.self, from: data).annotations } catch {
            throw .malformed(path: path, "\(error)")
        }
        guard list.count <= AnnotationBoard.maxAnnotations else {
            throw .malformed(path: path, "\(list.count) annotations; at most \(AnnotationBoard.maxAnnotations)")
        }
        for a in list {
            guard a.position.isFinite else { throw .malformed(path: path, "annotation \(a.id): its position is not finite") }
        }
        guard Set(list.map(\.id)).count == list.count else { throw .malformed(path: path, "an annotation id is listed twice") }
        return list
    }

    /// Rewrites the file with `annotations` (in the background).
    public func save(_ annotations: [Annotation]) {
        queue.async { [self] in
            do {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                try encoder.encode(Contents(annotations: annotations)).write(to: URL(fileURLWithPath: path), options: .atomic)
                lastFailure.withLock { $0 = nil }
            } catch {
                let reason = "\(path): \(error.localizedDescription)"
                let isNew = lastFailure.withLock { last in
                    defer { last = reason }
                    return last != reason
                }
                if isNew { onFailure(reason) }
            }
        }
    }

    /// Waits until every save asked for so far is written (tests, shutdown).
    public func flush() { queue.sync {} }
}

/// Why the anchors file could not be used.
public enum AnchorFileError: Error, Sendable, Hashable, CustomStringConvertible {
    case unreadable(path: String, String)
    case malformed(path: String, String)

    public var description: String {
        switch self {
        case .unreadable(let path, let why): "--anchors \(path): cannot be read: \(why)"
        case .malformed(let path, let why): "--anchors \(path): not a list of annotations (it is left as it is): \(why)"
        }
    }
}
