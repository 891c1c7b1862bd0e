import PoseCastKit
import Signaling

/// What the publisher does with one control-channel text: the reply for the sender
/// and whether every expert must get the new annotation list.
public struct ControlOutcome: Sendable {
    public var reply: ControlReply
    public var annotationsChanged: Bool
    /// The request type, for logs and status ("annotate", …); nil when unreadable.
    public var requestType: String?
}

/// The publisher's control-channel rules, independent of any channel: validation,
/// roles, annotations. Camera control (`focus`, `meter`, `lock`, `unlock`) is refused
/// as unsupported until a camera-control backend is attached.
public struct PublisherControl: Sendable {
    public let board: AnnotationBoard
    public let placer: AnnotationPlacer

    public init(board: AnnotationBoard, placer: AnnotationPlacer) { self.board = board; self.placer = placer }

    public func handle(_ text: String, from author: String, role: RoomRole) -> ControlOutcome {
        let envelope: ControlEnvelope
        do throws(ControlError) { envelope = try ControlCodec.decodeRequest(text) } catch {
            return ControlOutcome(reply: .error(error), annotationsChanged: false, requestType: nil)
        }
        let id = envelope.id, type = envelope.request.type
        func refuse(_ code: ControlErrorCode, _ message: String) -> ControlOutcome {
            ControlOutcome(reply: .error(ControlError(id: id, code: code, message: message)), annotationsChanged: false, requestType: type)
        }
        guard role == .expert else {
            return refuse(.notAllowed, "\"\(type)\" needs the expert role; this session is a \(role.rawValue)")
        }
        do throws(ControlError) {
            switch envelope.request {
            case .annotate(let request):
                let annotationId = try board.add(request, at: try placer.place(request), author: author)
                return ControlOutcome(reply: .ack(id: id, annotationId: annotationId), annotationsChanged: true, requestType: type)
            case .removeAnnotation(let annotationId):
                try board.remove(annotationId)
                return ControlOutcome(reply: .ack(id: id, annotationId: annotationId), annotationsChanged: true, requestType: type)
            case .clearAnnotations:
                board.clear()
                return ControlOutcome(reply: .ack(id: id, annotationId: nil), annotationsChanged: true, requestType: type)
            case .focus, .meter, .lock, .unlock:
                return refuse(.unsupported, "\"\(type)\" is not available on this publisher yet (no camera-control backend)")
            }
        } catch {
            return refuse(error.code, error.message)
        }
    }
}
