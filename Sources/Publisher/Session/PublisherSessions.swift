import PoseCastKit
import RTCModel
import Signaling

/// The publisher's session logic as a pure state machine, the way `SignalingHub` is the
/// server's: fed what happens (`Event`) with the time it happened, it returns what the
/// node must do (`Effect`). No socket, no GStreamer, no task, no clock: `PublisherNode`
/// carries the effects out and feeds back what came of them.
///
/// - On every signaling connection it declares itself the room's producer. A room that
///   is busy (`roomFull`: another publisher holds it, or no place is left) is never
///   fatal: it says so (`roomBusy`) and declares again after `config.roomRetry`, longer
///   with each refusal in a row, until it gets in or the connection is lost.
/// - `startSession` from the server → a branch is built; a session ended while its
///   branch is being built has it torn down once built ("ended before it was set up").
/// - A built branch starts the session: the control channel and the offer are made;
///   local candidates gathered before the offer went out wait for it (a peer cannot add
///   a candidate before the description it belongs to).
/// - A session remembers the signaling connection it was set up through: a server
///   restarted since does not know it, so neither its offer nor its end is sent there.
/// - Every session's life is bounded: one not connected and verified within
///   `config.setupTimeout` of its start ends, naming the step it stalled at (no offer,
///   no answer, ICE never connected, DTLS never completed); one the server says it does
///   not know (`unknownSession` naming it) ends, since nobody could end it for us.
/// - A session through the SFU (`via: sfu`, no peer of ours) is connected once it names
///   a frame it received with that frame's capture time (`receiving`, checked against the
///   frame history by the node: `checkReception` → `receptionChecked`); before that
///   nothing else it sends is read. One that never does ends at its setup deadline, one
///   that stops for `config.receptionTimeout` ends; a consumer whose sessions end unproven
///   again and again waits before its next (`UnprovenConsumers`).
/// - The publisher keeps its own account of what it allocates: a `startSession` over
///   `config.maxSessionsPerConsumer` for its consumer, or over `config.maxSessions` in
///   all (sessions being set up count), is refused at once (`endSession` to the server),
///   whatever the server let through.
/// - Remote candidates a peer refuses (`candidateFailed`) are counted by kind and
///   reported rate-limited (`candidateRefused`: the first of a kind at once, then at most
///   one report per kind a second, saying how many went unreported; those left when the
///   refusals stop are summed up a second after the last report).
/// - Each session's control messages pass its token bucket (`ControlRateLimiter`, on the
///   injected time) and its role: refusals are answered here, requests to execute go out
///   as `executeControl` and come back as `controlHandled`.
public struct PublisherSessions: Sendable {
    public enum Event: Sendable {
        /// The signaling link is up as `peerId`.
        case signalingConnected(peerId: String)
        case signalingLost(reason: String)
        case server(ServerMessage)
        /// The branch of `buildBranch` is ready (the node holds its peer).
        case branchBuilt(sessionId: String)
        /// Building the branch or negotiating the session failed.
        case setupFailed(sessionId: String, reason: String)
        /// The offer is made and set as the local description.
        case offerCreated(sessionId: String, sdp: String)
        /// The subscriber's answer could not be applied.
        case answerFailed(sessionId: String, reason: String)
        /// A remote candidate could not be added: `kind` for counting (an
        /// `ICECandidateCheck.Kind`, or `failed`), `reason` in words.
        case candidateFailed(sessionId: String, kind: String, reason: String)
        /// The session's ICE transport connected (DTLS comes next).
        case iceConnected(sessionId: String)
        case localCandidate(sessionId: String, ICECandidate)
        /// Connected, and the subscriber's DTLS certificate matched its answer.
        case peerConnected(sessionId: String)
        /// Connected, but the subscriber's DTLS certificate did not match its answer.
        case peerRejected(sessionId: String, reason: String)
        /// The peer connection failed or closed (`state` says which, for the reason).
        case peerEnded(sessionId: String, state: String)
        case controlChannelOpen(sessionId: String)
        case controlMessage(sessionId: String, DataChannelMessage)
        /// What executing an admitted control request came to.
        case controlHandled(sessionId: String, ControlOutcome)
        /// What `checkReception` found: nil, the frame and its capture time are ours;
        /// otherwise why not.
        case receptionChecked(sessionId: String, requestId: String, frameId: UInt32, refusal: String?)
        case pipelineError(sessionId: String, description: String)
        /// A time asked for with `wake` has come (a session's setup deadline, the retry of
        /// a refused declaration).
        case tick
        /// The node is stopping: every session ends, nothing is told to the server.
        case stopping
    }

