import PoseCastKit
import RTCModel
import Signaling

/// The subscriber's session logic as a pure state machine, the way `SignalingHub` is the
/// server's: fed what happens (`Event`) with the time it happened (monotonic
/// nanoseconds), it returns what the node must do (`Effect`). No socket, no GStreamer,
/// no task, no clock: `SubscriberNode` carries the effects out and feeds back what came
/// of them, and ticks it (`tick`) for the stall watchdog and the timers it asks for.
///
/// - On every signaling connection it declares itself a listener and consumer of the
///   room and lists its producers; the first (or `producerId`) gets a session request.
///   A refused declaration leaves us outside the room: the list that follows it is not
///   ours and is ignored.
/// - A busy room (`roomFull` for the declaration or for the session request) is said
///   once per refusal (`roomBusy`) and tried again after `config.roomRetry`, longer with
///   each refusal in a row: the declaration is sent again, or the producers listed again.
/// - Remote candidates that overtake the offer wait until it is being answered.
/// - A lost signaling connection ends a session still being set up; a connected one
///   keeps its media (the stall watchdog ends it if it stops).
/// - A connected session whose video decodes nothing for `keyframeRetry.initial` asks
///   the publisher for a keyframe, and again after each wait of `keyframeRetry` while
///   nothing decodes (a lost keyframe, or a request lost on the way, is not left to the
///   watchdog); a decoded frame ends the asking.
/// - A session that decodes nothing for `stallTimeout` is ended and sought again.
/// - A session that ends without a picture from our side (the offer could not be
///   answered, the peer connection failed or closed) is sought again after
///   `config.roomRetry`, longer each time in a row until a frame decodes; a publisher
///   that failed the DTLS check is not.
/// - The room's publisher under a new peer id while a session runs: `liveMediaWindow`
///   later, a frame in the window's second half keeps the session (a signaling restart:
///   follow the new id); none ends it and asks the new publisher.
/// - The media is negotiated in one vocabulary whoever is on the other side
///   (`Negotiation` out, `NegotiationEvent` in; SubscriberSession+Negotiation.swift): the
///   node's signaller carries it to the publisher over signaling, or to an SFU
///   (`config.sfu`). Through an SFU the session on signaling still stands for the expert
///   (its role, its slot, the control messages, which come over signaling); the
///   session's start subscribes there, and what the SFU says of the subscription (hung
///   up, its connection lost, refused, the room gone) ends the session and seeks again,
///   as a failed peer connection does. Through an SFU the publisher cannot see our
///   media, so a decoded frame names itself to it (`receiving`: its frame id and capture
///   time, over signaling) at once and then every `config.receptionProofInterval`; the
///   publisher ends a session that never does or stops (docs/SCALING.md).
public struct SubscriberSession: Sendable {
    public enum Phase: Sendable, Equatable {
        case idle
        case requested(producer: String)
        case active(sessionId: String, producer: String)
    }

    public let config: SubscriberNodeConfig
    public private(set) var phase: Phase = .idle
    /// The session's peer connection is up.
    public private(set) var connected = false
    private var signalingUp = false
    /// Media was built for the session's offer: candidates go straight to it.
    private var hasMedia = false
    private var controlAnnounced = false
    /// The control channel opened before the publisher was verified.
    private var controlWaiting = false
    private var earlyCandidates: [ICECandidate] = []
    /// Our answer went out; local candidates gathered before that wait in `heldCandidates`
    /// (the publisher cannot add a candidate before the description it belongs to).
    private var answerSent = false
    private var heldCandidates: [ICECandidate] = []
    private var sessionStartedAt: UInt64?
    private var lastFrameAt: UInt64?
    /// Through an SFU: when we last named a decoded frame to the publisher, and how many we named.
    private var lastProofAt: UInt64?
    private var proofs = 0
    /// Frames of this session decoded so far without a usable pose, while none had one.
    private var framesWithoutPose = 0
    private var sawPose = false
    private var noPoseAnnounced = false
    /// Control requests sent and not yet answered: type and when they went out.
    private var pending: [String: (type: String, at: UInt64)] = [:]
    /// Publishers announced under a new id, to settle on when their window is over.
    private var settling: [(producer: String, at: UInt64)] = []
    /// Where our `setPeerStatus` stands on the current connection.
    private var declaration = Declaration.pending
    /// `roomFull` answers in a row.
    private var roomRefusals = 0
    /// When to try the room again after a `roomFull`; nil when no retry is due.
    private var retryAt: UInt64?
    /// Keyframes asked for since the video last decoded a frame, and when to ask next.
    private var keyframeAsks = 0
    private var nextKeyframeAskAt: UInt64?
    /// Sessions in a row that ended without a picture on our side, and when to look for
    /// the publisher again (nil: not due).
    private var failedSessions = 0
    private var reseekAt: UInt64?
    /// Remote candidates refused, by kind, and which refusals to report: one per kind a
    /// second, those left when the refusals stop summed up a second after the last report.
    public private(set) var candidateRefusals = RefusalLog<String>(interval: 1)

