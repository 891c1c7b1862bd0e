import PoseCastKit
import RTCModel
import Signaling

/// Sessions whose media comes through the SFU: started connected-pending with no branch,
/// proved alive by the frames they name, ended when they stop naming any.
extension PublisherSessions {
    /// A session whose media comes through the SFU (`{"via": "sfu"}` in its consumer's
    /// meta): the server has checked its room, role and token, so it is connected at
    /// once, with no branch; its control requests come as `control` peer messages, rate
    /// limited and role checked as on a data channel; broadcasts reach it through the
    /// SFU. Refused when we publish into no SFU.
    mutating func startViaSFU(_ sessionId: String, consumer: String, role: RoomRole, now: UInt64) -> [Effect] {
        guard config.publishesToSFU else {
            return [.send(.endSession(sessionId: sessionId)),
                    .emit(.error("session \(sessionId) of \(consumer) asked for media through an SFU; this publisher publishes into none (--sfu)"))]
        }
        if let wait = unproven.wait(consumer, now: now) {
            let seconds = Int((Double(wait) / 1e9).rounded(.up))
            return [.send(.endSession(sessionId: sessionId)),
                    .emit(.error("session \(sessionId) of \(consumer) refused: its sessions through the SFU ended again and again "
                                 + "without naming a frame they received; none for it for \(seconds) s more"))]
        }
        let transport = codec.inBandPoseTransport
        var session = Session(role: role, consumer: consumer, startedAt: now, limiter: ControlRateLimiter(limit: config.controlRate, now: now),
                              connection: connection ?? 0, poseTransport: transport)
        session.viaSFU = true
        session.step = .awaitingReception
        sessions[sessionId] = session
        return [.emit(.sessionStarted(sessionId: sessionId, consumer: consumer, role: role, poseTransport: transport)),
                .wake(at: now + RetryBackoff.nanos(config.setupTimeout))]
    }

    /// The `receiving` request in a control message, if that is what it is.
    static func receptionProof(_ message: DataChannelMessage) -> (id: String, frameId: UInt32, captureTimeNanos: UInt64)? {
        guard case .text(let text) = message, let envelope = try? ControlCodec.decodeRequest(text),
              case let .receiving(frameId, nanos) = envelope.request else { return nil }
        return (envelope.id, frameId, nanos)
    }

    /// A session through the SFU named a frame: one of ours with its capture time, it is
    /// receiving (the first time: connected, the annotation list sent, its idle clock
    /// started); otherwise refused, and its clock runs on.
    mutating func receptionChecked(_ sessionId: String, requestId: String, frameId: UInt32, refusal: String?,
                                           now: UInt64) -> [Effect] {
        guard let session = sessions[sessionId], session.viaSFU else { return [] }
        if let refusal {
            let error = ControlError(id: requestId, code: .invalidValue, message: "frame \(frameId): \(refusal)")
            return answer(ControlOutcome(reply: .error(error), annotationsChanged: false, requestType: "receiving"), sessionId)
        }
        sessions[sessionId]?.lastReception = now
        unproven.proved(session.consumer)
        let ack: [Effect] = [.sendControl(.ack(id: requestId, annotationId: nil), sessionId: sessionId),
                             .wake(at: now + RetryBackoff.nanos(config.receptionTimeout))]
        guard !session.connected else { return ack }
        sessions[sessionId]?.connected = true
        sessions[sessionId]?.step = .connected
        return ack + [.emit(.subscriberConnected(sessionId: sessionId)), .sendAnnotations(sessionId: sessionId)]
    }

    /// Ends the sessions through the SFU that named no frame they received for `config.receptionTimeout`.
    mutating func expireReceptions(now: UInt64) -> [Effect] {
        let limit = RetryBackoff.nanos(config.receptionTimeout)
        let silent = sessions.filter { _, session in
            guard session.viaSFU, session.connected, let last = session.lastReception else { return false }
            return now >= last + limit
        }
        return silent.sorted { $0.key < $1.key }.flatMap { id, _ in
            endSession(id, reason: "through the SFU, but it named no frame it received for \(config.receptionTimeout)", tellServer: true)
        }
    }
}