    public enum Effect: Sendable {
        case send(ClientMessage)
        /// Build a webrtcbin branch called `name` for the session, then `branchBuilt` or `setupFailed`.
        case buildBranch(sessionId: String, name: String, poseTransport: PoseTransport, role: RoomRole)
        /// Watch the peer's events, create the control channel and the offer, then
        /// `offerCreated` or `setupFailed`.
        case negotiate(sessionId: String)
        case applyAnswer(sessionId: String, sdp: String)
        case addCandidate(sessionId: String, ICECandidate)
        /// Stop watching the session's peer and remove its branch.
        case removeBranch(sessionId: String)
        /// Run an admitted control request, then `controlHandled`.
        case executeControl(sessionId: String, DataChannelMessage, author: String, role: RoomRole)
        case sendControl(ControlReply, sessionId: String)
        /// Whether frame `frameId` went out with this capture time (the frame history),
        /// then `receptionChecked`.
        case checkReception(sessionId: String, requestId: String, frameId: UInt32, captureTimeNanos: UInt64)
        /// The annotation list to this session (its control channel just opened).
        case sendAnnotations(sessionId: String)
        /// The annotation list to the overlay and to every session.
        case broadcastAnnotations
        /// Feed a `tick` at this time (monotonic nanoseconds) or soon after.
        case wake(at: UInt64)
        case emit(PublisherNodeEvent)
        case debug(String)
    }

    /// How far a session got; where a session that never connects stalled.
    public enum SetupStep: Sendable, Equatable {
        case offering, awaitingAnswer, answered, iceConnected, connected
        /// Through the SFU: waiting for the session to name a frame it received.
        case awaitingReception

        /// What a session that timed out at this step lacked.
        var stall: String {
            switch self {
            case .offering: "the offer was never made"
            case .awaitingAnswer: "no answer"
            case .answered: "answered, but ICE never connected"
            case .iceConnected: "ICE connected, but DTLS never completed"
            case .connected: "connected"
            case .awaitingReception: "through the SFU, but it never named a frame it received (\"receiving\")"
            }
        }
    }

    public struct Session: Sendable {
        public var role: RoomRole
        public var consumer: String
        /// When the server announced it (monotonic nanoseconds): its setup deadline runs from here.
        public var startedAt: UInt64
        public var step = SetupStep.offering
        /// Connected and verified: only then does control traffic flow either way.
        public var connected = false
        /// The control channel opened before the peer was verified.
        public var controlWaiting = false
        public var limiter: ControlRateLimiter
        public var offerSent = false
        public var pendingCandidates: [ICECandidate] = []
        /// The signaling connection (its number) the session was set up through.
        public var connection: Int
        /// How its frames carry their pose (its consumer's meta asked).
        public var poseTransport: PoseTransport = .headerExtension
        /// Its media comes through the SFU: no branch of its own, control over signaling.
        public var viaSFU = false
        /// Through the SFU: when it last named a frame it received (monotonic nanoseconds).
        public var lastReception: UInt64?
    }

    private struct Starting: Sendable {
        var consumer: String
        var at: UInt64
        var role: RoomRole
        var connection: Int
        var poseTransport: PoseTransport = .headerExtension
        var endedMeanwhile = false
    }