    /// A refused-candidate report; `line.peer` is the session of the latest refusal.
    static func candidateReport(_ line: RefusalLog<String>.Line) -> Effect {
        .emit(.candidateRefused(sessionId: line.peer, kind: line.code, details: line.details,
                                unreported: line.unlogged, total: line.total))
    }

    private enum Declaration: Sendable {
        /// Sent, with a `list` right behind it: the list's answer says it was accepted.
        case pending
        /// Accepted: lists and announcements are our room's.
        case accepted
        /// Refused: we are outside the room until we declare again.
        case refused
    }

    public init(config: SubscriberNodeConfig) { self.config = config }

    /// Media through an SFU rather than from the publisher.
    var viaSFU: Bool { config.sfu != nil }

    public mutating func handle(_ event: Event, now: UInt64) -> [Effect] {
        switch event {
        case .signalingConnected(let peerId):
            signalingUp = true
            roomRefusals = 0
            retryAt = nil
            return declare() + [.emit(.signalingConnected(url: config.signalingURL, peerId: peerId))]
        case .signalingLost(let reason):
            signalingUp = false
            retryAt = nil
            // A request or negotiation under way died with the connection; a connected
            // session keeps its media (the watchdog ends it if it stalls).
            return [.emit(.signalingLost(reason: reason))]
                + (connected ? [] : endSession(reason: "signaling connection lost", tellServer: false))
        case .server(let message):
            return handle(message, now: now)
        case let .answerCreated(sessionId, sdp):
            guard case .active(let current, _) = phase, current == sessionId else { return [] }
            let early = earlyCandidates
            let held = heldCandidates
            earlyCandidates = []
            heldCandidates = []
            answerSent = true
            return [.negotiate(.answer(sessionId: sessionId, sdp: sdp))]
                + held.map { .negotiate(.candidate(sessionId: sessionId, $0)) }
                + (early.isEmpty ? [] : [.addCandidates(sessionId: sessionId, early, early: true)])
        case let .answerFailed(sessionId, reason):
            return [.emit(.error("session \(sessionId): \(reason)"))]
                + endSession(reason: "could not answer: \(reason)", tellServer: true) + seekAgainLater(now: now)
        case let .candidateFailed(sessionId, kind, reason):
            guard let line = candidateRefusals.record(kind, peer: sessionId, details: reason, at: Double(now) / 1e9) else {
                return candidateRefusals.nextSummaryNanos.map { [.wake(at: $0)] } ?? []
            }
            return [Self.candidateReport(line)]
        case let .localCandidate(sessionId, candidate):
            guard case .active(let current, _) = phase, current == sessionId else { return [] }
            guard answerSent else {
                heldCandidates.append(candidate)
                return []
            }
            return [.negotiate(.candidate(sessionId: sessionId, candidate))]
        case .peerConnected(let sessionId):
            guard case .active(let current, _) = phase, current == sessionId else { return [] }
            connected = true
            let waiting = controlWaiting && !controlAnnounced
            if waiting { controlAnnounced = true }
            controlWaiting = false
            return [.emit(.connected(sessionId: sessionId))] + (waiting ? [.emit(.controlOpen)] : [])
        case let .peerRejected(sessionId, reason):
            guard case .active(let current, _) = phase, current == sessionId else { return [] }
            // Not asked again by itself: a forged certificate is no network hiccup.
            return [.emit(.error("session \(sessionId): \(reason)"))] + endSession(reason: reason, tellServer: true)
        case let .peerEnded(sessionId, state):
            let current = if case .active(let id, _) = phase { id == sessionId } else { false }
            return endSession(reason: "peer connection \(state)", tellServer: true) + (current ? seekAgainLater(now: now) : [])
        case .controlChannelOpen:
            // The channel may arrive already open or open later; say so once per session.
            guard !controlAnnounced else { return [] }
            // Nothing goes over it before the publisher is verified.
            guard connected else { controlWaiting = true; return [] }
            controlAnnounced = true
            return [.emit(.controlOpen)]
        case let .frameDecoded(withPose, pose):
            lastFrameAt = now
            keyframeAsks = 0
            nextKeyframeAskAt = nil
            failedSessions = 0
            let proof = proveReception(pose, now: now)
            if withPose { sawPose = true; return proof }
            framesWithoutPose += 1
            guard !sawPose, !noPoseAnnounced, framesWithoutPose >= Self.framesBeforeNoPose,
                  case .active(let sessionId, let producer) = phase else { return proof }
            noPoseAnnounced = true
            return proof + [.emit(.publisherWithoutPose(sessionId: sessionId, producer: producer, frames: framesWithoutPose))]
        case let .requestSent(id, type):
            pending[id] = (type, now)
            return []
        case .replyReceived(let id):
            pending[id] = nil
            return []
        case .tick(let decodeBranches):
            var effects = checkStall(now: now, decodeBranches: decodeBranches)
            effects += candidateRefusals.summaries(at: Double(now) / 1e9).map(Self.candidateReport)
            effects += askForKeyframe(now: now, decodeBranches: decodeBranches)
            if let at = reseekAt, at <= now, signalingUp, case .idle = phase {
                reseekAt = nil
                effects += send(.list)
            }
            let overdue = pending.filter { Self.elapsed(from: $0.value.at, to: now) >= config.controlReplyTimeout }
            for (id, request) in overdue.sorted(by: { $0.key < $1.key }) {
                pending[id] = nil
                effects.append(.emit(.requestUnanswered(id: id, type: request.type,
                                                        reason: "no reply within \(config.controlReplyTimeout)")))
            }
            if let at = retryAt, at <= now, signalingUp {
                retryAt = nil
                effects += declaration == .refused ? declare() : send(.list)
            }
            let due = settling.filter { $0.at <= now }
            settling.removeAll { $0.at <= now }
            for producer in due { effects += settle(on: producer.producer, now: now) }
            return effects
        case let .negotiation(sessionId, event):
            return handleNegotiation(event, sessionId: sessionId, now: now)
        case .stopping:
            signalingUp = false
            return endSession(reason: "subscriber stopping", tellServer: true)
        }
    }


