import RTCModel
import Signaling

extension SubscriberSession {
    /// What the SFU says of a session's subscription.
    public enum SFUEvent: Sendable, Equatable {
        /// Subscribed to the publisher's feed: the SFU's offer.
        case offer(sdp: String, feed: UInt64)
        /// The SFU ended the subscription's peer connection (Janus's `hangup`, `detached`).
        case hungUp(reason: String)
        /// The connection to the SFU is gone (closed, unreachable, unanswered).
        case lost(reason: String)
        /// The SFU refused the subscription or our answer; `roomGone`: the room does not exist.
        case refused(reason: String, roomGone: Bool)
    }

    /// What the SFU said of the session's subscription: its offer is answered as the
    /// publisher's would be; a hang-up, a lost connection or a refusal ends the session
    /// and seeks again, as a failed peer connection does.
    mutating func handleSFU(_ event: SFUEvent, sessionId: String, now: UInt64) -> [Effect] {
        guard viaSFU, case .active(let current, _) = phase, current == sessionId else {
            return [.debug("SFU event for session \(sessionId), not ours: \(event)")]
        }
        switch event {
        case let .offer(sdp, feed):
            guard let room = config.sfu?.room else { return [] }
            return [.emit(.sfuSubscribed(sessionId: sessionId, room: room, feed: feed))]
                + handlePeer(PeerMessage(sessionId: sessionId, payload: .sdp(SignalingSDP(type: "offer", sdp: sdp))))
        case .hungUp(let reason):
            return endSession(reason: "the SFU hung up (\(reason))", tellServer: true) + seekAgainLater(now: now)
        case .lost(let reason):
            return [.emit(.error("sfu: \(reason)"))]
                + endSession(reason: "the connection to the SFU was lost (\(reason))", tellServer: true) + seekAgainLater(now: now)
        case let .refused(reason, roomGone):
            let what = roomGone ? "the SFU has no room \(config.sfu?.room ?? 0)" : "the SFU refused the subscription"
            return [.emit(.error("sfu: \(reason)"))]
                + endSession(reason: "\(what): \(reason)", tellServer: true) + seekAgainLater(now: now)
        }
    }

    /// One of our candidates, to whoever negotiates the media.
    func candidate(candidate: ICECandidate, sessionId: String) -> [Effect] {
        viaSFU ? [.trickleThroughSFU(sessionId: sessionId, candidate)]
            : send(.candidate(candidate.candidate, mlineIndex: candidate.mlineIndex, sessionId: sessionId))
    }
}
