import Logging
import PoseCastKit
import PoseMedia
import Publisher
import Subscriber
import Publisher
import RTCSession
import Signaling
import Synchronization
import TestSupport
import Testing

/// The control channel's per-session rate limit, on an injected clock (nanoseconds).
@Suite("control channel rate limit")
struct ControlRateLimitTests {
    static let second: UInt64 = 1_000_000_000

    @Test("a burst is admitted, then the sustained rate; a refusal costs nothing")
    func tokenBucket() {
        var limiter = ControlRateLimiter(limit: .standard, now: 0)
        func admit(_ now: UInt64) -> Bool { limiter.admit(at: now) }
        let admittedAtOnce = (0..<100).filter { _ in limiter.admit(at: 0) }.count
        #expect(admittedAtOnce == 40)
        #expect(limiter.refused == 60)
        // 20/s: one token every 50 ms.
        #expect(!admit(49_000_000))
        #expect(admit(50_000_000))
        #expect(!admit(50_000_000))
        // Over ten seconds at 100 requests a second, about 20 a second get through.
        var admitted = 0
        for i in 1...1000 where limiter.admit(at: 50_000_000 + UInt64(i) * 10_000_000) { admitted += 1 }
        #expect((199...201).contains(admitted), "\(admitted) admitted in 10 s")
        // Idle long enough, the whole burst is back (and no more).
        let later = 60 * Self.second
        let refilled = (0..<100).filter { _ in limiter.admit(at: later) }.count
        #expect(refilled == 40)
    }

    @Test("the wait until the next token, a clock that goes backwards, and no limit")
    func edges() {
        var limiter = ControlRateLimiter(limit: ControlRateLimit(requestsPerSecond: 4, burst: 1), now: 10 * Self.second)
        func admit(_ now: UInt64) -> Bool { limiter.admit(at: now) }
        #expect(admit(10 * Self.second))
        #expect(!admit(10 * Self.second))
        #expect(abs(limiter.secondsUntilNextToken() - 0.25) < 1e-9)
        #expect(!admit(5 * Self.second), "going backwards refills nothing")
        #expect(admit(10 * Self.second + Self.second / 4))
        var unlimited = ControlRateLimiter(limit: .unlimited, now: 0)
        let allAdmitted = (0..<10_000).allSatisfy { _ in unlimited.admit(at: 0) }
        #expect(allAdmitted)
        #expect(ControlRateLimit.standard.description == "20 requests/s, burst 40")
    }

    @Test("requests over the limit are answered rateLimited with their id and not executed; the session goes on")
    func publisherRefusesOverLimit() throws {
        let board = AnnotationBoard()
        let control = PublisherControl(board: board, placer: AnnotationPlacer(history: FrameHistory(capacity: 4)))
        var limiter = ControlRateLimiter(limit: ControlRateLimit(requestsPerSecond: 2, burst: 3), now: 0)
        func annotate(_ id: String) -> DataChannelMessage {
            .text(ControlCodec.encode(ControlEnvelope(id: id, request: .annotate(AnnotationRequest(
                position: Vector3(0, 0, -1), frameId: 1, tap: NormalizedPoint(x: 0.5, y: 0.5))))))
        }
        func send(_ message: DataChannelMessage, at now: UInt64) -> ControlOutcome {
            let admitted = limiter.admit(at: now)
            return control.handle(message, from: "e", role: .expert, refusedBy: admitted ? nil : limiter)
        }
        var replies: [ControlReply] = []
        for i in 0..<5 { replies.append(send(annotate("r\(i)"), at: 0).reply) }
        #expect(replies.prefix(3).allSatisfy { if case .ack = $0 { true } else { false } })
        for (i, reply) in replies.enumerated().dropFirst(3) {
            guard case .error(let e) = reply else { Issue.record("r\(i) not refused: \(reply)"); continue }
            #expect(e.code == .rateLimited && e.id == "r\(i)", "\(e)")
            #expect(e.message.contains("2 requests/s, burst 3") && e.message.contains("retry in 500 ms"), "\(e.message)")
        }
        #expect(board.all.count == 3, "refused requests are not executed")
        // Garbage counts against the limit too, and is answered without an id.
        guard case .error(let garbage) = send(.text("{not json"), at: Self.second / 2 - 1).reply else { Issue.record("accepted"); return }
        #expect(garbage.code == .rateLimited && garbage.id == nil)
        guard case .error(let binary) = send(.binary([1, 2, 3]), at: Self.second / 2 - 1).reply else { Issue.record("accepted"); return }
        #expect(binary.code == .rateLimited)
        // Half a second later one token is back: the session goes on.
        #expect(send(annotate("r5"), at: Self.second / 2).reply == .ack(id: "r5", annotationId: "a4"))
        #expect(board.all.count == 4)
        // The refusal survives the wire.
        let wire = ControlCodec.encode(ControlReply.error(ControlError(id: "x", code: .rateLimited, message: "slow down")))
        let back = try ControlCodec.decodeReply(wire)
        #expect(back == .error(ControlError(id: "x", code: .rateLimited, message: "slow down")))
    }

