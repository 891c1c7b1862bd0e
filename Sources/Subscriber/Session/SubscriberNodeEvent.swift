import Dispatch
import Logging
import PoseCastKit
import PoseMedia
import RTCSession
import SFU
import Signaling
import Synchronization

/// What a subscriber node tells whoever runs it (the executable prints these; tests read them).
public enum SubscriberNodeEvent: Sendable {
    case signalingConnected(url: String, peerId: String)
    case signalingLost(reason: String)
    case serverError(code: SignalingErrorCode?, details: String)
    /// The server refused us for a busy room or publisher (`roomFull`): we ask again after `retryIn`.
    case roomBusy(room: String, details: String, retryIn: Duration)
    case sessionStarted(sessionId: String, producer: String)
    case connected(sessionId: String)
    /// The candidate pair the session's media comes over (`relay` with a relay-only policy).
    case mediaRoute(sessionId: String, route: ICERoute)
    /// The jitter buffer's latency changed (`JitterLatency`).
    case jitterLatency(sessionId: String, ms: Int, retransmissionRoundTripMs: Double)
    case sessionEnded(sessionId: String, reason: String)
    /// The video decoded nothing for `silentFor`: a keyframe was asked for (the
    /// `attempt`th since the last decoded frame).
    case keyframeRequested(sessionId: String, attempt: Int, silentFor: Duration)
    /// A remote ICE candidate was refused (reported rate-limited per `kind`:
    /// `unreported` of that kind since the last report, `total` so far).
    case candidateRefused(sessionId: String, kind: String, details: String, unreported: Int, total: Int)
    case controlOpen
    /// None of the session's first frames carried a pose: taps can only go as screen
    /// coordinates (`tapnaive`); said once per session.
    case publisherWithoutPose(sessionId: String, producer: String, frames: Int)
    /// A control request that got no reply: in time, or before its session ended.
    case requestUnanswered(id: String, type: String, reason: String)
    /// A request we sent on the control channel.
    case requestSent(id: String, type: String, text: String)
    /// What the publisher answered or announced.
    case reply(ControlReply)
    /// How far an annotation of a known true point landed from it (`tapWorld`).
    case placement(PlacementReport)
    /// One of our annotations as the publisher placed it: where, and how (`placement`).
    case annotationPlaced(Annotation)
    /// Janus offered us the room's publisher (`feed`) for the session.
    case sfuSubscribed(sessionId: String, room: UInt64, feed: UInt64, server: String)
    /// Our voice through the SFU's voice room.
    case sfuVoice(sessionId: String, SFUVoiceNote)
    case error(String)
}
