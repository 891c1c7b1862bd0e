import Dispatch
import Logging
import PoseCastKit
import PoseMedia
import RTCSession
import SFU
import Signaling
import Synchronization

/// The expert side: finds the room's publisher, answers its offer, decodes the video
/// with each frame's pose, turns taps into `annotate` requests from the pose of the
/// frame on screen, and comes back by itself when the publisher or the server does.
///
/// The session logic is `SubscriberSession`; this node feeds it what happens on the
/// signaling link, the peer and the media, and carries out its effects.
public final class SubscriberNode: Sendable {
    public let config: SubscriberNodeConfig
    let logger: Logger
    let onEvent: @Sendable (SubscriberNodeEvent) -> Void
    let link: any SignalingLink
    let state: Mutex<State>
    let frames = Mutex(FrameWindow())
    let tracker: PlacementTracker
    let delayedSender: DelayedSender?
    /// The current session's publisher presented the certificate its offer names: frames
    /// and control messages before that are dropped (read per frame, on streaming threads).
    let verified = Atomic<Bool>(false)
    /// Who the sessions' media is negotiated with: the publisher over signaling, or an SFU.
    let signaller: any SubscriberSignaller
    /// The media comes through an SFU (`config.sfu`): control goes over signaling, and no
    /// reception reports go back (Janus estimates the link itself).
    var viaSFU: Bool { config.sfu != nil }
    /// The node's own tasks (a route being read, the signaller's events), by session;
    /// cancelled and awaited when `run` ends.
    let tasks = OwnedTasks<String>()
    /// The machine's wakes (`.tick`), stopped when `run` ends.
    let wakes = WakeTimer()

    struct State {
        var session: SubscriberSession
        var media: SubscriberMedia?
        var channel: DataChannel?
        var events: Task<Void, Never>?
        /// Our reception reports to the publisher (`feedback` channel), while connected.
        var feedback: (channel: DataChannel, task: Task<Void, Never>, echoes: EchoRoundTrips)?
        /// The `feedback` channel of this session is asked for (at most once a session).
        var feedbackRequested = false
        var requestNumber = 0
        /// Our microphone muted (by a command since start; else the options' start state).
        var muted: Bool?
        /// Our voice through the SFU's voice room in this session, once the publisher routed it.
        var sfuVoice: (runner: SubscriberSFUVoice, task: Task<Void, Never>)?
        /// The conversation as the publisher last listed it.
        var voices: [VoiceParticipant] = []
        /// The publisher camera's latest metering status.
        var sceneStatus: SceneStatus?
        /// `annotate` requests sent and not yet answered; the annotations they made (oldest
        /// first) while the publisher's list still holds them: what `undo` removes.
        var annotateRequests: Set<String> = []
        var ownAnnotations: [String] = []
        /// The publisher's last list, and our annotations already reported as placed.
        var lastAnnotations: [Annotation] = []
        var reportedPlacements: Set<String> = []

        /// Our annotations in the publisher's last list not yet reported as placed (marks them).
        mutating func newlyPlaced() -> [Annotation] {
            let fresh = lastAnnotations.filter { ownAnnotations.contains($0.id) && !reportedPlacements.contains($0.id) }
            for a in fresh { reportedPlacements.insert(a.id) }
            return fresh
        }
    }

    /// - Parameter link: the signaling server; by default a `SignalingClientLink` to
    ///   `config.signalingURL` reconnecting after `config.reconnectDelay`.
    public init(config: SubscriberNodeConfig, logger: Logger, link: (any SignalingLink)? = nil,
                onEvent: @escaping @Sendable (SubscriberNodeEvent) -> Void) {
        self.config = config
        self.logger = logger
        self.onEvent = onEvent
        let link = link ?? SignalingClientLink(url: config.signalingURL, tls: config.signalingTLS,
                                               reconnectDelay: config.reconnectDelay, logger: logger)
        self.link = link
        state = Mutex(State(session: SubscriberSession(config: config)))
        tracker = PlacementTracker()
        delayedSender = config.controlDelay > .zero ? DelayedSender(delay: config.controlDelay) { onEvent(.error($0)) } : nil
        signaller = config.sfu.map { JanusSignaller(config: $0, logger: logger) } ?? DirectSignaller(link: link)
        wakes.arm { [weak self] in await self?.tick() }
    }

