import Dispatch
import Logging
import PoseCastKit
import PoseMedia
import RTCSession
import Signaling
import Synchronization

public struct PublisherNodeConfig: Sendable {
    public var signalingURL: String
    public var room = "default"
    public var token: String?
    /// How a `wss://` signaling server is checked (a CA file of its own, or the system's).
    public var signalingTLS: SignalingClientTLS?
    /// Shown to other peers in the producer's `meta`.
    public var name = "posecast-publisher"
    /// Planes the naive `screen` placement intersects (the ground by default).
    public var placementPlanes: [Plane] = [.ground]
    /// Pause between signaling reconnection attempts.
    public var reconnectDelay: Duration = .seconds(1)
    /// Waits between declarations while the server answers that the room is busy.
    public var roomRetry = RetryBackoff()
    /// Control-channel messages each session may send (over it: `error rateLimited`, not executed).
    public var controlRate = ControlRateLimit.standard
    /// A session not connected and verified within this after its start is ended.
    public var setupTimeout: Duration = .seconds(15)
    /// A session through the SFU that names no frame it received (`receiving`) for this
    /// long is ended (its subscriber proves it every 2 s while frames decode).
    public var receptionTimeout: Duration = .seconds(10)
    /// A consumer whose sessions through the SFU end unproven again and again waits
    /// `setupTimeout`, then doubling up to this, before its next (`UnprovenConsumers`).
    public var unprovenWaitMaximum: Duration = .seconds(300)
    /// Sessions the publisher allocates for one consumer, and in all (being set up or
    /// live); more are refused whatever the signaling server let through.
    public var maxSessionsPerConsumer = 4
    public var maxSessions = 16
    /// We publish into an SFU (`--sfu`): consumers may ask for sessions through it.
    public var publishesToSFU = false
    public init(signalingURL: String) { self.signalingURL = signalingURL }
}

public enum PublisherNodeEvent: Sendable {
    case signalingConnected(url: String, peerId: String)
    case signalingLost(reason: String)
    /// The server refused something we sent (a token, the room …).
    case serverError(code: SignalingErrorCode?, details: String)
    /// The server refused us the room (`roomFull`: it has a publisher, or no place):
    /// we declare ourselves again after `retryIn`.
    case roomBusy(room: String, details: String, retryIn: Duration)
    case sessionStarted(sessionId: String, consumer: String, role: RoomRole, poseTransport: PoseTransport)
    case subscriberConnected(sessionId: String)
    /// The candidate pair the session's media goes over (`relay` with a relay-only policy).
    case mediaRoute(sessionId: String, route: ICERoute)
    /// The subscriber's answer does not take the pose header extension: its video comes
    /// without poses (it can tap only in screen coordinates). Allowed, and said.
    case subscriberWithoutPose(sessionId: String)
    case sessionEnded(sessionId: String, reason: String)
    /// A remote ICE candidate was refused (reported rate-limited per `kind`:
    /// `unreported` of that kind since the last report, `total` so far).
    case candidateRefused(sessionId: String, kind: String, details: String, unreported: Int, total: Int)
    /// A control request and what we answered.
    case control(sessionId: String, request: String?, reply: ControlReply)
    /// An expert muted or unmuted its microphone (its `voice` request).
    case voiceMuted(consumer: String, muted: Bool)
    /// Something in a session's branch worth saying that does not end it (a stream the
    /// subscriber sent that nobody asked for, discarded).
    case sessionWarning(sessionId: String, message: String)
    case error(String)
}

/// The publisher side of a call: registers as the room's producer, opens one
/// webrtcbin branch per subscriber session (one encoder for all), answers the control
/// channel and keeps the annotation list in step on every expert's side. Media keeps
/// flowing while the signaling connection is down; it reconnects by itself.
///
/// The session logic is `PublisherSessions`; this node feeds it what happens on the
/// signaling link, the peers and the control channels, and carries out its effects.
public final class PublisherNode: Sendable {
    public let media: PublisherMedia
    public let config: PublisherNodeConfig
    public let board = AnnotationBoard()
    private let control: PublisherControl
    private let logger: Logger
    private let onEvent: @Sendable (PublisherNodeEvent) -> Void
    private let link: any SignalingLink
    private let state: Mutex<State>
    /// The node's own tasks (a branch being built, a route being read), by session;
    /// cancelled and awaited when `run` ends.
    private let tasks = OwnedTasks<String>()
    /// The machine's wakes (`.tick`), stopped when `run` ends.
    private let wakes = WakeTimer()
    /// Told the sessions through the SFU that may talk (`watchSFUTalkers`).
    private let talkersWatcher = Mutex<(@Sendable (Set<String>) -> Void)?>(nil)