    public let config: PublisherNodeConfig
    public internal(set) var sessions: [String: Session] = [:]
    /// Sessions announced but still being set up (their branch is being built).
    private var starting: [String: Starting] = [:]
    private var sessionNumber = 0
    /// The number of the current signaling connection; nil while there is none.
    var connection: Int?
    private var connections = 0
    /// `roomFull` answers in a row on the current connection.
    private var roomRefusals = 0
    /// When to declare ourselves again after a `roomFull`; nil when no retry is due.
    private var redeclareAt: UInt64?
    /// Consumers whose sessions through the SFU ended unproven, in a row (`UnprovenConsumers`).
    var unproven: UnprovenConsumers
    /// Remote candidates refused, by kind; reported at most once a second per kind.
    public private(set) var candidateRefusals = RefusalLog<String>(interval: 1)

    /// A wake for the next summary of refused candidates, if one is waiting.
    private var summaryWake: [Effect] { candidateRefusals.nextSummaryNanos.map { [.wake(at: $0)] } ?? [] }

    /// A refused-candidate report; `line.peer` is the session of the latest refusal.
    static func candidateReport(_ line: RefusalLog<String>.Line) -> Effect {
        .emit(.candidateRefused(sessionId: line.peer, kind: line.code, details: line.details,
                                unreported: line.unlogged, total: line.total))
    }

    /// The codec our offers send: an answer must accept it (`AnswerCheck`).
    public let codec: VideoCodec

    public init(config: PublisherNodeConfig, codec: VideoCodec = .vp8) {
        self.config = config; self.codec = codec
        unproven = UnprovenConsumers(base: RetryBackoff.nanos(config.setupTimeout), maximum: RetryBackoff.nanos(config.unprovenWaitMaximum))
    }

    /// Sessions with a connected subscriber / all sessions.
    public var subscriberCounts: (connected: Int, total: Int) {
        (sessions.values.filter(\.connected).count, sessions.count)
    }

