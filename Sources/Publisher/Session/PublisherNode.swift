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
    /// Control-channel messages each session may send (over it: `error rateLimited`, not executed).
    public var controlRate = ControlRateLimit.standard
    public init(signalingURL: String) { self.signalingURL = signalingURL }
}

public enum PublisherNodeEvent: Sendable {
    case signalingConnected(url: String, peerId: String)
    case signalingLost(reason: String)
    /// The server refused something we sent (a token, the room …).
    case serverError(code: SignalingErrorCode?, details: String)
    case sessionStarted(sessionId: String, consumer: String, role: RoomRole)
    case subscriberConnected(sessionId: String)
    case sessionEnded(sessionId: String, reason: String)
    /// A control request and what we answered.
    case control(sessionId: String, request: String?, reply: ControlReply)
    case error(String)
}

/// The publisher side of a call: registers as the room's producer, opens one
/// webrtcbin branch per subscriber session (one encoder for all), answers the control
/// channel and keeps the annotation list in step on every expert's side. Media keeps
/// flowing while the signaling connection is down; it reconnects by itself.
public final class PublisherNode: Sendable {
    public let media: PublisherMedia
    public let config: PublisherNodeConfig
    public let board = AnnotationBoard()
    private let control: PublisherControl
    private let logger: Logger
    private let onEvent: @Sendable (PublisherNodeEvent) -> Void
    private let state = Mutex(State())

    private struct Session {
        var peer: WebRTCPeer
        var role: RoomRole
        var consumer: String
        var channel: DataChannel?
        var connected = false
        var events: Task<Void, Never>?
        var limiter: ControlRateLimiter
        /// Candidates gathered before the offer went out wait here: a peer cannot add a
        /// candidate before it has the description it belongs to (aiortc drops it,
        /// browsers refuse it).
        var offerSent = false
        var pendingCandidates: [ICECandidate] = []
        /// The signaling connection the session was set up through: a server restarted
        /// since does not know it, so its end is not reported there.
        weak var signaling: SignalingClient?
    }

    private struct State {
        var client: SignalingClient?
        var sessions: [String: Session] = [:]
        /// Sessions announced but still being set up (their branch is being built).
        var starting: Set<String> = []
        /// Sessions ended by the server while still being set up.
        var endedWhileStarting: Set<String> = []
        var sessionNumber = 0
    }

    public init(media: PublisherMedia, config: PublisherNodeConfig, logger: Logger,
                onEvent: @escaping @Sendable (PublisherNodeEvent) -> Void) {
        self.media = media
        self.config = config
        self.logger = logger
        self.onEvent = onEvent
        control = PublisherControl(board: board, placer: AnnotationPlacer(history: media.frameHistory,
                                                                          planes: config.placementPlanes),
                                   camera: media.cameraMeter.map { CameraMeterCommands(meter: $0) },
                                   noCameraReason: media.cameraControlUnavailable)
    }

    /// Sessions with a connected subscriber / all sessions.
    public var subscriberCounts: (connected: Int, total: Int) {
        state.withLock { s in (s.sessions.values.filter(\.connected).count, s.sessions.count) }
    }