    private mutating func handle(_ message: ServerMessage, now: UInt64) -> [Effect] {
        switch message {
        case .list(let producers):
            switch declaration {
            case .refused: return [.debug("ignoring the list of a room we are not in")]
            case .pending:
                declaration = .accepted
                roomRefusals = 0
            case .accepted: break
            }
            guard let producer = producers.first(where: { config.producerId == nil || $0.id == config.producerId }) else { return [] }
            return producerAnnounced(producer.id, now: now)
        case let .peerStatusChanged(peerId, roles, _, _, _):
            guard declaration != .refused else { return [] }
            if roles.contains(.producer), config.producerId == nil || config.producerId == peerId {
                return producerAnnounced(peerId, now: now)
            } else if roles.isEmpty, case .active(_, let producer) = phase, producer == peerId {
                return endSession(reason: "the publisher left", tellServer: false)
            }
            return []
        case let .sessionStarted(producer, sessionId):
            roomRefusals = 0
            phase = .active(sessionId: sessionId, producer: producer)
            sessionStartedAt = now
            lastFrameAt = nil
            resetPoseWatch()
            return [.emit(.sessionStarted(sessionId: sessionId, producer: producer))]
                + [.negotiate(.start(sessionId: sessionId))]
        case .peer(let message):
            return handlePeer(message, now: now)
        case .endSession(let sessionId):
            guard case .active(let current, _) = phase, current == sessionId else { return [] }
            return endSession(reason: "ended by the publisher or the server", tellServer: false) + send(.list)
        case let .error(details, code, _):
            // Messages are answered in order: an error a declaration can get, before the
            // list's answer, refuses it (a late ICE candidate's unknownSession does not).
            if declaration == .pending, let code, Self.declarationRefusals.contains(code) { declaration = .refused }
            // A refused startSession leaves us waiting for nothing: look again.
            if case .requested = phase { phase = .idle }
            guard code == .roomFull else { return [.emit(.serverError(code: code, details: details))] }
            roomRefusals += 1
            let delay = config.roomRetry.delay(afterRefusals: roomRefusals)
            let at = now + RetryBackoff.nanos(delay)
            retryAt = at
            return [.emit(.roomBusy(room: config.room, details: details, retryIn: delay)), .wake(at: at)]
        case .welcome, .startSession:
            return []
        }
    }