    public mutating func handle(_ event: Event, now: UInt64) -> [Effect] {
        switch event {
        case .signalingConnected(let peerId):
            connections += 1
            connection = connections
            roomRefusals = 0
            redeclareAt = nil
            return [declaration, .emit(.signalingConnected(url: config.signalingURL, peerId: peerId))]
        case .signalingLost(let reason):
            connection = nil
            redeclareAt = nil
            return [.emit(.signalingLost(reason: reason))]
        case .server(.error(let details, .unknownSession?, let sessionId?))
            where sessions[sessionId].map({ $0.connection == connection }) ?? false:
            // The server has forgotten it (its consumer is gone): nobody could end it for us.
            return [.emit(.serverError(code: .unknownSession, details: details))]
                + endSession(sessionId, reason: "the signaling server no longer knows it", tellServer: false)
        case .server(.error(let details, .roomFull?, _)):
            // A producer sends no startSession: a busy room can only refuse our declaration.
            guard connection != nil else { return [] }
            roomRefusals += 1
            let delay = config.roomRetry.delay(afterRefusals: roomRefusals)
            let at = now + RetryBackoff.nanos(delay)
            redeclareAt = at
            return [.emit(.roomBusy(room: config.room, details: details, retryIn: delay)), .wake(at: at)]
        case .tick:
            var effects = expireSetups(now: now) + expireReceptions(now: now)
            unproven.forget(at: now)
            effects += candidateRefusals.summaries(at: Double(now) / 1e9).map(Self.candidateReport)
            effects += summaryWake
            if let at = redeclareAt, at <= now, connection != nil {
                redeclareAt = nil
                effects.append(declaration)
            }
            return effects
        case .server(let message):
            return handle(message, now: now)
        case .branchBuilt(let sessionId):
            guard let start = starting.removeValue(forKey: sessionId) else { return [.removeBranch(sessionId: sessionId)] }
            if start.endedMeanwhile {
                return [.removeBranch(sessionId: sessionId),
                        .emit(.sessionEnded(sessionId: sessionId, reason: "ended before it was set up"))]
            }
            sessions[sessionId] = Session(role: start.role, consumer: start.consumer, startedAt: start.at,
                                          limiter: ControlRateLimiter(limit: config.controlRate, now: now),
                                          connection: start.connection, poseTransport: start.poseTransport)
            return [.emit(.sessionStarted(sessionId: sessionId, consumer: start.consumer, role: start.role,
                                          poseTransport: start.poseTransport)),
                    .negotiate(sessionId: sessionId)]
        case let .setupFailed(sessionId, reason):
            starting[sessionId] = nil
            return [.emit(.error("session \(sessionId) could not start: \(reason)"))]
                + endSession(sessionId, reason: "could not start: \(reason)", tellServer: true)
        case let .offerCreated(sessionId, sdp):
            guard var session = sessions[sessionId] else { return [] }
            let pending = session.pendingCandidates
            session.offerSent = true
            session.step = .awaitingAnswer
            session.pendingCandidates = []
            sessions[sessionId] = session
            // Both through the connection the session was set up on: another server does not know it.
            guard connection == session.connection else { return [] }
            return [.send(.peer(PeerMessage(sessionId: sessionId, payload: .sdp(SignalingSDP(type: "offer", sdp: sdp)))))]
                + pending.map { .send(.candidate($0.candidate, mlineIndex: $0.mlineIndex, sessionId: sessionId)) }
        case let .answerFailed(sessionId, reason):
            return [.emit(.error("session \(sessionId): \(reason)"))]
                + endSession(sessionId, reason: "bad answer: \(reason)", tellServer: true)
        case let .candidateFailed(sessionId, kind, reason):
            guard let line = candidateRefusals.record(kind, peer: sessionId, details: reason, at: Double(now) / 1e9) else {
                // Not said now: summed up once its interval has passed, even if no more come.
                return summaryWake
            }
            return [Self.candidateReport(line)]
        case .iceConnected(let sessionId):
            if let step = sessions[sessionId]?.step, step != .connected { sessions[sessionId]?.step = .iceConnected }
            return []
        case let .localCandidate(sessionId, candidate):
            if sessions[sessionId]?.offerSent == false {
                sessions[sessionId]?.pendingCandidates.append(candidate)
                return []
            }
            return connection == nil ? [] : [.send(.candidate(candidate.candidate, mlineIndex: candidate.mlineIndex, sessionId: sessionId))]
        case .peerConnected(let sessionId):
            guard let session = sessions[sessionId] else { return [] }
            sessions[sessionId]?.connected = true
            sessions[sessionId]?.step = .connected
            return [.emit(.subscriberConnected(sessionId: sessionId))]
                + (session.controlWaiting ? [.sendAnnotations(sessionId: sessionId)] : [])
        case let .peerRejected(sessionId, reason):
            guard sessions[sessionId] != nil else { return [] }
            return [.emit(.error("session \(sessionId): \(reason)"))]
                + endSession(sessionId, reason: reason, tellServer: true)
        case let .peerEnded(sessionId, state):
            return endSession(sessionId, reason: "peer connection \(state)", tellServer: true)
        case .controlChannelOpen(let sessionId):
            guard let session = sessions[sessionId] else { return [] }
            guard session.connected else {
                sessions[sessionId]?.controlWaiting = true
                return []
            }
            return [.sendAnnotations(sessionId: sessionId)]
        case let .controlMessage(sessionId, message):
            guard var session = sessions[sessionId] else { return [] }
            guard session.connected || session.viaSFU else {
                return [.debug("session \(sessionId): control message before the subscriber was verified, dropped")]
            }
            // Counted before anything is answered: a stranger's flood is refused rateLimited
            // like anyone's, not answered one by one.
            let admitted = session.limiter.admit(at: now)
            sessions[sessionId] = session
            let proof = Self.receptionProof(message)
            if session.viaSFU, !session.connected, proof == nil, admitted {
                // Through the SFU nothing but a proof is read before the first one.
                return answer(PublisherControl.refusal(message, .notAllowed, "this session has not yet named a frame it "
                                                       + "received through the SFU (\"receiving\"): nothing else is read before"), sessionId)
            }
            if let proof, admitted {
                guard session.viaSFU else {
                    return answer(PublisherControl.refusal(message, .notAllowed, PublisherControl.proofOnDirectSession), sessionId)
                }
                return [.checkReception(sessionId: sessionId, requestId: proof.id, frameId: proof.frameId,
                                        captureTimeNanos: proof.captureTimeNanos)]
            }
            if let refusal = PublisherControl.refusal(of: message, role: session.role,
                                                      refusedBy: admitted ? nil : session.limiter) {
                return answer(refusal, sessionId)
            }
            return [.executeControl(sessionId: sessionId, message, author: session.consumer, role: session.role)]
        case let .controlHandled(sessionId, outcome):
            return answer(outcome, sessionId)
        case let .receptionChecked(sessionId, requestId, frameId, refusal):
            return receptionChecked(sessionId, requestId: requestId, frameId: frameId, refusal: refusal, now: now)
        case let .pipelineError(sessionId, description):
            return [.emit(.error("session \(sessionId): \(description)"))]
        case .stopping:
            connection = nil
            return sessions.keys.sorted().flatMap { endSession($0, reason: "publisher stopping", tellServer: false) }
        }
    }

