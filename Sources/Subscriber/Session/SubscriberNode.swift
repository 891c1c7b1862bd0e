import Dispatch
import Logging
import PoseCastKit
import PoseMedia
import RTCSession
import SFU
import Signaling
import Synchronization

public struct SubscriberNodeConfig: Sendable {
    public var signalingURL: String
    public var room = "default"
    public var token: String?
    /// How a `wss://` signaling server is checked (a CA file of its own, or the system's).
    public var signalingTLS: SignalingClientTLS?
    public var role: RoomRole = .expert
    /// Only this producer; nil: the room's first.
    public var producerId: String?
    public var media = SubscriberMediaConfig()
    /// How a tap becomes a world point: from the pose of the frame on screen onto the
    /// ground plane (default), other planes or a fixed depth; or by the publisher's depth.
    public var placement: PlacementMode = .groundPlane
    /// Holds outgoing control messages this long (simulates a slow control channel).
    public var controlDelay: Duration = .zero
    public var reconnectDelay: Duration = .seconds(1)
    /// Waits between attempts while the server answers that the room (or the publisher) is busy.
    public var roomRetry = RetryBackoff()
    /// A session that decodes nothing for this long is torn down and sought again.
    public var stallTimeout: Duration = .seconds(5)
    /// A connected session whose video decodes nothing for `initial` asks for a keyframe,
    /// then again after each wait (doubling, at most `maximum`) until a frame decodes.
    public var keyframeRetry = RetryBackoff(initial: .seconds(1), maximum: .seconds(2))
    /// How often we tell the publisher what we received (`ReceptionReport`, its
    /// congestion control's loss and queueing signal).
    public var receptionReportInterval: Duration = .milliseconds(200)
    /// The jitter buffer's latency follows retransmission's needs (`JitterLatency`), from
    /// `media.rtc.jitterBufferLatencyMs` up to a ceiling the path's round trip sets
    /// (within `maxJitterLatencyMs`); off: it stays there.
    public var adaptJitterLatency = true
    /// The most the jitter buffer's latency may reach (`JitterLatency`): its ceiling is two
    /// retransmission round trips of the path plus a margin, within this.
    public var maxJitterLatencyMs = 1000
    /// How long the media is watched when the room's publisher shows up under a new peer
    /// id while a session runs: frames in its second half keep the session (a signaling
    /// restart), none end it and ask the new publisher (the old one died meanwhile).
    public var liveMediaWindow: Duration = .seconds(1)
    /// A control request with no reply after this long is reported (`requestUnanswered`).
    public var controlReplyTimeout: Duration = .seconds(5)
    /// Checks the publisher's marks in the decoded pictures (`--check-markers`); the
    /// executable feeds it this node's events and `media.onPicture`.
    public var markerWatcher: MarkerWatcher?
    /// Take the media from an SFU (Janus) instead of the publisher: the session on
    /// signaling then carries control only (`{"via": "sfu"}` in our meta).
    public var sfu: SubscriberSFUConfig?
    public init(signalingURL: String) { self.signalingURL = signalingURL }
}

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
    case sfuSubscribed(sessionId: String, room: UInt64, feed: UInt64)
    case error(String)
}

/// The expert side: finds the room's publisher, answers its offer, decodes the video
/// with each frame's pose, turns taps into `annotate` requests from the pose of the
/// frame on screen, and comes back by itself when the publisher or the server does.
///
/// The session logic is `SubscriberSession`; this node feeds it what happens on the
/// signaling link, the peer and the media, and carries out its effects.
public final class SubscriberNode: Sendable {
    public let config: SubscriberNodeConfig
    private let logger: Logger
    private let onEvent: @Sendable (SubscriberNodeEvent) -> Void
    private let link: any SignalingLink
    private let state: Mutex<State>
    private let frames = Mutex(FrameWindow())
    private let tracker: PlacementTracker
    private let delayedSender: DelayedSender?
    /// The current session's publisher presented the certificate its offer names: frames
    /// and control messages before that are dropped (read per frame, on streaming threads).
    private let verified = Atomic<Bool>(false)
    /// The media's source when it comes through an SFU.
    private let sfu: SubscriberSFULink?

