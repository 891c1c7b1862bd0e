import Foundation

// The control channel (a reliable, ordered WebRTC data channel labelled "control"):
// JSON objects with a `type` and, for requests, an `id`. Every request gets `ack`
// or `error {id, code, message}`. See docs/CONTROL_CHANNEL.md.

/// Focus modes of `focus` (as the 100ms and DeepMedia references name them).
public enum FocusMode: String, Sendable, Hashable, Codable, CaseIterable {
    case auto, tapToAutoFocus, tapToLockFocus
}

/// What a `meter`, `lock` or `unlock` acts on.
public enum MeteringRoutine: String, Sendable, Hashable, Codable, CaseIterable {
    case exposure, focus, whiteBalance
}

public enum MeteringMode: String, Sendable, Hashable, Codable, CaseIterable {
    case uniform, spot, weighted
}

/// Who turns an `annotate` tap into a world position.
public enum AnnotationPlacement: String, Sendable, Hashable, Codable, CaseIterable {
    /// The expert did (from the pose of the frame it tapped) and sends `position`.
    case world
    /// The publisher does, from its own depth of the tapped frame (`frameId`) at `tap`.
    case publisherDepth
    /// The publisher's depth of the tapped frame where its source has depth; otherwise
    /// `position`, the expert's own (from the frame's pose on its placement planes; may be
    /// left out when the tap hits none of them). The annotation says which was used.
    case auto
    /// Naive screen coordinates: the publisher unprojects `tap` with the pose of its newest
    /// frame on its placement planes. Wrong as soon as the camera moved while the message
    /// travelled; kept as the baseline the benchmark compares against.
    case screen
}

/// A new annotation as the expert asks for it.
public struct AnnotationRequest: Sendable, Hashable {
    public var annotationId: String?
    public var kind: AnnotationKind
    public var placement: AnnotationPlacement
    /// Required with `.world` placement, absent otherwise.
    public var position: Vector3?
    public var frameId: UInt32
    public var tap: NormalizedPoint
    public var label: String
    public var color: String
    public init(annotationId: String? = nil, kind: AnnotationKind = .pin, placement: AnnotationPlacement = .world,
                position: Vector3?, frameId: UInt32, tap: NormalizedPoint, label: String = "", color: String = "#FF3B30") {
        self.annotationId = annotationId; self.kind = kind; self.placement = placement; self.position = position
        self.frameId = frameId; self.tap = tap; self.label = label; self.color = color
    }
}

public struct MeterRequest: Sendable, Hashable {
    public var point: NormalizedPoint?
    /// Seconds to hold the result; nil, ≤ 0 or infinite: forever.
    public var lockDuration: Double?
    public var routines: [MeteringRoutine]
    public var meteringMode: MeteringMode?
    public var throwIfUnsupported: Bool
    public init(point: NormalizedPoint? = nil, lockDuration: Double? = nil, routines: [MeteringRoutine] = MeteringRoutine.allCases,
                meteringMode: MeteringMode? = nil, throwIfUnsupported: Bool = false) {
        self.point = point; self.lockDuration = lockDuration; self.routines = routines
        self.meteringMode = meteringMode; self.throwIfUnsupported = throwIfUnsupported
    }
}

/// Expert → publisher.
public enum ControlRequest: Sendable, Hashable {
    case annotate(AnnotationRequest)
    case removeAnnotation(annotationId: String)
    case clearAnnotations
    case focus(point: NormalizedPoint, mode: FocusMode)
    case meter(MeterRequest)
    case lock(routines: [MeteringRoutine])
    case unlock(routines: [MeteringRoutine])
    /// The metering mode of the auto area only: the routines that meter continuously
    /// follow it; nothing is metered once or locked (as `meter` would).
    case meteringMode(MeteringMode)
    /// Digital zoom ×`factor` (1…4; 1 hands the view back to the framing) on `point` of
    /// frame `frameId` as the expert saw it (the latest frame when nil).
    case zoom(point: NormalizedPoint, factor: Double, frameId: UInt32?)
    /// Keep an annotation's 3D anchor in view at ×`factor`; nil stops following.
    case follow(annotationId: String?, factor: Double)
    /// Automatic framing: "off", "face" or "person".
    case framing(subject: String)
    /// The virtual background: only the field worker sets it; always refused.
    case background
    /// The sender muted or unmuted its microphone (the others see it in `voices`).
    case voice(muted: Bool)
    /// Through an SFU only: this session shows it receives the stream by naming a frame it
    /// decoded and that frame's capture time, exact to the nanosecond (in the frame's SEI or
    /// trailer), which nobody outside the stream can know. The publisher ends a session
    /// through the SFU that never shows it, or stops showing it (docs/SCALING.md).
    case receiving(frameId: UInt32, captureTimeNanos: UInt64)