    /// Media made afresh for the session's offer: nothing of a dead session can leak into
    /// the next.
    mutating func answer(offer sdp: String, sessionId: String) -> [Effect] {
        hasMedia = true
        connected = false
        controlAnnounced = false
        return [.answer(sessionId: sessionId, offer: sdp)]
    }

    mutating func handlePeer(_ message: PeerMessage, now: UInt64) -> [Effect] {
        guard case .active(let sessionId, _) = phase, sessionId == message.sessionId else {
            return [.debug("peer message for session \(message.sessionId), not ours")]
        }
        switch message.payload {
        case .sdp(let sdp):
            guard sdp.type == "offer" else {
                let error = RTCError.invalidDescription("expected an offer, got \(sdp.type)")
                return [.emit(.error("session \(sessionId): \(error)"))]
                    + endSession(reason: "could not answer: \(error)", tellServer: true)
            }
            return handleNegotiation(.offer(sdp: sdp.sdp, feed: nil, server: nil), sessionId: sessionId, now: now)
        case .ice(let ice):
            // Trickled candidates can overtake the offer: keep them until it is answered.
            let candidate = ICECandidate(mlineIndex: ice.sdpMLineIndex, candidate: ice.candidate)
            guard hasMedia else {
                earlyCandidates.append(candidate)
                return []
            }
            return [.addCandidates(sessionId: sessionId, [candidate], early: false)]
        case .control(let text):
            // Over signaling only through an SFU; a direct publisher uses the data channel.
            guard viaSFU else { return [.debug("session \(sessionId): a control message over signaling, not through an SFU: ignored")] }
            return [.control(sessionId: sessionId, text: text)]
        }
    }

    /// The room's publisher is `producer` (a room has one). A session with another peer id
    /// is either that same publisher back on a restarted signaling server under a new id,
    /// or a new publisher after the old one died while the server was away. The media
    /// tells which: `liveMediaWindow` later, frames still arriving mean the session is
    /// alive (keep it, follow the new id so its leaving is seen); none lately mean it is
    /// dead (drop it and ask the new publisher now, not after `stallTimeout`).
    private mutating func producerAnnounced(_ producer: String, now: UInt64) -> [Effect] {
        guard case .active(_, let current) = phase, current != producer else { return requestSession(with: producer) }
        let last = lastFrameAt ?? sessionStartedAt ?? now
        // Nothing decoded for a whole window already: no need to watch any longer.
        if Self.elapsed(from: last, to: now) > config.liveMediaWindow { return settle(on: producer, now: now) }
        let at = now + Self.nanos(config.liveMediaWindow)
        settling.append((producer, at))
        return [.wake(at: at)]
    }

