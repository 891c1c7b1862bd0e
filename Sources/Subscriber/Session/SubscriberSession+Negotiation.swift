import RTCModel
import Signaling

/// Negotiating a session's media, whoever stands on the other side: the publisher itself,
/// over the signaling server, or an SFU standing in for it (`config.sfu`). The machine
/// says what to negotiate (`Negotiation`, carried out by the node's `SubscriberSignaller`)
/// and hears back what the other side says (`NegotiationEvent`) the same way for both:
/// only the signaller knows where the messages go.
extension SubscriberSession {
    /// What the node's signaller is to do for a session.
    public enum Negotiation: Sendable, Equatable {
        /// The session started: ask for its media (an SFU is subscribed to; a publisher
        /// offers by itself once the server started the session).
        case start(sessionId: String)
        /// Our answer to the session's offer.
        case answer(sessionId: String, sdp: String)
        /// One of our ICE candidates.
        case candidate(sessionId: String, ICECandidate)
        /// The session ended: let go of what was asked for (an SFU's subscription).
        case end(sessionId: String)

        public var sessionId: String {
            switch self {
            case .start(let id), .answer(let id, _), .candidate(let id, _), .end(let id): id
            }
        }
    }

    /// What the other side of a session's negotiation says. A publisher's offers and
    /// candidates come as the server's `peer` messages; an SFU's through the signaller.
    public enum NegotiationEvent: Sendable, Equatable {
        /// The offer to answer; `feed`: the SFU's id for the publisher's stream, and the
        /// SFU's address (one of several: a cascade's edges).
        case offer(sdp: String, feed: UInt64?, server: String? = nil)
        /// The other side ended the media's peer connection (Janus's `hangup`, `detached`).
        case hungUp(reason: String)
        /// The connection to the other side is gone (closed, unreachable, unanswered).
        case lost(reason: String)
        /// The other side refused the session or our answer; `roomGone`: its room does
        /// not exist.
        case refused(reason: String, roomGone: Bool)
    }

    /// What the other side said of the session's negotiation: an offer is answered; a
    /// hang-up, a lost connection or a refusal ends the session and seeks again, as a
    /// failed peer connection does.
    mutating func handleNegotiation(_ event: NegotiationEvent, sessionId: String, now: UInt64) -> [Effect] {
        guard case .active(let current, _) = phase, current == sessionId else {
            return [.debug("negotiation event for session \(sessionId), not ours: \(event)")]
        }
        switch event {
        case let .offer(sdp, feed, server):
            let subscribed: [Effect] = if let feed, let room = config.sfu?.room {
                [.emit(.sfuSubscribed(sessionId: sessionId, room: room, feed: feed, server: server ?? config.sfu?.urls.first ?? ""))]
            } else { [] }
            return subscribed + answer(offer: sdp, sessionId: sessionId)
        case .hungUp(let reason):
            return endSession(reason: "\(otherSide) hung up (\(reason))", tellServer: true) + seekAgainLater(now: now)
        case .lost(let reason):
            return [.emit(.error("\(viaSFU ? "sfu" : "negotiation"): \(reason)"))]
                + endSession(reason: "the connection to \(otherSide) was lost (\(reason))", tellServer: true) + seekAgainLater(now: now)
        case let .refused(reason, roomGone):
            let what = roomGone ? "\(otherSide) has no room \(config.sfu.map { "\($0.room)" } ?? config.room)"
                : "\(otherSide) refused the subscription"
            return [.emit(.error("\(viaSFU ? "sfu" : "negotiation"): \(reason)"))]
                + endSession(reason: "\(what): \(reason)", tellServer: true) + seekAgainLater(now: now)
        }
    }

    /// Who the session negotiates with, in the words of an ended session's reason.
    private var otherSide: String { viaSFU ? "the SFU" : "the publisher" }
}
