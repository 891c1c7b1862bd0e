import Logging
import PoseCastKit
import PoseMedia
import RTCSession
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
    /// A session that decodes nothing for this long is torn down and sought again.
    public var stallTimeout: Duration = .seconds(5)
    /// How long the media is watched when the room's publisher shows up under a new peer
    /// id while a session runs: frames in its second half keep the session (a signaling
    /// restart), none end it and ask the new publisher (the old one died meanwhile).
    public var liveMediaWindow: Duration = .seconds(1)
    /// Checks the publisher's marks in the decoded pictures (`--check-markers`); the
    /// executable feeds it this node's events and `media.onPicture`.
    public var markerWatcher: MarkerWatcher?
    public init(signalingURL: String) { self.signalingURL = signalingURL }
}

public enum SubscriberNodeEvent: Sendable {
    case signalingConnected(url: String, peerId: String)
    case signalingLost(reason: String)
    case serverError(code: SignalingErrorCode?, details: String)
    case sessionStarted(sessionId: String, producer: String)
    case connected(sessionId: String)
    case sessionEnded(sessionId: String, reason: String)
    case controlOpen
    /// A request we sent on the control channel.
    case requestSent(id: String, type: String, text: String)
    /// What the publisher answered or announced.
    case reply(ControlReply)
    /// How far an annotation of a known true point landed from it (`tapWorld`).
    case placement(PlacementReport)
    case error(String)
}

/// The expert side: finds the room's publisher, answers its offer, decodes the video
/// with each frame's pose, turns taps into `annotate` requests from the pose of the
/// frame on screen, and comes back by itself when the publisher or the server does.
public final class SubscriberNode: Sendable {
    public let config: SubscriberNodeConfig
    private let logger: Logger
    private let onEvent: @Sendable (SubscriberNodeEvent) -> Void
    private let state = Mutex(State())
    private let frames = Mutex(FrameWindow())
    private let tracker: PlacementTracker
    private let delayedSender: DelayedSender?

    private enum Phase {
        case idle
        case requested(producer: String)
        case active(sessionId: String, producer: String)
    }

    private struct State {
        var client: SignalingClient?
        var phase: Phase = .idle
        var media: SubscriberMedia?
        var channel: DataChannel?
        var events: Task<Void, Never>?
        var connected = false
        var controlAnnounced = false
        var earlyCandidates: [ICECandidate] = []
        var sessionStartedAt: ContinuousClock.Instant?
        var lastFrameAt: ContinuousClock.Instant?
        var requestNumber = 0
        /// The publisher camera's latest metering status.
        var sceneStatus: SceneStatus?
    }

    public init(config: SubscriberNodeConfig, logger: Logger, onEvent: @escaping @Sendable (SubscriberNodeEvent) -> Void) {
        self.config = config
        self.logger = logger
        self.onEvent = onEvent
        tracker = PlacementTracker()
        delayedSender = config.controlDelay > .zero ? DelayedSender(delay: config.controlDelay) { onEvent(.error($0)) } : nil
    }

    public var frameWindow: FrameWindow { frames.withLock { $0 } }
    public func tickFrameWindow() { frames.withLock { $0.tick(now: WallClock.nowNanos()) } }
    public var isConnected: Bool { state.withLock { $0.connected } }
    /// The publisher camera's latest `sceneStatus` (nil until one arrives).
    public var sceneStatus: SceneStatus? { state.withLock { $0.sceneStatus } }
    public var rejections: PoseRejectionCounter? { state.withLock { $0.media?.rejections } }

    // MARK: running