    public var frameWindow: FrameWindow { frames.withLock { $0 } }
    public func tickFrameWindow() { frames.withLock { $0.tick(now: WallClock.nowNanos()) } }
    public var isConnected: Bool { state.withLock { $0.session.connected } }
    /// Remote candidates refused so far, every kind and session.
    public var candidatesRefused: Int { state.withLock { $0.session.candidateRefusals.total } }
    /// The publisher camera's latest `sceneStatus` (nil until one arrives).
    public var sceneStatus: SceneStatus? { state.withLock { $0.sceneStatus } }
    public var rejections: PoseRejectionCounter? { state.withLock { $0.media?.rejections } }
    /// The current session's media counters (decoded frames, poses, trailer and SEI readers).
    public var mediaStats: SubscriberMediaStats? { state.withLock { $0.media }?.stats }
    /// The newest annotation this subscriber placed that the publisher still shows.
    public var lastOwnAnnotation: String? { state.withLock { $0.ownAnnotations.last } }
    /// Every annotation of ours still shown, oldest first.
    public var ownAnnotationIds: [String] { state.withLock { $0.ownAnnotations } }
    /// Shows `text` over the picture in the window (the HUD), when there is one.
    public func setHUD(_ text: String) { state.withLock { $0.media }?.setHUD(text) }

    // MARK: running

