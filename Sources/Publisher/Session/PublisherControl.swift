import PoseCastKit
import RTCModel
import Signaling

/// What the publisher does with one control-channel text: the reply for the sender
/// and whether every expert must get the new annotation list.
public struct ControlOutcome: Sendable {
    public var reply: ControlReply
    public var annotationsChanged: Bool
    /// The request type, for logs and status ("annotate", …); nil when unreadable.
    public var requestType: String?
    /// Routines a `meter` skipped as unsupported (`throwIfUnsupported` false).
    public var skipped: [MeteringRoutine] = []
    /// A `voice` request: the sender's microphone is now muted (or not).
    public var voiceMuted: Bool?
}

/// The camera-control requests, as the publisher's camera answers them (the metering
/// routines over a V4L2 or simulated camera). Errors carry the reply's code and message.
public protocol CameraCommands: Sendable {
    func focus(at point: NormalizedPoint, mode: FocusMode) throws(ControlError)
    /// Returns the routines skipped as unsupported (only with `throwIfUnsupported` false).
    func meter(_ request: MeterRequest) throws(ControlError) -> [MeteringRoutine]
    /// Both return the routines skipped because the camera cannot do them.
    func lock(_ routines: [MeteringRoutine]) throws(ControlError) -> [MeteringRoutine]
    func unlock(_ routines: [MeteringRoutine]) throws(ControlError) -> [MeteringRoutine]
    /// The auto area's metering mode; nothing metered once, nothing locked.
    func setMeteringMode(_ mode: MeteringMode) throws(ControlError)
}

/// The framing requests, as the publisher's effect chain answers them. Errors carry the
/// reply's code and message (`notAllowed` when the framing control mode refuses experts).
public protocol EffectCommands: Sendable {
    func zoom(at point: NormalizedPoint, factor: Double, frameID: UInt32?) throws(ControlError)
    /// `anchor` nil stops following.
    func follow(annotationId: String, anchor: Vector3?, factor: Double) throws(ControlError)
    func framing(_ subject: String) throws(ControlError)
}

/// The publisher's control-channel rules, independent of any channel: validation,
/// roles, annotations, camera control. Without a camera (`camera` nil: the test
/// source) `focus`, `meter`, `lock` and `unlock` are refused as unsupported.
public struct PublisherControl: Sendable {
    public let board: AnnotationBoard
    public let placer: AnnotationPlacer
    public let camera: (any CameraCommands)?
    /// Why there is no camera control, for the `unsupported` reply.
    public let noCameraReason: String
    /// Framing and zoom; nil: refused as unsupported.
    public let effects: (any EffectCommands)?

    public init(board: AnnotationBoard, placer: AnnotationPlacer, camera: (any CameraCommands)? = nil,
                noCameraReason: String = "this publisher's source has no camera to control",
                effects: (any EffectCommands)? = nil) {
        self.board = board; self.placer = placer; self.camera = camera; self.noCameraReason = noCameraReason
        self.effects = effects
    }

    /// One message as it came off the data channel. Binary is refused (`tooLarge` over
    /// `ControlCodec.maxMessageBytes`, else `malformed`: the channel carries JSON text);
    /// a message the session's rate limiter refused (`refusedBy`, nil when admitted) gets
    /// `rateLimited`, with its id when one can be read, and is not executed; text is
    /// `handle(_:from:role:)`.
    public func handle(_ message: DataChannelMessage, from author: String, role: RoomRole,
                       refusedBy limiter: ControlRateLimiter? = nil) -> ControlOutcome {
        if let refusal = Self.refusal(of: message, role: role, refusedBy: limiter) { return refusal }
        guard case .text(let text) = message else { preconditionFailure("binary messages are refused") }
        return handle(text, from: author, role: role)
    }

    /// The answer to a message refused without executing anything (over the rate limit,
    /// binary, unreadable, or a role that may not ask): pure, so the session state machine
    /// answers it itself. Nil: the message is an expert's readable request, to execute.
    public static func refusal(of message: DataChannelMessage, role: RoomRole,
                               refusedBy limiter: ControlRateLimiter?) -> ControlOutcome? {
        if let limiter {
            var id: String?
            if case .text(let text) = message {
                do throws(ControlError) { id = try ControlCodec.decodeRequest(text).id } catch { id = error.id }
            }
            let wait = limiter.secondsUntilNextToken()
            let message = "over this session's limit (\(limiter.limit)): not executed"
                + (wait.isFinite ? "; retry in \(Int((wait * 1000).rounded(.up))) ms" : "")
            return ControlOutcome(reply: .error(ControlError(id: id, code: .rateLimited, message: message)),
                                  annotationsChanged: false, requestType: nil)
        }
        switch message {
        case .text(let text):
            let envelope: ControlEnvelope
            do throws(ControlError) { envelope = try ControlCodec.decodeRequest(text) } catch {
                return ControlOutcome(reply: .error(error), annotationsChanged: false, requestType: nil)
            }
            guard role == .expert else { return notAllowed(envelope, role: role) }
            return nil
        case .binary(let bytes):
            let error = bytes.count > ControlCodec.maxMessageBytes
                ? ControlError(id: nil, code: .tooLarge,
                               message: "binary message of \(bytes.count) bytes exceeds \(ControlCodec.maxMessageBytes); the control channel carries JSON text")
                : ControlError(id: nil, code: .malformed, message: "binary message of \(bytes.count) bytes: the control channel carries JSON text")
            return ControlOutcome(reply: .error(error), annotationsChanged: false, requestType: nil)
        }
    }