    private struct State {
        var session: SubscriberSession
        var media: SubscriberMedia?
        var channel: DataChannel?
        var events: Task<Void, Never>?
        /// Our reception reports to the publisher (`feedback` channel), while connected.
        var feedback: (channel: DataChannel, task: Task<Void, Never>)?
        /// The `feedback` channel of this session is asked for (at most once a session).
        var feedbackRequested = false
        var requestNumber = 0
        /// Our microphone muted (by a command since start; else the options' start state).
        var muted: Bool?
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
        self.link = link ?? SignalingClientLink(url: config.signalingURL, tls: config.signalingTLS,
                                                reconnectDelay: config.reconnectDelay, logger: logger)
        state = Mutex(State(session: SubscriberSession(config: config)))
        tracker = PlacementTracker()
        delayedSender = config.controlDelay > .zero ? DelayedSender(delay: config.controlDelay) { onEvent(.error($0)) } : nil
        sfu = config.sfu.map { SubscriberSFULink(config: $0, logger: logger) }
    }

    public var frameWindow: FrameWindow { frames.withLock { $0 } }
    public func tickFrameWindow() { frames.withLock { $0.tick(now: WallClock.nowNanos()) } }
    public var isConnected: Bool { state.withLock { $0.session.connected } }
    /// The publisher camera's latest `sceneStatus` (nil until one arrives).
    public var sceneStatus: SceneStatus? { state.withLock { $0.sceneStatus } }
    public var rejections: PoseRejectionCounter? { state.withLock { $0.media?.rejections } }
    /// The current session's media counters (decoded frames, poses, trailer and SEI readers).
    public var mediaStats: SubscriberMediaStats? { state.withLock { $0.media }?.stats }
    /// The newest annotation this subscriber placed that the publisher still shows.
    public var lastOwnAnnotation: String? { state.withLock { $0.ownAnnotations.last } }
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
        for await event in link.events() {
            switch event {
            case .connected(let peerId): await feed(.signalingConnected(peerId: peerId))
            case .message(let message):
                if sfu != nil {
                    // Through an SFU: control replies come over signaling, and our session's
                    // start is the moment to subscribe in Janus.
                    if case .peer(let m) = message, case .control(let text) = m.payload {
                        receiveControl(text, sessionId: m.sessionId)
                        continue
                    }
                    if case .sessionStarted(_, let sessionId) = message { subscribeThroughSFU(sessionId) }
                }
                await feed(.server(message))
            case .lost(let reason): await feed(.signalingLost(reason: reason))
            }
        }
        sfu?.close()
        await feed(.stopping)
    }

    /// Subscribes to the room's publisher in Janus for `sessionId`: its offer goes to the
    /// session machine as if the publisher had sent it; our answer and candidates go back
    /// to Janus (`route`).
    private func subscribeThroughSFU(_ sessionId: String) {
        guard let sfu else { return }
        Task { [weak self] in
            do throws(JanusError) {
                let (offer, feed) = try await sfu.subscribe()
                self?.onEvent(.sfuSubscribed(sessionId: sessionId, room: sfu.config.room, feed: feed))
                await self?.feed(.server(.peer(PeerMessage(sessionId: sessionId, payload: .sdp(SignalingSDP(type: "offer", sdp: offer))))))
                // Janus hanging up ends the session (a new one subscribes again).
                if let events = sfu.events {
                    for await event in events where event.verb == "hangup" || event.verb == "detached" {
                        await self?.feed(.peerEnded(sessionId: sessionId, state: "Janus \(event.verb)\(event.reason.map { ": \($0)" } ?? "")"))
                        return
                    }
                }
            } catch {
                self?.onEvent(.error("sfu: \(error)"))
                await self?.feed(.answerFailed(sessionId: sessionId, reason: "through the SFU: \(error)"))
            }
        }
    }

    /// Through an SFU, what the session machine would send the publisher goes to Janus
    /// instead: the answer (Janus's `start`) and our candidates. True when taken here.
    private func route(_ message: ClientMessage, to sfu: SubscriberSFULink) -> Bool {
        switch message {
        case .peer(let m):
            switch m.payload {
            case .sdp(let sdp):
                Task { [weak self] in
                    do throws(JanusError) { try await sfu.start(answer: sdp.sdp) } catch {
                        self?.onEvent(.error("sfu: \(error)"))
                        await self?.feed(.answerFailed(sessionId: m.sessionId, reason: "Janus refused our answer: \(error)"))
                    }
                }
                return true
            case .ice(let ice):
                sfu.trickle((ice.candidate, ice.sdpMLineIndex))
                return true
            case .control:
                return false
            }
        case .endSession:
            sfu.close()
            return false
        default:
            return false
        }
    }

    // MARK: carrying out the state machine's effects

    /// Runs the state machine under the lock and sends its messages to the server there
    /// too, so they leave in the order it made them (an answer before its candidates).
    /// `link.send` only queues. The other effects are the caller's, outside the lock.
    private func step(_ event: SubscriberSession.Event) -> [SubscriberSession.Effect] {
        let now = MonotonicClock.nanos()
        return state.withLock { s in
            s.session.handle(event, now: now).filter { effect in
                guard case .send(let message) = effect else { return true }
                if let sfu, route(message, to: sfu) { return false }
                try? link.send(message)
                return false
            }
        }
    }

    private func feed(_ event: SubscriberSession.Event) async {
        for effect in step(event) { await perform(effect) }
    }

    private func tick() async {
        let media = state.withLock { $0.media }
        await feed(.tick(decodeBranches: media?.decodeBranchCount ?? 0))
    }

    private func perform(_ effect: SubscriberSession.Effect) async {
        switch effect {
        case .send(let message):
            try? link.send(message)  // not reached: `step` sends
        case let .answer(sessionId, offer):
            do throws(RTCError) {
                let media = try await makeMedia(sessionId: sessionId)
                let answer = try await media.answer(SessionDescription(kind: .offer, sdp: offer))
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
            let (media, events, feedback) = state.withLock { s in
                defer { s.media = nil; s.events = nil; s.channel = nil; s.feedback = nil }
                return (s.media, s.events, s.feedback)
            }
            events?.cancel()
            feedback?.task.cancel()
            sfu?.close()
            // The pipeline goes to NULL on the state worker, not on this task.
            if let media { await media.shutDown() }
        case .wake(let at):
            let now = MonotonicClock.nanos()
            Task { [weak self] in
                if at > now { try? await Task.sleep(for: .nanoseconds(Int64(at - now))) }
                await self?.tick()
            }
        case .emit(let event):
            onEvent(event)
        case .debug(let text):
            logger.debug("\(text)")
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
        guard sfu == nil, verified.load(ordering: .acquiring) else { return }
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
        var jitterConfiguration = JitterLatency.Configuration(floorMs: config.media.rtc.jitterBufferLatencyMs)
        jitterConfiguration.maximumMs = config.maxJitterLatencyMs
        var jitter = JitterLatency(configuration: jitterConfiguration)
        let task = Task { [logger] in
            var tick = 0
            while !Task.isCancelled {
                guard (try? await Task.sleep(for: interval)) != nil else { return }
                tick += 1
                // About once a second: the jitter buffer's latency follows what retransmission needs.
                if adaptJitter, tick % 5 == 0, let stats = peer.jitterBufferStats(),
                   let ms = jitter.update(stats, nowNanos: MonotonicClock.nanos()) {
                    peer.setJitterBufferLatency(ms: ms)
                    onEvent(.jitterLatency(sessionId: sessionId, ms: ms, retransmissionRoundTripMs: stats.retransmissionRoundTripMs))
                }
                guard channel.readyState == .open else { continue }
                do throws(RTCError) { try channel.send(ReceptionReport.encode(peer.receptionReports())) } catch {
                    logger.debug("session \(sessionId): reception report not sent: \(error)")
                }
            }
        }
        let previous = state.withLock { s in
            defer { s.feedback = (channel, task) }
            return s.feedback
        }
        previous?.task.cancel()
    }

    /// A fresh pipeline per session: nothing of a dead session can leak into the next.
    private func makeMedia(sessionId: String) async throws(RTCError) -> SubscriberMedia {
        let media = try SubscriberMedia(config: config.media, name: "subscriber") { [weak self] frame in
            guard let self else { return }
            guard self.verified.load(ordering: .acquiring) else { return }
            self.frames.withLock { $0.record(frame) }
            let posed = frame.pose.map { !$0.flags.contains(.missing) } ?? false
            // On a streaming thread: only events come of a decoded frame, and they are printed here.
            for case .emit(let event) in self.step(.frameDecoded(withPose: posed)) { self.onEvent(event) }
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
                Task { [onEvent, peer = media.peer] in
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
            switch reply {
            case .ack(let id, _, _): _ = step(.replyReceived(id: id))
            case .error(let error): if let id = error.id { _ = step(.replyReceived(id: id)) }
            case .sceneStatus, .annotations, .voices: break
            }
            onEvent(.reply(reply))
            track(reply)
        } catch {
            onEvent(.error("unreadable control message from the publisher in session \(sessionId) (\(error)): \(text.prefix(200))"))
        }
    }

    // MARK: commands

    /// Mutes or unmutes our microphone (its stream goes on as silence) and tells the
    /// publisher, which tells everyone (`voices`). Kept for the next session too.
    public func setMuted(_ muted: Bool) throws(ControlError) {
        let voice = state.withLock { s -> SubscriberVoice? in s.muted = muted; return s.media?.voice }
        guard let voice, voice.capture != nil else {
            throw ControlError(id: nil, code: .unsupported, message: "no microphone: nothing to mute")
        }
        voice.setMuted(muted)
        if isConnected { _ = try send(.voice(muted: muted)) }
    }

    /// The expert's voice now (nil without voice), and the conversation as last listed.
    public var voice: SubscriberVoice? { state.withLock { $0.media?.voice } }
    public var voices: [VoiceParticipant] { state.withLock { $0.voices } }

    /// The pose of the newest decoded frame (the one on screen headless).
    public var frameOnScreen: FramePose? { frames.withLock { $0.lastFrame?.pose } }

    /// Sends a control request; returns its id. `beforeSending` gets the id before the
    /// request leaves: on loopback the reply can come back before `send` returns, so
    /// whatever must know the id when the reply arrives is recorded there.
    @discardableResult
    public func send(_ request: ControlRequest, beforeSending: ((String) -> Void)? = nil) throws(ControlError) -> String {
        let (channel, number, unavailable, connected) = state.withLock { s -> (DataChannel?, Int, String, Bool) in
            s.requestNumber += 1
            return (s.channel, s.requestNumber, s.session.controlUnavailableReason, s.session.connected)
        }
        let id = "r\(number)"
        guard connected else {
            throw ControlError(id: id, code: .unsupported, message: "no control channel: \(unavailable)")
        }
        let text = ControlCodec.encode(ControlEnvelope(id: id, request: request))
        // Where it goes: through an SFU, over signaling to the publisher's session for us;
        // else on the control channel. Each returns why it could not be sent, or nil.
        let transmit: () -> String?
        if sfu != nil {
            guard case .active(let sessionId, _) = state.withLock({ $0.session.phase }) else {
                throw ControlError(id: id, code: .unsupported, message: "no control channel: \(unavailable)")
            }
            transmit = { [link] in
                do throws(SignalingClientError) {
                    try link.send(.peer(PeerMessage(sessionId: sessionId, payload: .control(text))))
                    return nil
                } catch {
                    return "control over signaling: \(error)"
                }
            }
        } else {
            guard let channel, channel.readyState == .open else {
                let why = channel.map { "the control channel is \($0.readyState)" } ?? unavailable
                throw ControlError(id: id, code: .unsupported, message: "no control channel: \(why)")
            }
            transmit = { [delayedSender] in
                if let delayedSender {
                    delayedSender.send(text, on: channel)
                    return nil
                }
                do throws(RTCError) { try channel.send(text) } catch { return "control channel: \(error)" }
                return nil
            }
        }
        if case .annotate = request { state.withLock { _ = $0.annotateRequests.insert(id) } }
        beforeSending?(id)
        if let failure = transmit() {
            state.withLock { _ = $0.annotateRequests.remove(id) }
            tracker.acknowledged(request: id, annotationId: nil)
            throw ControlError(id: id, code: .unsupported, message: failure)
        }
        onEvent(.requestSent(id: id, type: request.type, text: text))
        _ = step(.requestSent(id: id, type: request.type))
        return id
    }

    /// A tap on the frame on screen → `annotate` at the world point it designates,
    /// (`shown`: that frame's pose, when the window knows which frame it drew),
    /// from that frame's own pose and the configured placement. `naive` sends screen
    /// coordinates only, for the publisher to place with whatever pose it has when
    /// they arrive (the baseline the annotation benchmark measures).
    @discardableResult
    public func tap(at point: NormalizedPoint, kind: AnnotationKind = .pin, label: String = "",
                    color: String = "#FF3B30", naive: Bool = false, shown: FramePose? = nil) throws(ControlError) -> String {
        guard point.isInImage else {
            throw ControlError(id: nil, code: .invalidValue, message: "tap (\(point.x), \(point.y)) is outside the image: x and y must be in 0…1")
        }
        guard let frame = frames.withLock({ $0.lastFrame }) else {
            throw ControlError(id: nil, code: .unsupported, message: "no frame on screen yet")
        }
        // The window says which frame it showed; otherwise the newest decoded one is on screen.
        guard let pose = shown ?? frame.pose, !pose.flags.contains(.missing) else {
            if naive {
                // Screen coordinates need no pose of ours: the publisher places them with
                // its own at arrival (frame id 0: there is none to name).
                return try send(.annotate(AnnotationRequest(kind: kind, placement: .screen, position: nil, frameId: frame.pose?.frameID ?? 0,
                                                            tap: point, label: label, color: color)))
            }
            let noPose = state.withLock { $0.session.publisherSendsNoPose }
            throw ControlError(id: nil, code: .unsupported, message: noPose
                ? "this publisher sends no pose with its frames: a tap cannot be placed in the world; `tapnaive` sends screen coordinates"
                : "the frame on screen carries no usable pose; tap again")
        }
        return try send(.annotate(try annotateRequest(point, on: pose, kind: kind, label: label, color: color, naive: naive)))
    }

    /// `placement`: this tap's own, in place of the configured one.
    private func annotateRequest(_ point: NormalizedPoint, on pose: FramePose, kind: AnnotationKind, label: String,
                                 color: String, naive: Bool, placement: PlacementMode? = nil) throws(ControlError) -> AnnotationRequest {
        if naive {
            return AnnotationRequest(kind: kind, placement: .screen, position: nil, frameId: pose.frameID, tap: point, label: label, color: color)
        }
        let placement = placement ?? config.placement
        if placement == .auto {
            // The ground point goes along for a publisher without depth; none when the tap's
            // ray misses the ground (the publisher says so if it has no depth either).
            let ground = try? PlacementMode.groundPlane.place(point, on: pose)
            return AnnotationRequest(kind: kind, placement: .auto, position: ground, frameId: pose.frameID, tap: point,
                                     label: label, color: color)
        }
        if placement == .publisherDepth {
            return AnnotationRequest(kind: kind, placement: .publisherDepth, position: nil, frameId: pose.frameID, tap: point,
                                     label: label, color: color)
        }
        do throws(PlacementError) {
            let position = try placement.place(point, on: pose)
            return AnnotationRequest(kind: kind, position: position, frameId: pose.frameID, tap: point, label: label, color: color)
        } catch {
            throw ControlError(id: nil, code: .invalidValue, message: "tap (\(point.x), \(point.y)) on frame \(pose.frameID): \(error)")
        }
    }

    /// Taps where a known world point appears on the frame on screen, and reports how
    /// far from it the annotation lands once the publisher has placed it (`.placement`
    /// events): the annotation benchmark's expert, whose tap lands on the centre of the
    /// pixel the point falls in (as a click does).
    @discardableResult
    public func tap(world truth: Vector3, kind: AnnotationKind = .pin, label: String = "", color: String = "#FF3B30",
                    method: TapMethod = .configured) throws(ControlError) -> String {
        guard let frame = frames.withLock({ $0.lastFrame }), let pose = frame.pose, let camera = CameraModel(pose: pose) else {
            throw ControlError(id: nil, code: .unsupported, message: "no frame with a usable pose on screen yet")
        }
        guard let projection = camera.project(truth), projection.isInImage else {
            throw ControlError(id: nil, code: .invalidValue,
                               message: "world point (\(truth.x), \(truth.y), \(truth.z)) is not in view on frame \(pose.frameID)")
        }
        var tap = projection.point
        if frame.width > 0, frame.height > 0 {
            let w = Float(frame.width), h = Float(frame.height)
            tap = NormalizedPoint(x: min(((tap.x * w).rounded(.down) + 0.5) / w, 1), y: min(((tap.y * h).rounded(.down) + 0.5) / h, 1))
        }
        let request = try annotateRequest(tap, on: pose, kind: kind, label: label, color: color, naive: method == .naive,
                                          placement: method == .ground ? .groundPlane : nil)
        let id = try send(.annotate(request)) { [tracker] id in
            tracker.expect(request: id, truth: truth, placement: request.placement, frameId: pose.frameID)
        }
        return id
    }

    private func track(_ reply: ControlReply) {
        switch reply {
        case let .ack(id, annotationId, _):
            tracker.acknowledged(request: id, annotationId: annotationId)
            let placed = state.withLock { s -> Annotation? in
                guard s.annotateRequests.remove(id) != nil, let annotationId else { return nil }
                s.ownAnnotations.append(annotationId)
                return s.newlyPlaced().first
            }
            if let placed { onEvent(.annotationPlaced(placed)) }
        case .error(let error):
            if let id = error.id {
                tracker.acknowledged(request: id, annotationId: nil)
                _ = state.withLock { $0.annotateRequests.remove(id) }
            }
        case .sceneStatus(let status):
            state.withLock { $0.sceneStatus = status }
        case .voices(let list):
            state.withLock { $0.voices = list }
        case .annotations(let list):
            let present = Set(list.map(\.id))
            let placed = state.withLock { s -> [Annotation] in
                s.ownAnnotations.removeAll { !present.contains($0) }
                // Only ids still shown need remembering (the set would grow for ever).
                s.reportedPlacements.formIntersection(present)
                s.lastAnnotations = list
                return s.newlyPlaced()
            }
            for annotation in placed { onEvent(.annotationPlaced(annotation)) }
            let later = frames.withLock { $0.lastFrame }
            for report in tracker.evaluate(list, later: later?.pose, width: later?.width ?? 0, height: later?.height ?? 0) {
                onEvent(.placement(report))
            }
        }
    }
}