    private mutating func settle(on producer: String, now: UInt64) -> [Effect] {
        var effects: [Effect] = []
        if case .active(let sessionId, let current) = phase, current != producer {
            // Alive: a frame in the second half of the window, well after the announcement
            // (a dead publisher's last frames leave the jitter buffer within its latency).
            if let last = lastFrameAt, Self.elapsed(from: last, to: now) < config.liveMediaWindow / 2 {
                phase = .active(sessionId: sessionId, producer: producer)
            } else {
                // A session of the old server: the new one does not know it, nothing to tell it.
                effects += endSession(reason: "publisher \(current) went silent and \(producer) publishes in the room",
                                      tellServer: false)
            }
        }
        return signalingUp ? effects + requestSession(with: producer) : effects
    }

    /// Declares us in the room, then lists its producers (the list's answer confirms the declaration).
    private mutating func declare() -> [Effect] {
        declaration = .pending
        // Our pose transport rides in the meta the publisher gets with `startSession`.
        var fields: [String: JSONValue] = [:]
        if config.media.poseTransport != .headerExtension {
            fields[PoseTransport.metaKey] = .string(config.media.poseTransport.rawValue)
        }
        // Media through an SFU: the publisher opens no peer for us; control goes over signaling.
        if config.sfu != nil { fields[PeerMessage.viaKey] = .string(PeerMessage.viaSFU) }
        let meta: JSONValue? = fields.isEmpty ? nil : .object(fields)
        return send(.setPeerStatus(PeerStatus(roles: [.listener, .consumer], meta: meta, room: config.room,
                                              role: config.role, token: config.token))) + send(.list)
    }

    private mutating func requestSession(with producer: String) -> [Effect] {
        guard case .idle = phase else { return [] }
        phase = .requested(producer: producer)
        return send(.startSession(peerId: producer))
    }

    /// A keyframe request when the connected session's video has decoded nothing for
    /// `keyframeRetry.initial`, then after each of its waits while that lasts, each on a
    /// wake of its own at the time it is due (on the 500 ms tick a freeze lasted up to
    /// half a second more: a capped link's 1.53 s freeze began its ask at 1.47 s). Through
    /// an SFU the first frame is asked for sooner (`firstKeyframeAskThroughSFU`): the
    /// keyframe Janus asked for at our subscription may have gone by before our
    /// connection was up, and the next periodic one is up to 10 s away.
    private mutating func askForKeyframe(now: UInt64, decodeBranches: Int) -> [Effect] {
        guard case .active(let sessionId, _) = phase, connected, decodeBranches > 0,
              let since = lastFrameAt ?? sessionStartedAt else { return [] }
        let firstThroughSFU = viaSFU && lastFrameAt == nil && keyframeAsks == 0
        let wait = firstThroughSFU ? config.firstKeyframeAskThroughSFU : config.keyframeRetry.initial
        let due = nextKeyframeAskAt ?? since + RetryBackoff.nanos(wait)
        guard now >= due else { return [.wake(at: due)] }
        keyframeAsks += 1
        nextKeyframeAskAt = now + RetryBackoff.nanos(config.keyframeRetry.delay(afterRefusals: keyframeAsks))
        let silent = Self.elapsed(from: since, to: now)
        return [.requestKeyframe(sessionId: sessionId),
                .emit(.keyframeRequested(sessionId: sessionId, attempt: keyframeAsks, silentFor: silent))]
    }

    /// Through an SFU, connected: names the decoded frame to the publisher (`receiving`,
    /// over signaling) when none was named yet or `config.receptionProofInterval` ago.
    /// Its reply is an ack, or an error the node reports (ids `rx…`, `isReceptionProof`).
    private mutating func proveReception(_ pose: FramePose?, now: UInt64) -> [Effect] {
        guard viaSFU, connected, let pose, case .active(let sessionId, _) = phase else { return [] }
        if let last = lastProofAt, Self.elapsed(from: last, to: now) < config.receptionProofInterval { return [] }
        lastProofAt = now
        proofs += 1
        let request = ControlEnvelope(id: "\(Self.proofPrefix)\(proofs)",
                                      request: .receiving(frameId: pose.frameID, captureTimeNanos: pose.captureTimeNanos))
        return send(.peer(PeerMessage(sessionId: sessionId, payload: .control(ControlCodec.encode(request)))))
    }