    /// The pose transport a consumer asked for in its meta (`PoseTransport.metaKey`);
    /// absent: the header extension. Anything else is said, and the header extension used.
    static func poseTransport(asked value: JSONValue?) -> (PoseTransport, problem: String?) {
        guard let value, value != .null else { return (.headerExtension, nil) }
        if let name = value.stringValue, let transport = PoseTransport(rawValue: name) { return (transport, nil) }
        let names = PoseTransport.allCases.map(\.rawValue).joined(separator: " | ")
        return (.headerExtension, "\(PoseTransport.metaKey) \(value) is not one of \(names): sending the header extension")
    }

    private mutating func handle(_ message: ServerMessage, now: UInt64) -> [Effect] {
        switch message {
        case let .startSession(consumer, sessionId, role, meta):
            guard sessions[sessionId] == nil, starting[sessionId] == nil else {
                return [.debug("startSession for session \(sessionId), which we already have: ignored")]
            }
            if let refusal = capRefusal(consumer: consumer) {
                return [.send(.endSession(sessionId: sessionId)),
                        .emit(.error("session \(sessionId) of \(consumer) refused: \(refusal)"))]
            }
            if meta?[PeerMessage.viaKey]?.stringValue == PeerMessage.viaSFU {
                return startViaSFU(sessionId, consumer: consumer, role: role ?? .viewer, now: now)
            }
            sessionNumber += 1
            let (transport, problem) = Self.poseTransport(asked: meta?[PoseTransport.metaKey])
            starting[sessionId] = Starting(consumer: consumer, at: now, role: role ?? .viewer, connection: connection ?? 0,
                                           poseTransport: transport)
            return (problem.map { [.emit(.error("session \(sessionId) of \(consumer): \($0)"))] } ?? [])
                + [.buildBranch(sessionId: sessionId, name: "session\(sessionNumber)", poseTransport: transport,
                                role: role ?? .viewer),
                   .wake(at: now + RetryBackoff.nanos(config.setupTimeout))]
        case .peer(let message):
            guard sessions[message.sessionId] != nil else { return [.debug("peer message for an unknown session \(message.sessionId)")] }
            switch message.payload {
            case .sdp(let sdp):
                guard sessions[message.sessionId]?.viaSFU == false else {
                    return [.emit(.error("session \(message.sessionId) is through the SFU: an SDP for no peer, ignored"))]
                }
                guard sdp.type == "answer" else {
                    let error = RTCError.invalidDescription("expected an answer, got \(sdp.type)")
                    return [.emit(.error("session \(message.sessionId): \(error)"))]
                        + endSession(message.sessionId, reason: "bad answer: \(error)", tellServer: true)
                }
                if let refusal = AnswerCheck.refusal(sdp.sdp, codec: codec) {
                    return [.emit(.error("session \(message.sessionId): the answer is refused: \(refusal)"))]
                        + endSession(message.sessionId, reason: "bad answer: \(refusal)", tellServer: true)
                }
                if sessions[message.sessionId]?.step == .awaitingAnswer { sessions[message.sessionId]?.step = .answered }
                // A trailer or SEI session was offered no extension: its pose is in the frames.
                let withoutPose: [Effect] = sessions[message.sessionId]?.poseTransport.isInBand == true
                    || AnswerCheck.acceptsPoseExtension(sdp.sdp)
                    ? [] : [.emit(.subscriberWithoutPose(sessionId: message.sessionId))]
                return [.applyAnswer(sessionId: message.sessionId, sdp: sdp.sdp)] + withoutPose
            case .ice(let ice):
                guard sessions[message.sessionId]?.viaSFU == false else {
                    return [.debug("session \(message.sessionId) is through the SFU: a candidate for no peer, dropped")]
                }
                return [.addCandidate(sessionId: message.sessionId, ICECandidate(mlineIndex: ice.sdpMLineIndex, candidate: ice.candidate))]
            case .control(let text):
                // Control over signaling: only for sessions whose media comes through the SFU
                // (anyone else has a data channel, checked against its certificate).
                guard sessions[message.sessionId]?.viaSFU == true else {
                    // Refused, and said so to the sender, where it asked (with its id when readable).
                    let id: String? = (try? ControlCodec.decodeRequest(text))?.id
                    let refusal = ControlError(id: id, code: .notAllowed,
                                               message: "control over signaling is for sessions through the SFU; "
                                                   + "this session's data channel carries control")
                    return [.emit(.error("session \(message.sessionId): a control message over signaling, "
                                         + "but its media is direct: refused (its data channel carries control)")),
                            .send(.peer(PeerMessage(sessionId: message.sessionId,
                                                    payload: .control(ControlCodec.encode(.error(refusal))))))]
                }
                return handle(.controlMessage(sessionId: message.sessionId, .text(text)), now: now)
            }
        case .endSession(let sessionId):
            starting[sessionId]?.endedMeanwhile = true
            return endSession(sessionId, reason: "ended by the subscriber or the server", tellServer: false)
        case let .error(details, code, _):
            return [.emit(.serverError(code: code, details: details))]
        case .welcome, .peerStatusChanged, .list, .sessionStarted:
            return []
        }
    }