    @Test("a real publisher node answers a burst over its limit rateLimited and keeps serving the session")
    func publisherNodeOverSignaling() async throws {
        var logger = Logger(label: "rate-limit-test")
        logger.logLevel = .critical
        let server = try await SignalingServer.start(SignalingServerConfiguration(port: 0), logger: logger)
        var mediaConfig = PublisherMediaConfig()
        mediaConfig.width = 160; mediaConfig.height = 120; mediaConfig.fps = 10
        let orbit = OrbitTrajectory(intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3))
        let media = try PublisherMedia(config: mediaConfig, poseSource: { id, t in orbit.pose(at: Double(id) / 10, frameID: id, captureTimeNanos: t) })
        try await media.start()
        var nodeConfig = PublisherNodeConfig(signalingURL: server.url)
        nodeConfig.controlRate = ControlRateLimit(requestsPerSecond: 2, burst: 5)
        let publisher = PublisherNode(media: media, config: nodeConfig, logger: logger) { _ in }
        var subscriberConfig = SubscriberNodeConfig(signalingURL: server.url)
        subscriberConfig.role = .expert
        let seen = Mutex((open: false, replies: [ControlReply]()))
        let subscriber = SubscriberNode(config: subscriberConfig, logger: logger) { event in
            switch event {
            case .controlOpen: seen.withLock { $0.open = true }
            case .reply(let reply):
                switch reply {
                case .ack, .error: seen.withLock { $0.replies.append(reply) }
                case .annotations, .annotationVisibility, .sceneStatus, .voices, .voiceRoute: break
                }
            default: break
            }
        }
        let running = [Task { await publisher.run() }, Task { await subscriber.run() }]
        // Both nodes end their sessions before the pipeline stops (stopping it under a live
        // session hangs); then the server goes.
        func shutDown() async {
            for task in running { task.cancel() }
            for task in running { await task.value }
            media.stop()
            await server.stop()
        }
        do {
            try await waitUntil(30, "the control channel to open") { seen.withLock { $0.open } }
            let ids = try (0..<12).map { _ in try subscriber.send(.clearAnnotations) }
            try await waitUntil(15, "12 replies", progress: { "\(seen.withLock { $0.replies.count })" }) { seen.withLock { $0.replies.count } >= 12 }
            var acked: [String] = [], limited: [String] = [], answered: [String] = []
            for reply in seen.withLock({ $0.replies }) {
                switch reply {
                case .ack(let id, _, _): acked.append(id); answered.append(id)
                case .error(let e) where e.code == .rateLimited: limited.append(e.id ?? "?"); answered.append(e.id ?? "?")
                default: Issue.record("unexpected reply \(reply)")
                }
            }
            // The burst of 5 at once, perhaps one or two more refilled while the 12 travelled.
            #expect((5...7).contains(acked.count), "acked \(acked), refused \(limited)")
            #expect(acked.prefix(5) == ids.prefix(5), "the first five are the burst")
            #expect(answered == ids, "every request answered once, in order, with its id")
            // The refill a second later is `sessionServedAgainAfterRefill`, on stepped time.
            print("publisher node rate limit (2/s, burst 5): 12 at once → \(acked.count) acked, \(limited.count) rateLimited")
        } catch {
            await shutDown()
            throw error
        }
        await shutDown()
    }

    @Test("the session state machine: 12 at once → the burst of 5 executed, 7 rateLimited in order; a second later served again")
    func sessionServedAgainAfterRefill() throws {
        var config = PublisherNodeConfig(signalingURL: "ws://signaling.test/")
        config.controlRate = ControlRateLimit(requestsPerSecond: 2, burst: 5)
        var sessions = PublisherSessions(config: config)
        var now = 7 * Self.second
        _ = sessions.handle(.signalingConnected(peerId: "p"), now: now)
        _ = sessions.handle(.server(.startSession(peerId: "e", sessionId: "s", role: .expert, meta: nil)), now: now)
        _ = sessions.handle(.branchBuilt(sessionId: "s"), now: now)
        _ = sessions.handle(.peerConnected(sessionId: "s"), now: now)
        func request(_ id: String) -> [PublisherSessions.Effect] {
            let text = ControlCodec.encode(ControlEnvelope(id: id, request: .clearAnnotations))
            return sessions.handle(.controlMessage(sessionId: "s", .text(text)), now: now)
        }
        var executed: [String] = [], limited: [String] = []
        for i in 0..<12 {
            for effect in request("r\(i)") {
                switch effect {
                case .executeControl: executed.append("r\(i)")
                case .sendControl(.error(let e), _) where e.code == .rateLimited: limited.append(e.id ?? "?")
                default: break
                }
            }
        }
        #expect(executed == (0..<5).map { "r\($0)" })
        #expect(limited == (5..<12).map { "r\($0)" })
        now += Self.second
        let after = request("r12")
        #expect(after.contains { if case .executeControl = $0 { true } else { false } }, "\(after)")
    }

    @Test("the publisher node's default is 20 requests/s with a burst of 40")
    func nodeDefault() {
        #expect(PublisherNodeConfig(signalingURL: "ws://127.0.0.1:1/").controlRate == .standard)
    }
}