    /// The ids of our `receiving` requests start so.
    static let proofPrefix = "rx"

    /// Whether a reply answers one of our `receiving` requests (not shown as an answer to the expert).
    public static func isReceptionProof(id: String?) -> Bool { id?.hasPrefix(proofPrefix) ?? false }

    /// After a session that ended without a picture on our side: list the room's
    /// publishers again after a backoff that grows while such endings follow each other.
    mutating func seekAgainLater(now: UInt64) -> [Effect] {
        failedSessions += 1
        let delay = config.roomRetry.delay(afterRefusals: failedSessions)
        let at = now + RetryBackoff.nanos(delay)
        reseekAt = at
        return [.wake(at: at)]
    }

    private mutating func checkStall(now: UInt64, decodeBranches: Int) -> [Effect] {
        guard case .active = phase, let started = sessionStartedAt else { return [] }
        guard Self.elapsed(from: lastFrameAt ?? started, to: now) > config.stallTimeout else { return [] }
        // Say how far the media got, so a stall can be placed: never connected, no RTP
        // stream announced, or a stream that stopped decoding.
        let detail: String
        if !connected { detail = "peer connection not up" }
        else if decodeBranches == 0 { detail = "connected, but no video stream arrived" }
        else { detail = lastFrameAt != nil ? "the video stopped" : "a video stream arrived, but no frame decoded" }
        return endSession(reason: "no frames for \(config.stallTimeout) (\(detail))", tellServer: true) + send(.list)
    }

    mutating func endSession(reason: String, tellServer: Bool) -> [Effect] {
        var sessionId: String?
        if case .active(let id, _) = phase { sessionId = id }
        phase = .idle
        hasMedia = false
        connected = false
        sessionStartedAt = nil
        lastFrameAt = nil
        lastProofAt = nil
        keyframeAsks = 0
        nextKeyframeAskAt = nil
        controlAnnounced = false
        controlWaiting = false
        resetPoseWatch()
        earlyCandidates.removeAll()
        heldCandidates.removeAll()
        answerSent = false
        // Requests still waiting will never be answered: their channel went with the session.
        let unanswered = pending.sorted { $0.key < $1.key }.map {
            Effect.emit(.requestUnanswered(id: $0.key, type: $0.value.type, reason: "the session ended before a reply"))
        }
        pending.removeAll()
        guard let sessionId else { return [.stopMedia] + unanswered }
        return [.stopMedia, .negotiate(.end(sessionId: sessionId))] + (tellServer ? send(.endSession(sessionId: sessionId)) : [])
            + [.emit(.sessionEnded(sessionId: sessionId, reason: reason))] + unanswered
    }

    private mutating func resetPoseWatch() {
        framesWithoutPose = 0
        sawPose = false
        noPoseAnnounced = false
    }

    /// Frames without a pose, from a session's start, before the publisher is said to send none.
    static let framesBeforeNoPose = 30

    /// True once this session's publisher is known to send frames without a pose (none
    /// of its first `framesBeforeNoPose` frames had one, nor any since).
    public var publisherSendsNoPose: Bool { noPoseAnnounced && !sawPose }

    /// Why no control request can be sent now, in the words a person needs.
    public var controlUnavailableReason: String {
        switch phase {
        case .idle, .requested: return "not connected to a publisher (no session)"
        case .active:
            if !connected { return "the session with the publisher is still being set up" }
            if !controlAnnounced { return "the publisher has opened no control channel in this session (it takes no requests)" }
            return "the control channel is not open"
        }
    }

    /// A message to the server, or nothing while there is no connection.
    func send(_ message: ClientMessage) -> [Effect] {
        signalingUp ? [.send(message)] : []
    }


    /// The codes with which the server can refuse a `setPeerStatus`.
    static let declarationRefusals: Set<SignalingErrorCode> = [.roomFull, .unauthorized, .wrongRole, .malformed, .rateLimited]

    static func nanos(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    static func elapsed(from start: UInt64, to now: UInt64) -> Duration {
        now >= start ? .nanoseconds(Int64(now - start)) : .zero
    }
}