    /// Runs until the task is cancelled: connect, register, serve; on a lost
    /// connection wait `reconnectDelay` and start again.
    public func run() async {
        // The camera's metering status goes to every session five times a second.
        let statusStream = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(200))
                guard let self, let status = self.media.cameraMeter?.status else { continue }
                self.broadcast(.sceneStatus(status))
            }
        }
        defer { statusStream.cancel() }
        while !Task.isCancelled {
            do throws(SignalingClientError) {
                let client = try await SignalingClient.connect(url: config.signalingURL, tls: config.signalingTLS, logger: logger)
                state.withLock { $0.client = client }
                try client.send(.setPeerStatus(PeerStatus(
                    roles: [.producer], meta: .object(["name": .string(config.name)]),
                    room: config.room, role: .publisher, token: config.token)))
                onEvent(.signalingConnected(url: config.signalingURL, peerId: client.peerId))
                await withTaskCancellationHandler {
                    for await message in client.messages { await handle(message, from: client) }
                } onCancel: { client.close() }
                state.withLock { $0.client = nil }
                if !Task.isCancelled { onEvent(.signalingLost(reason: "the signaling server closed the connection")) }
            } catch {
                state.withLock { $0.client = nil }
                onEvent(.signalingLost(reason: error.description))
            }
            try? await Task.sleep(for: config.reconnectDelay)
        }
        for id in state.withLock({ Array($0.sessions.keys) }) { endSession(id, reason: "publisher stopping", tellServer: false) }
    }

    private func handle(_ message: ServerMessage, from client: SignalingClient) async {
        switch message {
        case let .startSession(consumer, sessionId, role, _):
            // Negotiation awaits the pipeline; never block the message loop on it.
            Task { await self.startSession(sessionId, consumer: consumer, role: role ?? .viewer, client: client) }
        case .peer(let message):
            guard let peer = state.withLock({ $0.sessions[message.sessionId]?.peer }) else {
                logger.debug("peer message for an unknown session \(message.sessionId)")
                return
            }
            do throws(RTCError) {
                switch message.payload {
                case .sdp(let sdp):
                    guard sdp.type == "answer" else { throw .invalidDescription("expected an answer, got \(sdp.type)") }
                    try await peer.setRemoteDescription(SessionDescription(kind: .answer, sdp: sdp.sdp))
                case .ice(let ice):
                    try peer.addICECandidate(ICECandidate(mlineIndex: ice.sdpMLineIndex, candidate: ice.candidate))
                }
            } catch {
                onEvent(.error("session \(message.sessionId): \(error)"))
                if case .sdp = message.payload { endSession(message.sessionId, reason: "bad answer: \(error)", tellServer: true) }
            }
        case .endSession(let sessionId):
            state.withLock { s in if s.starting.contains(sessionId) { s.endedWhileStarting.insert(sessionId) } }
            endSession(sessionId, reason: "ended by the subscriber or the server", tellServer: false)
        case let .error(details, code):
            onEvent(.serverError(code: code, details: details))
        case .welcome, .peerStatusChanged, .list, .sessionStarted:
            break
        }
    }

    private func startSession(_ sessionId: String, consumer: String, role: RoomRole, client: SignalingClient) async {
        let number = state.withLock { s in s.sessionNumber += 1; s.starting.insert(sessionId); return s.sessionNumber }
        do throws(RTCError) {
            let peer = try await media.addPeer(name: "session\(number)")
            // A subscriber that dies while no signaling server can tell us (one restarted
            // meanwhile) is then found by ICE itself, and its session ended.
            peer.enableKeepaliveChecks()
            let endedMeanwhile = state.withLock { s in
                s.starting.remove(sessionId)
                return s.endedWhileStarting.remove(sessionId) != nil
            }
            guard !endedMeanwhile else {
                media.removePeer(peer)
                onEvent(.sessionEnded(sessionId: sessionId, reason: "ended before it was set up"))
                return
            }
            let events = Task { [weak self] in
                for await event in peer.events {
                    guard let self else { return }
                    self.handle(event, session: sessionId)
                }
            }
            state.withLock { $0.sessions[sessionId] = Session(peer: peer, role: role, consumer: consumer, events: events,
                                                                    limiter: ControlRateLimiter(limit: config.controlRate, now: MonotonicClock.nanos()))
                             $0.sessions[sessionId]?.signaling = client }
            onEvent(.sessionStarted(sessionId: sessionId, consumer: consumer, role: role))
            let channel = try peer.createDataChannel("control")
            state.withLock { $0.sessions[sessionId]?.channel = channel }
            let offer = try await peer.createOffer()
            try await peer.setLocalDescription(offer)
            try? client.send(.peer(PeerMessage(sessionId: sessionId, payload: .sdp(SignalingSDP(type: "offer", sdp: offer.sdp)))))
            let pending = state.withLock { s -> [ICECandidate] in
                s.sessions[sessionId]?.offerSent = true
                defer { s.sessions[sessionId]?.pendingCandidates = [] }
                return s.sessions[sessionId]?.pendingCandidates ?? []
            }
            for candidate in pending { send(candidate, session: sessionId, via: client) }
        } catch {
            state.withLock { s in s.starting.remove(sessionId); s.endedWhileStarting.remove(sessionId) }
            onEvent(.error("session \(sessionId) could not start: \(error)"))
            endSession(sessionId, reason: "could not start: \(error)", tellServer: true)
        }
    }

    private func handle(_ event: RTCEvent, session sessionId: String) {
        switch event {
        case .localCandidate(let candidate):
            let client = state.withLock { s -> SignalingClient? in
                guard s.sessions[sessionId]?.offerSent == false else { return s.client }
                s.sessions[sessionId]?.pendingCandidates.append(candidate)
                return nil
            }
            if let client { send(candidate, session: sessionId, via: client) }
        case .connectionState(.connected):
            guard state.withLock({ s -> Bool in
                s.sessions[sessionId]?.connected = true
                return s.sessions[sessionId] != nil
            }) else { return }
            onEvent(.subscriberConnected(sessionId: sessionId))
        case .connectionState(.failed), .connectionState(.closed):
            endSession(sessionId, reason: "peer connection \(event)", tellServer: true)
        case .dataChannelOpen(let label) where label == "control":
            send(.annotations(board.all), to: sessionId)
        case .dataChannelMessage(_, let message):
            // The rate limiter is pure state: admit under the lock, handle outside it.
            let now = MonotonicClock.nanos()
            guard let (role, consumer, refusedBy) = state.withLock({ s -> (RoomRole, String, ControlRateLimiter?)? in
                guard var session = s.sessions[sessionId] else { return nil }
                let admitted = session.limiter.admit(at: now)
                s.sessions[sessionId] = session
                return (session.role, session.consumer, admitted ? nil : session.limiter)
            }) else { return }
            let outcome = control.handle(message, from: consumer, role: role, refusedBy: refusedBy)
            send(outcome.reply, to: sessionId)
            onEvent(.control(sessionId: sessionId, request: outcome.requestType, reply: outcome.reply))
            if outcome.annotationsChanged { broadcastAnnotations() }
        case .pipelineError(let error):
            onEvent(.error("session \(sessionId): \(error)"))
        default:
            break
        }
    }

    private func send(_ candidate: ICECandidate, session sessionId: String, via client: SignalingClient) {
        try? client.send(.peer(PeerMessage(sessionId: sessionId, payload: .ice(
            SignalingICE(candidate: candidate.candidate, sdpMLineIndex: candidate.mlineIndex)))))
    }

    private func send(_ reply: ControlReply, to sessionId: String) {
        guard let channel = state.withLock({ $0.sessions[sessionId]?.channel }), channel.readyState == .open else { return }
        do throws(RTCError) { try channel.send(ControlCodec.encode(reply)) } catch {
            logger.warning("control reply to \(sessionId) not sent: \(error)")
        }
    }

    /// Sends the current list to every session (viewers see annotations too) and to
    /// the overlay that draws them into the video.
    private func broadcastAnnotations() {
        media.setAnnotations(board.all)
        broadcast(.annotations(board.all))
    }

    private func broadcast(_ reply: ControlReply) {
        let ids = state.withLock { Array($0.sessions.keys) }
        for id in ids { send(reply, to: id) }
    }

    private func endSession(_ sessionId: String, reason: String, tellServer: Bool) {
        guard let session = state.withLock({ $0.sessions.removeValue(forKey: sessionId) }) else { return }
        session.events?.cancel()
        media.removePeer(session.peer)
        if tellServer, let client = state.withLock({ $0.client }), session.signaling === client {
            try? client.send(.endSession(sessionId: sessionId))
        }
        onEvent(.sessionEnded(sessionId: sessionId, reason: reason))
    }
}
