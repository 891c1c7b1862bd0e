import PoseCastKit
import Synchronization

/// The publisher's annotations in world coordinates, shared by every session:
/// what the control channel changes and the overlay draws. An observer (`--anchors`:
/// the file they are kept in) hears of every change, after it is made.
public final class AnnotationBoard: Sendable {
    public static let maxAnnotations = 64
    private struct State { var items: [Annotation] = []; var nextNumber = 1 }
    private let state = Mutex(State())
    private let observer = Mutex<(@Sendable ([Annotation]) -> Void)?>(nil)

    public init() {}

    public var all: [Annotation] { state.withLock { $0.items } }

    /// Calls `body` with the whole list after every change (on the changing task; `body`
    /// must not block).
    public func onChange(_ body: @escaping @Sendable ([Annotation]) -> Void) { observer.withLock { $0 = body } }

    /// The annotations of an earlier session (`AnchorFile`), in place of none; the ids
    /// given next continue after theirs. Not reported to the observer.
    public func restore(_ items: [Annotation]) {
        state.withLock { s in
            s.items = Array(items.prefix(Self.maxAnnotations))
            let numbers = s.items.compactMap { $0.id.hasPrefix("a") ? Int($0.id.dropFirst()) : nil }
            s.nextNumber = (numbers.max() ?? 0) + 1
        }
    }

    private func changed() {
        let items = all
        observer.withLock { $0 }?(items)
    }

    /// Adds (or, for an id that exists, replaces) an annotation at `position` (the
    /// request's placement already resolved); returns its id.
    public func add(_ request: AnnotationRequest, at position: Vector3, placedBy placement: AnnotationPlacement? = nil,
                    author: String) throws(ControlError) -> String {
        let result: Result<String, ControlError> = state.withLock { s in
            let id: String
            if let chosen = request.annotationId { id = chosen } else {
                var candidate = "a\(s.nextNumber)"
                while s.items.contains(where: { $0.id == candidate }) { s.nextNumber += 1; candidate = "a\(s.nextNumber)" }
                s.nextNumber += 1
                id = candidate
            }
            let annotation = Annotation(id: id, kind: request.kind, position: position, frameId: request.frameId,
                                        tap: request.tap, label: request.label, color: request.color, author: author,
                                        placement: placement ?? request.placement)
            if let index = s.items.firstIndex(where: { $0.id == id }) {
                s.items[index] = annotation
            } else {
                guard s.items.count < Self.maxAnnotations else {
                    return .failure(ControlError(id: nil, code: .limitReached,
                                                 message: "at most \(Self.maxAnnotations) annotations; remove some first"))
                }
                s.items.append(annotation)
            }
            return .success(id)
        }
        let id = try result.get()
        changed()
        return id
    }

    public func remove(_ id: String) throws(ControlError) {
        let removed = state.withLock { s in
            guard let index = s.items.firstIndex(where: { $0.id == id }) else { return false }
            s.items.remove(at: index)
            return true
        }
        guard removed else { throw ControlError(id: nil, code: .notFound, message: "no annotation \"\(id)\"") }
        changed()
    }

    public func clear() {
        state.withLock { $0.items.removeAll() }
        changed()
    }
}
