import PoseCastKit
import RTCModel
import Signaling

/// What the subscriber's session machine is fed (`Event`) and what it asks the node to
/// do (`Effect`).
extension SubscriberSession {
    public enum Event: Sendable {
        case signalingConnected(peerId: String)
        case signalingLost(reason: String)
        case server(ServerMessage)
        /// The answer to the session's offer is made (and set locally).
        case answerCreated(sessionId: String, sdp: String)
        /// The offer could not be answered.
        case answerFailed(sessionId: String, reason: String)
        /// A remote candidate could not be added: `kind` for counting (an
        /// `ICECandidateCheck.Kind`, or `failed`), `reason` in words. The others still go in.
        case candidateFailed(sessionId: String, kind: String, reason: String)
        case localCandidate(sessionId: String, ICECandidate)
        /// Connected, and the publisher's DTLS certificate matched its offer.
        case peerConnected(sessionId: String)
        /// Connected, but the publisher's DTLS certificate did not match its offer.
        case peerRejected(sessionId: String, reason: String)
        /// The peer connection failed or closed (`state` says which, for the reason).
        case peerEnded(sessionId: String, state: String)
        case controlChannelOpen
        /// The media decoded a frame (`pose`: what it carried, flagged `missing` or not;
        /// through an SFU its frame id and capture time prove we receive the stream).
        case frameDecoded(withPose: Bool, pose: FramePose? = nil)
        /// A control request went out (`id`, its type), and the answer to one came in.
        case requestSent(id: String, type: String)
        case replyReceived(id: String)
        /// Time passes: the stall watchdog and the timers of `wake`. `decodeBranches` is
        /// how many video streams the current media decodes (what a stall report says).
        case tick(decodeBranches: Int)
        /// What the other side of the session's negotiation said, through the signaller
        /// (an SFU's offer, hang-up, lost connection or refusal).
        case negotiation(sessionId: String, NegotiationEvent)
        /// The node is stopping.
        case stopping
    }


    public enum Effect: Sendable {
        case send(ClientMessage)
        /// Build fresh media for the session (replacing any), answer the offer with it,
        /// then `answerCreated` or `answerFailed`.
        case answer(sessionId: String, offer: String)
        /// Add these remote candidates to the current media, in order (`early`: held until now).
        case addCandidates(sessionId: String, [ICECandidate], early: Bool)
        /// Stop the current media, if any.
        case stopMedia
        /// Ask the publisher for a keyframe on the current media's video (RTCP PLI/FIR).
        case requestKeyframe(sessionId: String)
        /// Feed a `tick` at this time (monotonic nanoseconds) or soon after.
        case wake(at: UInt64)
        case emit(SubscriberNodeEvent)
        case debug(String)
        /// For the node's signaller (`SubscriberSignaller`), in this order with `send`.
        case negotiate(Negotiation)
        /// A control message from the publisher that came over signaling (through an SFU).
        case control(sessionId: String, text: String)
    }
}