    public var type: String {
        switch self {
        case .annotate: "annotate"
        case .removeAnnotation: "removeAnnotation"
        case .clearAnnotations: "clearAnnotations"
        case .focus: "focus"
        case .meter: "meter"
        case .lock: "lock"
        case .unlock: "unlock"
        case .meteringMode: "meteringMode"
        case .zoom: "zoom"
        case .follow: "follow"
        case .framing: "framing"
        case .background: "background"
        case .voice: "voice"
        case .receiving: "receiving"
        }
    }
}

/// A request with its id, as read off the channel.
public struct ControlEnvelope: Sendable, Hashable {
    public var id: String
    public var request: ControlRequest
    public init(id: String, request: ControlRequest) { self.id = id; self.request = request }
}

/// Machine-readable reason of an `error` reply.
public enum ControlErrorCode: String, Sendable, Hashable, Codable, CaseIterable {
    case malformed, unknownType, missingField, invalidValue, tooLarge
    /// The sender's role may not do this (a viewer steering the camera).
    case notAllowed
    /// Not available on this publisher (yet, or on this camera).
    case unsupported
    /// An annotation id that does not exist.
    case notFound
    /// Too many annotations.
    case limitReached
    /// Too many requests in too short a time on this session (`ControlRateLimiter`):
    /// the request was not executed; send it again later.
    case rateLimited
}

/// A refused request: what went wrong, for the reply and for logs.
public struct ControlError: Error, Sendable, Hashable, CustomStringConvertible {
    public var id: String?
    public var code: ControlErrorCode
    public var message: String
    public init(id: String?, code: ControlErrorCode, message: String) { self.id = id; self.code = code; self.message = message }
    public var description: String { "\(code.rawValue): \(message)" }
}

/// Publisher → expert.
public enum ControlReply: Sendable, Hashable {
    /// `skipped`: routines a `meter` left out as unsupported (`throwIfUnsupported` false).
    case ack(id: String, annotationId: String?, skipped: [MeteringRoutine] = [])
    case error(ControlError)
    /// The full list, on join and after every change.
    case annotations([Annotation])
    /// The annotations behind something nearer in the frames going out now (the publisher
    /// knows where its source gives depth), by id: on join and when it changes, at most
    /// five times a second. The video shows them with the hidden look; the console's own
    /// marks follow.
    case annotationVisibility(hidden: [String])
    /// What the camera's metering routines are doing, streamed while they work.
    case sceneStatus(SceneStatus)
    /// Who is in the conversation and who is muted: on join and after every change.
    case voices([VoiceParticipant])
    /// To one session through the SFU that may talk: where to publish its voice.
    case voiceRoute(VoiceRoute)
}

/// Where an expert through the SFU publishes its voice: the voice room, its pin, and
/// the name to publish under (the publisher subscribes only to the names it gave out);
/// `listen`: the names of the other talkers, whose feeds there it hears (sent again when
/// they change).
public struct VoiceRoute: Sendable, Hashable {
    public var room: UInt64
    public var pin: String
    public var display: String
    public var listen: [String]
    public init(room: UInt64, pin: String, display: String, listen: [String] = []) {
        self.room = room; self.pin = pin; self.display = display; self.listen = listen
    }

    /// The same place to publish in (room, pin, name), whoever else talks.
    public func samePlace(as other: VoiceRoute) -> Bool { room == other.room && pin == other.pin && display == other.display }
}

/// One voice in the conversation: the field (`id` "field", role "publisher") or a
/// session's consumer (its peer id and room role).
public struct VoiceParticipant: Sendable, Hashable {
    public var id: String
    public var role: String
    public var muted: Bool
    /// False for a viewer where viewers only listen.
    public var mayTalk: Bool
    public init(id: String, role: String, muted: Bool, mayTalk: Bool = true) {
        self.id = id; self.role = role; self.muted = muted; self.mayTalk = mayTalk
    }
}
