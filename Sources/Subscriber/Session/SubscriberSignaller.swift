import RTCModel
import Signaling

/// Where the subscriber negotiates a session's media: the publisher itself over the
/// signaling server (`DirectSignaller`), or an SFU standing in for it (`JanusSignaller`;
/// a WHEP client would be a third). The session machine says what to negotiate
/// (`SubscriberSession.Negotiation`) and the node hands it here, in the machine's order,
/// under the node's lock: `carry` must only queue, never block or call back into the
/// node. What the other side says comes back on `events` as the machine's
/// `NegotiationEvent`s.
protocol SubscriberSignaller: Sendable {
    func carry(_ negotiation: SubscriberSession.Negotiation)
    /// The other side's word on a session, in order; finishes when the signaller stops.
    var events: AsyncStream<(sessionId: String, event: SubscriberSession.NegotiationEvent)> { get }
    /// Lets go of everything and returns once its own tasks have ended (the node is
    /// stopping); `events` finishes.
    func stop() async
}

/// The publisher negotiates over the signaling server: our answer and candidates go to it
/// as `peer` messages of the session; its offer and candidates come as the server's
/// messages, which the machine reads itself (the same connection carries the session's
/// start and end), so `events` says nothing.
package final class DirectSignaller: SubscriberSignaller {
    private let link: any SignalingLink
    let events: AsyncStream<(sessionId: String, event: SubscriberSession.NegotiationEvent)>
    private let finish: AsyncStream<(sessionId: String, event: SubscriberSession.NegotiationEvent)>.Continuation

    init(link: any SignalingLink) {
        self.link = link
        (events, finish) = AsyncStream.makeStream()
    }

    func carry(_ negotiation: SubscriberSession.Negotiation) {
        guard let message = Self.message(for: negotiation) else { return }
        try? link.send(message)  // only queues; a lost connection is the link's own event
    }

    func stop() async { finish.finish() }

    /// The message to the publisher's side of the session, if the step needs one.
    package static func message(for negotiation: SubscriberSession.Negotiation) -> ClientMessage? {
        switch negotiation {
        case .start, .end:
            nil  // the server starts and ends the session; the publisher offers by itself
        case let .answer(sessionId, sdp):
            .peer(PeerMessage(sessionId: sessionId, payload: .sdp(SignalingSDP(type: "answer", sdp: sdp))))
        case let .candidate(sessionId, candidate):
            .candidate(candidate.candidate, mlineIndex: candidate.mlineIndex, sessionId: sessionId)
        }
    }
}