    /// What the node holds for one session's branch: GStreamer objects, not logic.
    private struct Branch {
        var peer: WebRTCPeer
        var channel: DataChannel?
        /// Our subscriber's `feedback` channel (its reception reports), once it opens one.
        var feedback: DataChannel?
        var events: Task<Void, Never>?
    }

    private struct State {
        var sessions: PublisherSessions
        var branches: [String: Branch] = [:]
        /// Each consumer's microphone as it last said (`voice` requests).
        var mutedVoices: [String: Bool] = [:]
        /// Data channels that get every broadcast but are no session (the SFU's, which
        /// Janus relays to each of its subscribers), by their peer.
        var broadcastChannels: [ObjectIdentifier: (channel: DataChannel, peer: WebRTCPeer)] = [:]
        /// The hidden annotations last told to everyone (`annotationVisibility`).
        var hiddenAnnotations: [String] = []
    }

    /// - Parameter link: the signaling server; by default a `SignalingClientLink` to
    ///   `config.signalingURL` reconnecting after `config.reconnectDelay`.
    public init(media: PublisherMedia, config: PublisherNodeConfig, logger: Logger, link: (any SignalingLink)? = nil,
                onEvent: @escaping @Sendable (PublisherNodeEvent) -> Void) {
        self.media = media
        self.config = config
        self.logger = logger
        self.onEvent = onEvent
        self.link = link ?? SignalingClientLink(url: config.signalingURL, tls: config.signalingTLS,
                                                reconnectDelay: config.reconnectDelay, logger: logger)
        state = Mutex(State(sessions: PublisherSessions(config: config, codec: media.config.codec)))
        control = PublisherControl(board: board, placer: AnnotationPlacer(history: media.frameHistory,
                                                                          planes: config.placementPlanes),
                                   camera: media.cameraMeter.map { CameraMeterCommands(meter: $0) },
                                   noCameraReason: media.cameraControlUnavailable, effects: media.effects)
        wakes.arm { [weak self] in await self?.feed(.tick) }
    }

    /// The scene status of a source with no camera to meter.
    static let noCameraStatus = SceneStatus(focus: RoutineStatus(state: .unsupported), exposure: RoutineStatus(state: .unsupported),
                                            whiteBalance: RoutineStatus(state: .unsupported), focusMode: .auto,
                                            meteringMode: .uniform, region: .full)

    /// Sessions with a connected subscriber / all sessions.
    public var subscriberCounts: (connected: Int, total: Int) {
        state.withLock { $0.sessions.subscriberCounts }
    }

    /// Remote candidates refused so far, every kind and session.
    public var candidatesRefused: Int {
        state.withLock { $0.sessions.candidateRefusals.total }
    }