    public func run() async {
        let watchdog = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                await self?.tick()
            }
        }
        defer { watchdog.cancel() }
        tasks.spawn { [weak self, signaller] in
            for await (sessionId, event) in signaller.events { await self?.feed(.negotiation(sessionId: sessionId, event)) }
        }
        for await event in link.events() {
            switch event {
            case .connected(let peerId): await feed(.signalingConnected(peerId: peerId))
            case .message(let message): await feed(.server(message))
            case .lost(let reason): await feed(.signalingLost(reason: reason))
            }
        }
        await feed(.stopping)
        await signaller.stop()
        wakes.stop()
        await tasks.cancelAll()
    }

    // MARK: carrying out the state machine's effects

    /// Runs the state machine under the lock and sends its messages to the server and its
    /// negotiation to the signaller there too, so they leave in the order it made them (an
    /// answer before its candidates). `link.send` and `carry` only queue. The other
    /// effects are the caller's, outside the lock.
    func step(_ event: SubscriberSession.Event) -> [SubscriberSession.Effect] {
        let now = MonotonicClock.nanos()
        return state.withLock { s in
            s.session.handle(event, now: now).filter { effect in
                switch effect {
                case .send(let message): try? link.send(message)
                case .negotiate(let negotiation): signaller.carry(negotiation)
                default: return true
                }
                return false
            }
        }
    }

    func feed(_ event: SubscriberSession.Event) async {
        for effect in step(event) { await perform(effect) }
    }

    private func tick() async {
        let media = state.withLock { $0.media }
        await feed(.tick(decodeBranches: media?.decodeBranchCount ?? 0))
    }

    private func perform(_ effect: SubscriberSession.Effect) async {
        switch effect {
        case .send, .negotiate:
            break  // carried out by `step`, in order
        case let .answer(sessionId, offer):
            do throws(RTCError) {
                let media = try await makeMedia(sessionId: sessionId)
                // Through Janus we wait for its ClientHello: sent first by us, as the client,
                // it was now and then dropped before Janus's side of ICE was ready, and
                // DTLS tried again only after its 1 s timer (docs/SCALING.md).
                let answer = try await media.answer(SessionDescription(kind: .offer, sdp: offer), dtlsServer: viaSFU)
                await feed(.answerCreated(sessionId: sessionId, sdp: answer.sdp))
            } catch {
                await feed(.answerFailed(sessionId: sessionId, reason: "\(error)"))
            }
        case let .addCandidates(sessionId, candidates, _):
            guard let media = state.withLock({ $0.media }) else { return }
            for candidate in candidates {
                do throws(RTCError) { try media.peer.addICECandidate(candidate) } catch {
                    let kind = if case .candidateRefused(let refusal) = error { refusal.kind.rawValue } else { "failed" }
                    await feed(.candidateFailed(sessionId: sessionId, kind: kind, reason: "\(error)"))
                }
            }
        case .requestKeyframe:
            // Sending the event runs the elements' handlers up to the RTP session: off the
            // cooperative pool.
            guard let media = state.withLock({ $0.media }) else { return }
            DispatchQueue.global().async { media.requestKeyframe() }
        case .stopMedia:
            let (media, events, feedback, sfuVoice) = state.withLock { s in
                defer { s.media = nil; s.events = nil; s.channel = nil; s.feedback = nil; s.sfuVoice = nil }
                return (s.media, s.events, s.feedback, s.sfuVoice)
            }
            events?.cancel()
            feedback?.task.cancel()
            // Its peer leaves the pipeline before the pipeline goes.
            sfuVoice?.runner.stop()
            await sfuVoice?.task.value
            // The pipeline goes to NULL on the state worker, not on this task.
            if let media { await media.shutDown() }
        case .wake(let at):
            wakes.schedule(at: at)
        case .emit(let event):
            onEvent(event)
        case .debug(let text):
            logger.debug("\(text)")
        case let .control(sessionId, text):
            receiveControl(text, sessionId: sessionId)
        }
    }

    /// Starts the reception reports once the publisher is verified and its `control`
    /// channel has arrived, whichever comes last. Opening our channel as soon as DTLS was
    /// up raced the association's start and the publisher's own channel: now and then
    /// (2 runs in 60 under load) an aiortc publisher got an open for a stream it already
    /// had and dropped the whole connection. Through an SFU there are no reports: our
    /// reports would reach Janus, which estimates the link itself (REMB) and caps the
    /// publisher.
    private func startReceptionReportsWhenReady(sessionId: String) {
        guard !viaSFU, verified.load(ordering: .acquiring) else { return }
        let media = state.withLock { s -> SubscriberMedia? in
            guard s.channel != nil, !s.feedbackRequested, let media = s.media else { return nil }
            s.feedbackRequested = true
            return media
        }
        if let media { startReceptionReports(media: media, sessionId: sessionId) }
    }

    /// Opens the `feedback` channel (unordered, no retransmission: a lost report is
    /// replaced by the next) and sends our `ReceptionReport`s on it every
    /// `receptionReportInterval`, for the publisher's congestion control.
    private func startReceptionReports(media: SubscriberMedia, sessionId: String) {
        let peer = media.peer
        let channel: DataChannel
        do throws(RTCError) {
            channel = try peer.createDataChannel(ReceptionReport.channelLabel, ordered: false, maxRetransmits: 0)
        } catch {
            logger.warning("session \(sessionId): no feedback channel (\(error)); the publisher adapts from RTCP alone")
            return
        }
        let interval = config.receptionReportInterval
        let adaptJitter = config.adaptJitterLatency
        let onEvent = self.onEvent
        var jitter = JitterLatency(configuration: config.jitterLatencyConfiguration)
        let echoes = EchoRoundTrips()
        let task = Task { [logger] in
            var tick = 0
            while !Task.isCancelled {
                guard (try? await Task.sleep(for: interval)) != nil else { return }
                tick += 1
                // The publisher's echo of a report: the path's round trip, which ends the
                // jitter buffer's start on an unknown path.
                if adaptJitter, let rtt = echoes.take(),
                   let ms = jitter.notePathRoundTrip(rtt, nowNanos: MonotonicClock.nanos()) {
                    peer.setJitterBufferLatency(ms: ms)
                    onEvent(.jitterLatency(sessionId: sessionId, ms: ms, retransmissionRoundTripMs: rtt))
                }
                // About once a second: the jitter buffer's latency follows what retransmission needs.
                if adaptJitter, tick % 5 == 0, let stats = peer.jitterBufferStats(),
                   let ms = jitter.update(stats, nowNanos: MonotonicClock.nanos()) {
                    peer.setJitterBufferLatency(ms: ms)
                    onEvent(.jitterLatency(sessionId: sessionId, ms: ms, retransmissionRoundTripMs: stats.retransmissionRoundTripMs))
                }
                guard channel.readyState == .open else { continue }
                let sent = Int64(MonotonicClock.nanos() / 1000)
                do throws(RTCError) { try channel.send(ReceptionReport.encode(peer.receptionReports(), sentMicros: sent)) } catch {
                    logger.debug("session \(sessionId): reception report not sent: \(error)")
                }
            }
        }
        let previous = state.withLock { s in
            defer { s.feedback = (channel, task, echoes) }
            return s.feedback
        }
        previous?.task.cancel()
    }

    /// A fresh pipeline per session: nothing of a dead session can leak into the next.
    private func makeMedia(sessionId: String) async throws(RTCError) -> SubscriberMedia {
        let media = try SubscriberMedia(config: config.sessionMedia, name: "subscriber") { [weak self] frame in
            guard let self else { return }
            guard self.verified.load(ordering: .acquiring) else { return }
            self.frames.withLock { $0.record(frame) }
            let posed = frame.pose.map { !$0.flags.contains(.missing) } ?? false
            // On a streaming thread: only events and messages to signaling (queued by `step`)
            // come of a decoded frame; the events are printed here.
            for case .emit(let event) in self.step(.frameDecoded(withPose: posed, pose: frame.pose)) { self.onEvent(event) }
        }
        verified.store(false, ordering: .releasing)
        if let muted = state.withLock({ $0.muted }) { media.voice?.setMuted(muted) }
        try await media.startAndWaitUntilPlaying()
        let events = Task { [weak self] in
            for await event in media.peer.events {
                guard let self else { return }
                await self.handle(event, session: sessionId)
            }
        }
        let old = state.withLock { s -> SubscriberMedia? in
            let old = s.media
            s.events?.cancel()
            s.feedback?.task.cancel()
            s.media = media; s.events = events; s.channel = nil; s.feedback = nil; s.feedbackRequested = false
            return old
        }
        if let old { await old.shutDown() }
        return media
    }

    private func handle(_ event: RTCEvent, session sessionId: String) async {
        switch event {
        case .localCandidate(let candidate):
            await feed(.localCandidate(sessionId: sessionId, candidate))
        case .connectionState(.connected):
            // DTLS is done: the publisher's certificate must be the one its offer names.
            guard let media = state.withLock({ $0.media }) else { return }
            let check = await media.peer.verifyRemoteFingerprintWhenReady()
            if check.isVerified {
                verified.store(true, ordering: .releasing)
                startReceptionReportsWhenReady(sessionId: sessionId)
                await feed(.peerConnected(sessionId: sessionId))
                tasks.spawn(sessionId) { [onEvent, peer = media.peer] in
                    if let route = await peer.selectedRoute() { onEvent(.mediaRoute(sessionId: sessionId, route: route)) }
                }
            } else {
                await feed(.peerRejected(sessionId: sessionId,
                                         reason: "the publisher's DTLS certificate does not match its SDP (\(check))"))
            }
        case .connectionState(.failed), .connectionState(.closed):
            await feed(.peerEnded(sessionId: sessionId, state: "\(event)"))
        case .dataChannel(let channel) where channel.label == "control":
            state.withLock { $0.channel = channel }
            startReceptionReportsWhenReady(sessionId: sessionId)
            if channel.readyState == .open { await feed(.controlChannelOpen) }
        case .dataChannelOpen(let label) where label == "control":
            await feed(.controlChannelOpen)
        case .dataChannelMessage(ReceptionReport.channelLabel, let message):
            // The publisher's echo of one of our reports; nothing else comes on this channel.
            guard case .text(let text) = message, let sent = ReceptionReport.decodeEcho(text),
                  state.withLock({ $0.feedback?.echoes })?.record(sentMicros: sent, nowMicros: Int64(MonotonicClock.nanos() / 1000)) == true else {
                logger.debug("session \(sessionId): not an echo of our reports on the feedback channel, dropped")
                return
            }
        case .dataChannelMessage(_, .text(let text)):
            guard verified.load(ordering: .acquiring) else {
                logger.debug("session \(sessionId): control message before the publisher was verified, dropped")
                return
            }
            receiveControl(text, sessionId: sessionId)
        case .pipelineError(let error):
            onEvent(.error("session \(sessionId): \(error)"))
        default:
            break
        }
    }

    /// A control reply or broadcast from the publisher (its data channel, or through an
    /// SFU: broadcasts on Janus's data channel, replies over signaling).
    private func receiveControl(_ text: String, sessionId: String) {
        do throws(ControlError) {
            let reply = try ControlCodec.decodeReply(text)
            // Our proofs of reception (through an SFU) are not the expert's requests: an
            // ack is silent, a refusal is said as an error.
            switch reply {
            case .ack(let id, _, _) where SubscriberSession.isReceptionProof(id: id): return
            case .error(let error) where SubscriberSession.isReceptionProof(id: error.id):
                onEvent(.error("the publisher refused our proof of reception \(error.id ?? ""): \(error.message)"))
                return
            default: break
            }
            switch reply {
            case .ack(let id, _, _): _ = step(.replyReceived(id: id))
            case .error(let error): if let id = error.id { _ = step(.replyReceived(id: id)) }
            case .sceneStatus, .annotations, .annotationVisibility, .voices: break
            case .voiceRoute(let route): routeVoice(route, sessionId: sessionId)
            }
            onEvent(.reply(reply))
            track(reply)
        } catch {
            onEvent(.error("unreadable control message from the publisher in session \(sessionId) (\(error)): \(text.prefix(200))"))
        }
    }

    /// The publisher's route for our voice through the SFU (only a session through the
    /// SFU gets one): published in its voice room, on the Janus server of our video.
    private func routeVoice(_ route: VoiceRoute, sessionId: String) {
        guard let server = (signaller as? JanusSignaller)?.server else {
            logger.debug("session \(sessionId): a voice route, but we are not subscribed through an SFU; ignored")
            return
        }
        let onEvent = self.onEvent
        let runner = state.withLock { s -> SubscriberSFUVoice? in
            if let current = s.sfuVoice { return current.runner }
            guard let media = s.media, let voice = media.voice, voice.capture != nil else { return nil }
            let runner = SubscriberSFUVoice(url: server, media: media, voice: voice, logger: logger) { note in
                onEvent(.sfuVoice(sessionId: sessionId, note))
            }
            s.sfuVoice = (runner, Task { await runner.run() })
            return runner
        }
        guard let runner else {
            logger.info("session \(sessionId): the publisher would hear us through the SFU, but we have no microphone")
            return
        }
        runner.route(route)
    }
}