    /// Why one more session for `consumer` is refused, or nil: our own caps, kept
    /// whatever the server let through (a restarted server has forgotten what it counted).
    private func capRefusal(consumer: String) -> String? {
        let held = sessions.values.count { $0.consumer == consumer } + starting.values.count { $0.consumer == consumer }
        if held >= config.maxSessionsPerConsumer {
            return "it already holds \(held) sessions (at most \(config.maxSessionsPerConsumer) per consumer)"
        }
        let total = sessions.count + starting.count
        if total >= config.maxSessions { return "the publisher already has \(total) sessions (at most \(config.maxSessions))" }
        return nil
    }

    /// Ends the sessions not connected within `config.setupTimeout` of their start.
    private mutating func expireSetups(now: UInt64) -> [Effect] {
        let limit = RetryBackoff.nanos(config.setupTimeout)
        let late = sessions.filter { !$0.value.connected && now >= $0.value.startedAt + limit }
        for session in late.values where session.viaSFU { unproven.ended(session.consumer, at: now) }
        return late.sorted { $0.key < $1.key }.flatMap { id, session in
            endSession(id, reason: "not connected within \(config.setupTimeout): \(session.step.stall)", tellServer: true)
        }
    }

    /// Declares us the room's producer.
    private var declaration: Effect {
        .send(.setPeerStatus(PeerStatus(roles: [.producer], meta: .object(["name": .string(config.name)]),
                                        room: config.room, role: .publisher, token: config.token)))
    }

    func answer(_ outcome: ControlOutcome, _ sessionId: String) -> [Effect] {
        [.sendControl(outcome.reply, sessionId: sessionId),
         .emit(.control(sessionId: sessionId, request: outcome.requestType, reply: outcome.reply))]
            + (outcome.annotationsChanged ? [.broadcastAnnotations] : [])
    }

    mutating func endSession(_ sessionId: String, reason: String, tellServer: Bool) -> [Effect] {
        guard let session = sessions.removeValue(forKey: sessionId) else { return [] }
        var effects: [Effect] = [.removeBranch(sessionId: sessionId)]
        if tellServer, connection == session.connection { effects.append(.send(.endSession(sessionId: sessionId))) }
        effects.append(.emit(.sessionEnded(sessionId: sessionId, reason: reason)))
        return effects
    }
}