    public func run() async {
        let watchdog = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                self?.checkStall()
            }
        }
        defer { watchdog.cancel() }
        while !Task.isCancelled {
            do throws(SignalingClientError) {
                let client = try await SignalingClient.connect(url: config.signalingURL, tls: config.signalingTLS, logger: logger)
                state.withLock { $0.client = client }
                try client.send(.setPeerStatus(PeerStatus(roles: [.listener, .consumer], room: config.room,
                                                          role: config.role, token: config.token)))
                try client.send(.list)
                onEvent(.signalingConnected(url: config.signalingURL, peerId: client.peerId))
                await withTaskCancellationHandler {
                    for await message in client.messages { await handle(message, from: client) }
                } onCancel: { client.close() }
                if !Task.isCancelled { onEvent(.signalingLost(reason: "the signaling server closed the connection")) }
            } catch {
                onEvent(.signalingLost(reason: error.description))
            }
            state.withLock { $0.client = nil }
            // A request or negotiation that was under way died with the connection;
            // a connected session keeps its media (the watchdog ends it if it stalls).
            if !isConnected { endSession(reason: "signaling connection lost", tellServer: false) }
            try? await Task.sleep(for: config.reconnectDelay)
        }
        endSession(reason: "subscriber stopping", tellServer: true)
    }

    private func handle(_ message: ServerMessage, from client: SignalingClient) async {
        switch message {
        case .list(let producers):
            if let producer = producers.first(where: { config.producerId == nil || $0.id == config.producerId }) {
                producerAnnounced(producer.id, client: client)
            }
        case let .peerStatusChanged(peerId, roles, _, _, _):
            if roles.contains(.producer), config.producerId == nil || config.producerId == peerId {
                producerAnnounced(peerId, client: client)
            } else if roles.isEmpty, case .active(_, let producer) = state.withLock({ $0.phase }), producer == peerId {
                endSession(reason: "the publisher left", tellServer: false)
            }
        case let .sessionStarted(producer, sessionId):
            state.withLock { s in
                s.phase = .active(sessionId: sessionId, producer: producer)
                s.sessionStartedAt = .now
                s.lastFrameAt = nil
            }
            onEvent(.sessionStarted(sessionId: sessionId, producer: producer))
        case .peer(let message):
            await handlePeer(message, client: client)
        case .endSession(let sessionId):
            guard case .active(let current, _) = state.withLock({ $0.phase }), current == sessionId else { return }
            endSession(reason: "ended by the publisher or the server", tellServer: false)
            try? client.send(.list)
        case let .error(details, code):
            onEvent(.serverError(code: code, details: details))
            // A refused startSession leaves us waiting for nothing: look again.
            if case .requested = state.withLock({ $0.phase }) {
                state.withLock { $0.phase = .idle }
            }
        case .welcome, .startSession:
            break
        }
    }

    /// The room's publisher is `producer` (a room has one). A session with another peer id
    /// is either that same publisher back on a restarted signaling server under a new id,
    /// or a new publisher after the old one died while the server was away. The media
    /// tells which: `liveMediaWindow` later, frames still arriving mean the session is
    /// alive (keep it, follow the new id so its leaving is seen); none lately mean it is
    /// dead (drop it and ask the new publisher now, not after `stallTimeout`).
    private func producerAnnounced(_ producer: String, client: SignalingClient) {
        let (other, silentAlready) = state.withLock { s -> (Bool, Bool) in
            guard case .active(_, let current) = s.phase, current != producer else { return (false, false) }
            let last = s.lastFrameAt ?? s.sessionStartedAt ?? .now
            return (true, ContinuousClock.now - last > config.liveMediaWindow)
        }
        guard other else { return requestSession(with: producer, client: client) }
        // Nothing decoded for a whole window already: no need to watch any longer.
        if silentAlready { return settle(on: producer) }
        Task { [weak self] in
            try? await Task.sleep(for: self?.config.liveMediaWindow ?? .seconds(1))
            self?.settle(on: producer)
        }
    }

    private func settle(on producer: String) {
        let (silent, client) = state.withLock { s -> (String?, SignalingClient?) in
            guard case .active(let sessionId, let current) = s.phase, current != producer else { return (nil, s.client) }
            // Alive: a frame in the second half of the window, well after the announcement
            // (a dead publisher's last frames leave the jitter buffer within its latency).
            if let last = s.lastFrameAt, ContinuousClock.now - last < config.liveMediaWindow / 2 {
                s.phase = .active(sessionId: sessionId, producer: producer)
                return (nil, s.client)
            }
            return (current, s.client)
        }
        if let silent {
            // A session of the old server: the new one does not know it, nothing to tell it.
            endSession(reason: "publisher \(silent) went silent and \(producer) publishes in the room", tellServer: false)
        }
        if let client { requestSession(with: producer, client: client) }
    }

    private func requestSession(with producer: String, client: SignalingClient) {
        let go = state.withLock { s -> Bool in
            guard case .idle = s.phase else { return false }
            s.phase = .requested(producer: producer)
            return true
        }
        if go { try? client.send(.startSession(peerId: producer)) }
    }

    private func handlePeer(_ message: PeerMessage, client: SignalingClient) async {
        guard case .active(let sessionId, _) = state.withLock({ $0.phase }), sessionId == message.sessionId else {
            logger.debug("peer message for session \(message.sessionId), not ours")
            return
        }
        do throws(RTCError) {
            switch message.payload {
            case .sdp(let sdp):
                guard sdp.type == "offer" else { throw .invalidDescription("expected an offer, got \(sdp.type)") }
                let media = try await makeMedia(sessionId: sessionId)
                let answer = try await media.answer(SessionDescription(kind: .offer, sdp: sdp.sdp))
                try? client.send(.peer(PeerMessage(sessionId: sessionId, payload: .sdp(SignalingSDP(type: "answer", sdp: answer.sdp)))))
                let early = state.withLock { s in defer { s.earlyCandidates.removeAll() }; return s.earlyCandidates }
                for candidate in early { try media.peer.addICECandidate(candidate) }
            case .ice(let ice):
                // Trickled candidates can overtake the offer: keep them until it is applied.
                let candidate = ICECandidate(mlineIndex: ice.sdpMLineIndex, candidate: ice.candidate)
                guard let media = state.withLock({ s -> SubscriberMedia? in
                    if s.media == nil { s.earlyCandidates.append(candidate) }
                    return s.media
                }) else { return }
                try media.peer.addICECandidate(candidate)
            }
        } catch {
            onEvent(.error("session \(sessionId): \(error)"))
            if case .sdp = message.payload {
                endSession(reason: "could not answer: \(error)", tellServer: true)
            }
        }
    }

    /// A fresh pipeline per session: nothing of a dead session can leak into the next.
    private func makeMedia(sessionId: String) async throws(RTCError) -> SubscriberMedia {
        let media = try SubscriberMedia(config: config.media, name: "subscriber") { [weak self] frame in
            guard let self else { return }
            self.frames.withLock { $0.record(frame) }
            self.state.withLock { $0.lastFrameAt = .now }
        }
        try await media.startAndWaitUntilPlaying()
        let events = Task { [weak self] in
            for await event in media.peer.events {
                guard let self else { return }
                self.handle(event, session: sessionId)
            }
        }
        let old = state.withLock { s -> SubscriberMedia? in
            let old = s.media
            s.events?.cancel()
            s.media = media; s.events = events; s.channel = nil; s.connected = false; s.controlAnnounced = false
            return old
        }
        if let old { Task { await old.shutDown() } }
        return media
    }

    private func handle(_ event: RTCEvent, session sessionId: String) {
        switch event {
        case .localCandidate(let candidate):
            let client = state.withLock { $0.client }
            try? client?.send(.peer(PeerMessage(sessionId: sessionId, payload: .ice(
                SignalingICE(candidate: candidate.candidate, sdpMLineIndex: candidate.mlineIndex)))))
        case .connectionState(.connected):
            state.withLock { $0.connected = true }
            onEvent(.connected(sessionId: sessionId))
        case .connectionState(.failed), .connectionState(.closed):
            endSession(reason: "peer connection \(event)", tellServer: true)
        case .dataChannel(let channel) where channel.label == "control":
            state.withLock { $0.channel = channel }
            if channel.readyState == .open { announceControlOpen() }
        case .dataChannelOpen(let label) where label == "control":
            announceControlOpen()
        case .dataChannelMessage(_, .text(let text)):
            do throws(ControlError) {
                let reply = try ControlCodec.decodeReply(text)
                onEvent(.reply(reply))
                track(reply)
            } catch {
                onEvent(.error("unreadable control message from the publisher (\(error)): \(text.prefix(200))"))
            }
        case .pipelineError(let error):
            onEvent(.error("session \(sessionId): \(error)"))
        default:
            break
        }
    }

    /// The channel may arrive already open or open later; say so once per session.
    private func announceControlOpen() {
        let first = state.withLock { s in defer { s.controlAnnounced = true }; return !s.controlAnnounced }
        if first { onEvent(.controlOpen) }
    }

    private func checkStall() {
        let (stalled, media, everDecoded, connected) = state.withLock { s -> (Bool, SubscriberMedia?, Bool, Bool) in
            guard case .active = s.phase, let started = s.sessionStartedAt else { return (false, nil, false, false) }
            let last = s.lastFrameAt ?? started
            return (ContinuousClock.now - last > config.stallTimeout, s.media, s.lastFrameAt != nil, s.connected)
        }
        guard stalled else { return }
        // Say how far the media got, so a stall can be placed: never connected, no RTP
        // stream announced, or a stream that stopped decoding.
        let detail: String
        if !connected { detail = "peer connection not up" }
        else if (media?.decodeBranchCount ?? 0) == 0 { detail = "connected, but no video stream arrived" }
        else { detail = everDecoded ? "the video stopped" : "a video stream arrived, but no frame decoded" }
        endSession(reason: "no frames for \(config.stallTimeout) (\(detail))", tellServer: true)
        try? state.withLock { $0.client }?.send(.list)
    }

    private func endSession(reason: String, tellServer: Bool) {
        let (sessionId, media, events, client) = state.withLock { s -> (String?, SubscriberMedia?, Task<Void, Never>?, SignalingClient?) in
            var sessionId: String?
            if case .active(let id, _) = s.phase { sessionId = id }
            let result = (sessionId, s.media, s.events, s.client)
            s.phase = .idle; s.media = nil; s.events = nil; s.channel = nil; s.connected = false
            s.sessionStartedAt = nil; s.lastFrameAt = nil; s.earlyCandidates.removeAll()
            return result
        }
        events?.cancel()
        // Off this task: the pipeline goes to NULL on the state worker.
        if let media { Task { await media.shutDown() } }
        guard let sessionId else { return }
        if tellServer { try? client?.send(.endSession(sessionId: sessionId)) }
        onEvent(.sessionEnded(sessionId: sessionId, reason: reason))
    }

    // MARK: commands

    /// Sends a control request; returns its id.
    @discardableResult
    public func send(_ request: ControlRequest) throws(ControlError) -> String {
        let (channel, number) = state.withLock { s -> (DataChannel?, Int) in
            s.requestNumber += 1
            return (s.channel, s.requestNumber)
        }
        let id = "r\(number)"
        guard let channel, channel.readyState == .open else {
            throw ControlError(id: id, code: .unsupported, message: "no control channel open (not connected to a publisher)")
        }
        let text = ControlCodec.encode(ControlEnvelope(id: id, request: request))
        if let delayedSender {
            delayedSender.send(text, on: channel)
        } else {
            do throws(RTCError) { try channel.send(text) } catch {
                throw ControlError(id: id, code: .unsupported, message: "control channel: \(error)")
            }
        }
        onEvent(.requestSent(id: id, type: request.type, text: text))
        return id
    }

    /// A tap on the frame on screen → `annotate` at the world point it designates,
    /// from that frame's own pose and the configured placement. `naive` sends screen
    /// coordinates only, for the publisher to place with whatever pose it has when
    /// they arrive (the baseline the annotation benchmark measures).
    @discardableResult
    public func tap(at point: NormalizedPoint, kind: AnnotationKind = .pin, label: String = "",
                    color: String = "#FF3B30", naive: Bool = false) throws(ControlError) -> String {
        guard point.isInImage else {
            throw ControlError(id: nil, code: .invalidValue, message: "tap (\(point.x), \(point.y)) is outside the image: x and y must be in 0…1")
        }
        guard let frame = frames.withLock({ $0.lastFrame }) else {
            throw ControlError(id: nil, code: .unsupported, message: "no frame on screen yet")
        }
        guard let pose = frame.pose, !pose.flags.contains(.missing) else {
            throw ControlError(id: nil, code: .unsupported, message: "the frame on screen carries no usable pose; tap again")
        }
        return try send(.annotate(try annotateRequest(point, on: pose, kind: kind, label: label, color: color, naive: naive)))
    }

    private func annotateRequest(_ point: NormalizedPoint, on pose: FramePose, kind: AnnotationKind, label: String,
                                 color: String, naive: Bool) throws(ControlError) -> AnnotationRequest {
        if naive {
            return AnnotationRequest(kind: kind, placement: .screen, position: nil, frameId: pose.frameID, tap: point, label: label, color: color)
        }
        if config.placement == .publisherDepth {
            return AnnotationRequest(kind: kind, placement: .publisherDepth, position: nil, frameId: pose.frameID, tap: point,
                                     label: label, color: color)
        }
        do throws(PlacementError) {
            let position = try config.placement.place(point, on: pose)
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
                    naive: Bool = false) throws(ControlError) -> String {
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
        let request = try annotateRequest(tap, on: pose, kind: kind, label: label, color: color, naive: naive)
        let id = try send(.annotate(request))
        tracker.expect(request: id, truth: truth, placement: request.placement, frameId: pose.frameID)
        return id
    }

    private func track(_ reply: ControlReply) {
        switch reply {
        case let .ack(id, annotationId, _): tracker.acknowledged(request: id, annotationId: annotationId)
        case .error(let error): if let id = error.id { tracker.acknowledged(request: id, annotationId: nil) }
        case .sceneStatus(let status):
            state.withLock { $0.sceneStatus = status }
        case .annotations(let list):
            let later = frames.withLock { $0.lastFrame }
            for report in tracker.evaluate(list, later: later?.pose, width: later?.width ?? 0, height: later?.height ?? 0) {
                onEvent(.placement(report))
            }
        }
    }
}