    /// `code` and `text` as the answer to `message`, with its id and type when they can be read.
    static func refusal(_ message: DataChannelMessage, _ code: ControlErrorCode, _ text: String) -> ControlOutcome {
        var envelope: ControlEnvelope?
        var id: String?
        if case .text(let raw) = message {
            do throws(ControlError) { envelope = try ControlCodec.decodeRequest(raw); id = envelope?.id } catch { id = error.id }
        }
        return ControlOutcome(reply: .error(ControlError(id: id, code: code, message: text)), annotationsChanged: false,
                              requestType: envelope?.request.type)
    }

    /// Why a `receiving` on a direct session is refused.
    static let proofOnDirectSession = "\"receiving\" is for sessions through the SFU: a direct session's peer connection shows it receives"

    private static func notAllowed(_ envelope: ControlEnvelope, role: RoomRole) -> ControlOutcome {
        let type = envelope.request.type
        return ControlOutcome(reply: .error(ControlError(id: envelope.id, code: .notAllowed,
                                                         message: "\"\(type)\" needs the expert role; this session is a \(role.rawValue)")),
                              annotationsChanged: false, requestType: type)
    }

    public func handle(_ text: String, from author: String, role: RoomRole) -> ControlOutcome {
        let envelope: ControlEnvelope
        do throws(ControlError) { envelope = try ControlCodec.decodeRequest(text) } catch {
            return ControlOutcome(reply: .error(error), annotationsChanged: false, requestType: nil)
        }
        let id = envelope.id, type = envelope.request.type
        func refuse(_ code: ControlErrorCode, _ message: String) -> ControlOutcome {
            ControlOutcome(reply: .error(ControlError(id: id, code: code, message: message)), annotationsChanged: false, requestType: type)
        }
        guard role == .expert else { return Self.notAllowed(envelope, role: role) }
        do throws(ControlError) {
            switch envelope.request {
            case .annotate(let request):
                let placed = try placer.placement(of: request)
                let annotationId = try board.add(request, at: placed.position, placedBy: placed.placement, author: author)
                return ControlOutcome(reply: .ack(id: id, annotationId: annotationId), annotationsChanged: true, requestType: type)
            case .removeAnnotation(let annotationId):
                try board.remove(annotationId)
                return ControlOutcome(reply: .ack(id: id, annotationId: annotationId), annotationsChanged: true, requestType: type)
            case .clearAnnotations:
                board.clear()
                return ControlOutcome(reply: .ack(id: id, annotationId: nil), annotationsChanged: true, requestType: type)
            case .focus, .meter, .lock, .unlock, .meteringMode:
                guard let camera else { return refuse(.unsupported, "\"\(type)\": \(noCameraReason)") }
                var skipped: [MeteringRoutine] = []
                switch envelope.request {
                case let .focus(point, mode): try camera.focus(at: point, mode: mode)
                case .meter(let request): skipped = try camera.meter(request)
                case .lock(let routines): skipped = try camera.lock(routines)
                case .unlock(let routines): skipped = try camera.unlock(routines)
                case .meteringMode(let mode): try camera.setMeteringMode(mode)
                default: break
                }
                return ControlOutcome(reply: .ack(id: id, annotationId: nil, skipped: skipped), annotationsChanged: false,
                                      requestType: type, skipped: skipped)
            case .voice(let muted):
                return ControlOutcome(reply: .ack(id: id, annotationId: nil), annotationsChanged: false, requestType: type,
                                      voiceMuted: muted)
            case .receiving:
                // The session machine reads proofs itself (`PublisherSessions`); one that gets here came off a data channel.
                return refuse(.notAllowed, Self.proofOnDirectSession)
            case .background:
                return refuse(.notAllowed, "the virtual background is the field worker's own choice: an expert can neither set it nor turn it off")
            case .zoom, .follow, .framing:
                guard let effects else { return refuse(.unsupported, "\"\(type)\": this publisher has no framing effect") }
                var annotationId: String?
                switch envelope.request {
                case let .zoom(point, factor, frameId): try effects.zoom(at: point, factor: factor, frameID: frameId)
                case let .follow(target, factor):
                    if let target {
                        guard let annotation = board.all.first(where: { $0.id == target }) else {
                            return refuse(.notFound, "no annotation \"\(target)\" to follow")
                        }
                        try effects.follow(annotationId: target, anchor: annotation.position, factor: factor)
                    } else {
                        try effects.follow(annotationId: "", anchor: nil, factor: factor)
                    }
                    annotationId = target
                case .framing(let subject): try effects.framing(subject)
                default: break
                }
                return ControlOutcome(reply: .ack(id: id, annotationId: annotationId), annotationsChanged: false, requestType: type)
            }
        } catch {
            return refuse(error.code, error.message)
        }
    }
}
