import PoseCastKit
import Synchronization

/// The publisher's annotations in world coordinates, shared by every session:
/// what the control channel changes and the overlay draws.
public final class AnnotationBoard: Sendable {
    public static let maxAnnotations = 64
    private struct State { var items: [Annotation] = []; var nextNumber = 1 }
    private let state = Mutex(State())

    public init() {}

    public var all: [Annotation] { state.withLock { $0.items } }

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
        return try result.get()
    }

    public func remove(_ id: String) throws(ControlError) {
        let removed = state.withLock { s in
            guard let index = s.items.firstIndex(where: { $0.id == id }) else { return false }
            s.items.remove(at: index)
            return true
        }
        guard removed else { throw ControlError(id: nil, code: .notFound, message: "no annotation \"\(id)\"") }
    }

    public func clear() { state.withLock { $0.items.removeAll() } }
}