    /// Runs until the task is cancelled: connect, register, serve; on a lost
    /// connection wait `reconnectDelay` and start again.
    public func run() async {
        // The camera's metering status goes to every session five times a second, and
        // which annotations the video shows hidden when that changed.
        let statusStream = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(200))
                guard let self else { continue }
                let hidden = self.media.hiddenAnnotationIDs.sorted()
                if self.state.withLock({ s in defer { s.hiddenAnnotations = hidden }; return s.hiddenAnnotations != hidden }) {
                    self.broadcast(.annotationVisibility(hidden: hidden))
                }
                // Without a camera to meter (a test or still-picture source), the status
                // still goes out while an effect is on, its routines `unsupported`.
                let effects = self.media.effects.summary
                let effectsOn = effects.background != "off" || effects.framing != "off" || effects.request != nil
                guard var status = self.media.cameraMeter?.status ?? (effectsOn ? Self.noCameraStatus : nil) else { continue }
                status.effects = effects
                self.broadcast(.sceneStatus(status))
            }
        }
        defer { statusStream.cancel() }
        for await event in link.events() {
            switch event {
            case .connected(let peerId): await feed(.signalingConnected(peerId: peerId))
            case .message(let message): await feed(.server(message))
            case .lost(let reason): await feed(.signalingLost(reason: reason))
            }
        }
        await feed(.stopping)
        wakes.stop()
        await tasks.cancelAll()
    }

    // MARK: carrying out the state machine's effects

    private func feed(_ event: PublisherSessions.Event) async {
        let now = MonotonicClock.nanos()
        await perform(step { $0.sessions.handle(event, now: now) })
    }

    /// Runs the state machine under the lock and sends its messages to the server there
    /// too, so they leave in the order it made them: two tasks feeding it (the offer's
    /// and the candidates') cannot swap an offer and its first candidate. `link.send`
    /// only queues. The other effects are the caller's, outside the lock.
    private func step(_ body: (inout State) -> [PublisherSessions.Effect]) -> [PublisherSessions.Effect] {
        state.withLock { s in
            body(&s).filter { effect in
                guard case .send(let message) = effect else { return true }
                try? link.send(message)
                return false
            }
        }
    }

    private func perform(_ effects: [PublisherSessions.Effect]) async {
        for effect in effects { await perform(effect) }
    }

    private func perform(_ effect: PublisherSessions.Effect) async {
        switch effect {
        case .send(let message):
            try? link.send(message)  // not reached: `step` sends
        case let .buildBranch(sessionId, name, poseTransport, role):
            // Negotiation awaits the pipeline; never block the message loop on it.
            // Experts talk; a viewer only where the room lets viewers talk.
            let mayTalk = role == .expert || media.config.viewersMayTalk
            tasks.spawn(sessionId) { await self.buildBranch(sessionId, name: name, poseTransport: poseTransport, mayTalk: mayTalk) }
        case .negotiate(let sessionId):
            await negotiate(sessionId)
        case let .applyAnswer(sessionId, sdp):
            guard let peer = peer(sessionId) else { return }
            do throws(RTCError) { try await peer.setRemoteDescription(SessionDescription(kind: .answer, sdp: sdp)) } catch {
                await feed(.answerFailed(sessionId: sessionId, reason: "\(error)"))
            }
        case let .addCandidate(sessionId, candidate):
            guard let peer = peer(sessionId) else { return }
            do throws(RTCError) { try peer.addICECandidate(candidate) } catch {
                let kind = if case .candidateRefused(let refusal) = error { refusal.kind.rawValue } else { "failed" }
                await feed(.candidateFailed(sessionId: sessionId, kind: kind, reason: "\(error)"))
            }
        case .removeBranch(let sessionId):
            guard let branch = state.withLock({ $0.branches.removeValue(forKey: sessionId) }) else { return }
            branch.events?.cancel()
            tasks.cancel(sessionId)
            media.removePeer(branch.peer)
        case let .executeControl(sessionId, message, author, role):
            // Off the async pool: a framing request may load a model, a camera command
            // touches the device (each takes milliseconds). Requests stay in order: the
            // next waits for this one.
            let control = self.control
            let outcome = await withCheckedContinuation { (done: CheckedContinuation<ControlOutcome, Never>) in
                DispatchQueue.global().async { done.resume(returning: control.handle(message, from: author, role: role)) }
            }
            await feed(.controlHandled(sessionId: sessionId, outcome))
            if let muted = outcome.voiceMuted, case .ack = outcome.reply {
                state.withLock { $0.mutedVoices[author] = muted }
                onEvent(.voiceMuted(consumer: author, muted: muted))
                broadcastVoices()
            }
        case let .sendControl(reply, sessionId):
            send(reply, to: sessionId)
        case let .checkReception(sessionId, requestId, frameId, nanos):
            // The true capture time is never said: a guess learns only that it was wrong.
            let refusal: String? = switch media.frameHistory.entry(frameId)?.pose?.captureTimeNanos {
            case nil: "not among the last \(media.frameHistory.capacity) frames this publisher sent"
            case nanos?: nil
            case _?: "this publisher sent it with another capture time"
            }
            await feed(.receptionChecked(sessionId: sessionId, requestId: requestId, frameId: frameId, refusal: refusal))
        case .sendAnnotations(let sessionId):
            send(.annotations(board.all), to: sessionId)
            let hidden = state.withLock { $0.hiddenAnnotations }
            if !hidden.isEmpty { send(.annotationVisibility(hidden: hidden), to: sessionId) }
            if media.voice != nil { broadcastVoices() }
        case .broadcastAnnotations:
            // Viewers see annotations too; the overlay draws them into the video.
            media.setAnnotations(board.all)
            broadcast(.annotations(board.all))
        case .wake(let at):
            wakes.schedule(at: at)
        case .emit(let event):
            onEvent(event)
            switch event {
            case .subscriberConnected, .sessionEnded: talkersWatcher.withLock { $0 }?(sfuTalkers)
            default: break
            }
        case .debug(let text):
            logger.debug("\(text)")
        }
    }

    /// New simulated link conditions for one session's subscriber only (the publisher
    /// was started with a link; `PublisherMedia.setLinkConditions` changes all).
    public func setLinkConditions(_ conditions: LinkConditions, session sessionId: String) throws(RTCError) {
        guard let peer = peer(sessionId) else { throw .invalidArgument("no session \(sessionId)") }
        guard let link = peer.link else {
            throw .invalidArgument("the publisher was started without a simulated link (--link)")
        }
        try link.update(conditions)
    }

    private func peer(_ sessionId: String) -> WebRTCPeer? {
        state.withLock { $0.branches[sessionId]?.peer }
    }

    private func buildBranch(_ sessionId: String, name: String, poseTransport: PoseTransport, mayTalk: Bool) async {
        do throws(RTCError) {
            let peer = try await media.addPeer(name: name, poseTransport: poseTransport, mayTalk: mayTalk)
            // A subscriber that dies while no signaling server can tell us (one restarted
            // meanwhile) is then found by ICE itself, and its session ended.
            peer.enableKeepaliveChecks()
            let now = MonotonicClock.nanos()
            await perform(step { s in
                s.branches[sessionId] = Branch(peer: peer)
                return s.sessions.handle(.branchBuilt(sessionId: sessionId), now: now)
            })
        } catch {
            await feed(.setupFailed(sessionId: sessionId, reason: "\(error)"))
        }
    }

    private func negotiate(_ sessionId: String) async {
        guard let peer = peer(sessionId) else { return }
        let events = Task { [weak self] in
            for await event in peer.events {
                guard let self else { return }
                await self.handle(event, session: sessionId)
            }
        }
        state.withLock { $0.branches[sessionId]?.events = events }
        do throws(RTCError) {
            let channel = try peer.createDataChannel("control")
            state.withLock { $0.branches[sessionId]?.channel = channel }
            // Transport-wide feedback, and REMB where a receiver has no transport-wide
            // feedback: what a browser says of the path (docs/NETWORK.md).
            var offer = try await peer.createOffer().addingFeedback("goog-remb")
            if media.config.adaptBitrate && media.config.transportWideCC { offer = offer.addingTransportWideCC() }
            try await peer.setLocalDescription(offer)
            await feed(.offerCreated(sessionId: sessionId, sdp: offer.sdp))
        } catch {
            await feed(.setupFailed(sessionId: sessionId, reason: "\(error)"))
        }
    }

    private func handle(_ event: RTCEvent, session sessionId: String) async {
        switch event {
        case .localCandidate(let candidate):
            await feed(.localCandidate(sessionId: sessionId, candidate))
        case .connectionState(.connected):
            // DTLS is done: the subscriber's certificate must be the one its answer names
            // before any frame or control message goes to or comes from it.
            guard let peer = peer(sessionId) else { return }
            let check = await peer.verifyRemoteFingerprintWhenReady()
            if check.isVerified {
                await feed(.peerConnected(sessionId: sessionId))
                tasks.spawn(sessionId) { [onEvent] in
                    if let route = await peer.selectedRoute() { onEvent(.mediaRoute(sessionId: sessionId, route: route)) }
                }
            } else {
                await feed(.peerRejected(sessionId: sessionId,
                                         reason: "the subscriber's DTLS certificate does not match its SDP (\(check))"))
            }
        case .iceConnectionState(.connected), .iceConnectionState(.completed):
            await feed(.iceConnected(sessionId: sessionId))
        case .connectionState(.failed), .connectionState(.closed):
            await feed(.peerEnded(sessionId: sessionId, state: "\(event)"))
        case .dataChannelOpen(let label) where label == "control":
            await feed(.controlChannelOpen(sessionId: sessionId))
        case .dataChannel(let channel) where channel.label == ReceptionReport.channelLabel:
            state.withLock { $0.branches[sessionId]?.feedback = channel }
        case .dataChannelMessage(ReceptionReport.channelLabel, let message):
            // Reception reports for congestion control: from a verified peer only, and
            // nothing but well-formed reports (anything else is counted and dropped: the
            // channel is unreliable telemetry). The one reply is the echo of a report's
            // send time, by which the receiver learns the path's round trip (its jitter
            // buffer's latency needs it before the first loss, docs/NETWORK.md).
            guard let peer = peer(sessionId), peer.isVerified, case .text(let text) = message,
                  let report = peer.receiveReceptionReport(text) else {
                media.feedbackRefused()
                return
            }
            if let sent = report.sentMicros, let channel = state.withLock({ $0.branches[sessionId]?.feedback }),
               channel.readyState == .open {
                do throws(RTCError) { try channel.send(ReceptionReport.encodeEcho(sent)) } catch {
                    logger.debug("session \(sessionId): echo of a reception report not sent: \(error)")
                }
            }
        case .dataChannelMessage(_, let message):
            await feed(.controlMessage(sessionId: sessionId, message))
        case .pipelineError(let error):
            await feed(.pipelineError(sessionId: sessionId, description: "\(error)"))
        case .pipelineWarning(let message):
            onEvent(.sessionWarning(sessionId: sessionId, message: message))
        default:
            break
        }
    }

    private func send(_ reply: ControlReply, to sessionId: String) {
        if state.withLock({ $0.sessions.sessions[sessionId]?.viaSFU == true }) {
            // Through the signaling server: the SFU relays nothing back to the expert.
            try? link.send(.peer(PeerMessage(sessionId: sessionId, payload: .control(ControlCodec.encode(reply)))))
            return
        }
        guard let channel = state.withLock({ $0.branches[sessionId]?.channel }), channel.readyState == .open else { return }
        do throws(RTCError) { try channel.send(ControlCodec.encode(reply)) } catch {
            logger.warning("control reply to \(sessionId) not sent: \(error)")
        }
    }

    /// The sessions through the SFU that have proved they receive and may talk (experts,
    /// and viewers where the room lets them): those whose voices we listen to there.
    public var sfuTalkers: Set<String> {
        let viewersMayTalk = media.config.viewersMayTalk
        return state.withLock { s in
            Set(s.sessions.sessions.filter { $0.value.viaSFU && $0.value.connected && ($0.value.role == .expert || viewersMayTalk) }.keys)
        }
    }

    /// `body` gets `sfuTalkers` now and after each session that connects or ends; nil stops it.
    public func watchSFUTalkers(_ body: (@Sendable (Set<String>) -> Void)?) {
        talkersWatcher.withLock { $0 = body }
        body?(sfuTalkers)
    }

    /// Tells a session through the SFU where to publish its voice.
    public func sendVoiceRoute(_ route: VoiceRoute, to sessionId: String) { send(.voiceRoute(route), to: sessionId) }

    /// Who is in the conversation (the field and each connected session) and who is
    /// muted, to every session: after a join and every change.
    public func broadcastVoices() {
        guard let voice = media.voice else { return }
        let viewersMayTalk = media.config.viewersMayTalk
        let list = state.withLock { s -> [VoiceParticipant] in
            let field = VoiceParticipant(id: PublisherVoice.fieldKey, role: RoomRole.publisher.rawValue, muted: voice.isMuted,
                                         mayTalk: voice.hasMicrophone)
            let others = s.sessions.sessions.values.filter(\.connected).map { session in
                VoiceParticipant(id: session.consumer, role: session.role.rawValue, muted: s.mutedVoices[session.consumer] ?? false,
                                 mayTalk: session.role == .expert || viewersMayTalk)
            }.sorted { $0.id < $1.id }
            return [field] + others
        }
        broadcast(.voices(list))
    }

    private func broadcast(_ reply: ControlReply) {
        // Only to verified subscribers: nothing goes to a peer whose certificate is unchecked.
        let (ids, extra) = state.withLock { s in
            // Sessions through the SFU get theirs over signaling: Janus's data channel
            // opened to the publisher but never to our subscribers here (docs/SCALING.md).
            (s.sessions.sessions.filter { (s.branches[$0.key] != nil || $0.value.viaSFU) && $0.value.connected }.map(\.key),
             s.broadcastChannels.values.filter { $0.peer.isVerified }.map(\.channel))
        }
        for id in ids { send(reply, to: id) }
        for channel in extra where channel.readyState == .open {
            do throws(RTCError) { try channel.send(ControlCodec.encode(reply)) } catch {
                logger.warning("broadcast to the SFU not sent: \(error)")
            }
        }
    }

    /// A data channel that gets every broadcast from now on (the SFU's: Janus relays it
    /// to each of its subscribers), once its peer is verified.
    public func attachBroadcast(_ channel: DataChannel, peer: WebRTCPeer) {
        state.withLock { $0.broadcastChannels[ObjectIdentifier(peer)] = (channel, peer) }
    }

    public func detachBroadcast(_ peer: WebRTCPeer) {
        state.withLock { $0.broadcastChannels[ObjectIdentifier(peer)] = nil }
    }

    /// The broadcast channel of `peer` opened: the annotation list to it at once.
    public func broadcastChannelOpened(_ peer: WebRTCPeer) {
        guard let channel = state.withLock({ $0.broadcastChannels[ObjectIdentifier(peer)]?.channel }) else { return }
        do throws(RTCError) { try channel.send(ControlCodec.encode(.annotations(board.all))) } catch {
            logger.warning("annotation list to the SFU not sent: \(error)")
        }
    }
}
