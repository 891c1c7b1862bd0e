import PoseCastKit
import RTCSession
import Signaling
import Subscriber
import Logging
import Synchronization
import Testing

/// The subscriber's session logic fed events directly, on stepped time (nanoseconds):
/// no socket, no GStreamer, no sleep.
struct SubscriberHarness {
    static let ms: UInt64 = 1_000_000
    var machine: SubscriberSession
    var now: UInt64 = 10_000 * ms

    init(producerId: String? = nil, sfu: SubscriberSFUConfig? = nil) {
        var config = SubscriberNodeConfig(signalingURL: "ws://signaling.test/")
        config.room = "site"
        config.producerId = producerId
        config.sfu = sfu
        config.stallTimeout = .seconds(5)
        config.liveMediaWindow = .seconds(1)
        machine = SubscriberSession(config: config)
    }

    mutating func handle(_ event: SubscriberSession.Event, after step: UInt64 = 0) -> [SubscriberSession.Effect] {
        now += step * Self.ms
        return machine.handle(event, now: now)
    }

    /// Connected as `me`, the room's publisher `producer` found and session `id` started.
    mutating func activeSession(_ id: String, with producer: String, me: String = "e1") {
        #expect(handle(.signalingConnected(peerId: me)).sent == SubscriberSessionTests.register)
        #expect(handle(.server(.list(producers: [ProducerInfo(id: producer)]))).sent == [.startSession(peerId: producer)])
        #expect(handle(.server(.sessionStarted(peerId: producer, sessionId: id))).events.count == 1)
        #expect(machine.phase == .active(sessionId: id, producer: producer))
    }

    /// Frames every 40 ms for `milliseconds`, with a pose unless `posed` is false.
    mutating func frames(for milliseconds: UInt64, posed: Bool = true) {
        for _ in 0..<(milliseconds / 40) { #expect(handle(.frameDecoded(withPose: posed), after: 40).isEmpty) }
    }
}

extension [SubscriberSession.Effect] {
    var sent: [ClientMessage] { compactMap { if case .send(let m) = $0 { m } else { nil } } }
    /// What the machine asks the signaller to negotiate.
    var negotiated: [SubscriberSession.Negotiation] { compactMap { if case .negotiate(let n) = $0 { n } else { nil } } }
    /// What reaches the signaling server with the direct signaller (the publisher on the
    /// other side): the messages and the negotiation, in the machine's order.
    var toServer: [ClientMessage] {
        compactMap {
            switch $0 {
            case .send(let m): m
            case .negotiate(let n): DirectSignaller.message(for: n)
            default: nil
            }
        }
    }
    var events: [SubscriberNodeEvent] { compactMap { if case .emit(let e) = $0 { e } else { nil } } }
    var endedReasons: [String] { events.compactMap { if case .sessionEnded(_, let r) = $0 { r } else { nil } } }
    var stopsMedia: Bool { contains { if case .stopMedia = $0 { true } else { false } } }
    var wakes: [UInt64] { compactMap { if case .wake(let at) = $0 { at } else { nil } } }
    var keyframeRequests: [String] { compactMap { if case .requestKeyframe(let id) = $0 { id } else { nil } } }
    /// Without the keyframe requests and their events.
    var otherThanKeyframes: [SubscriberSession.Effect] {
        filter {
            switch $0 {
            case .requestKeyframe, .emit(.keyframeRequested): false
            default: true
            }
        }
    }
}

@Suite("subscriber session (state machine)")
struct SubscriberSessionTests {
    static let ms = SubscriberHarness.ms
    static let register: [ClientMessage] = [.setPeerStatus(PeerStatus(roles: [.listener, .consumer], room: "site", role: .expert)), .list]

    @Test("a lost server ends a session being set up; on the next connection it registers, lists and asks again")
    func reconnect() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "pub")
        let lost = h.handle(.signalingLost(reason: "the signaling server closed the connection"), after: 100)
        #expect(lost.endedReasons == ["signaling connection lost"] && lost.stopsMedia && lost.sent.isEmpty)
        #expect(h.machine.phase == .idle)
        #expect(h.handle(.signalingConnected(peerId: "e2"), after: 1000).sent == Self.register)
        #expect(h.handle(.server(.list(producers: [ProducerInfo(id: "pub2")]))).sent == [.startSession(peerId: "pub2")])
        // A connected session keeps its media through a lost server.
        _ = h.handle(.server(.sessionStarted(peerId: "pub2", sessionId: "s2")))
        _ = h.handle(.peerConnected(sessionId: "s2"))
        let keep = h.handle(.signalingLost(reason: "gone"))
        #expect(keep.endedReasons.isEmpty && !keep.stopsMedia)
        #expect(h.machine.phase == .active(sessionId: "s2", producer: "pub2"))
        // A refused request is looked for again on the next list.
        var other = SubscriberHarness()
        _ = other.handle(.signalingConnected(peerId: "e3"))
        _ = other.handle(.server(.list(producers: [ProducerInfo(id: "pub")])))
        _ = other.handle(.server(.error(details: "full", code: .roomFull)))
        #expect(other.machine.phase == .idle)
        #expect(other.handle(.server(.list(producers: [ProducerInfo(id: "pub")]))).sent == [.startSession(peerId: "pub")])
    }

    @Test("a session that decodes nothing for stallTimeout is ended, the server told, and the publisher looked for again")
    func stall() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "pub")
        _ = h.handle(.peerConnected(sessionId: "s1"))
        h.frames(for: 2000)
        #expect(h.handle(.tick(decodeBranches: 1), after: 5000).otherThanKeyframes.isEmpty, "exactly stallTimeout: not yet")
        let stalled = h.handle(.tick(decodeBranches: 1), after: 1)
        #expect(stalled.stopsMedia)
        #expect(stalled.endedReasons == ["no frames for 5.0 seconds (the video stopped)"])
        #expect(stalled.sent == [.endSession(sessionId: "s1"), .list])
        #expect(h.handle(.server(.list(producers: [ProducerInfo(id: "pub")]))).sent == [.startSession(peerId: "pub")])
        // Never connected: the report says so.
        _ = h.handle(.server(.sessionStarted(peerId: "pub", sessionId: "s2")))
        let never = h.handle(.tick(decodeBranches: 0), after: 5001)
        #expect(never.endedReasons == ["no frames for 5.0 seconds (peer connection not up)"])
    }

    @Test("connected, with a video stream, and nothing decodes: a keyframe is asked for after 1 s, then after 1 s and every 2 s, until a frame decodes")
    func keyframeRetries() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "pub")
        #expect(h.handle(.tick(decodeBranches: 0), after: 1500).keyframeRequests.isEmpty, "not connected yet")
        _ = h.handle(.peerConnected(sessionId: "s1"))
        #expect(h.handle(.tick(decodeBranches: 0)).keyframeRequests.isEmpty, "no video stream yet: nothing to ask on")
        let first = h.handle(.tick(decodeBranches: 1))
        #expect(first.keyframeRequests == ["s1"])
        #expect(first.events.contains { if case .keyframeRequested("s1", 1, .milliseconds(1500)) = $0 { true } else { false } })
        // Asked at 1.5 s: again 1 s later, then 2 s apart (ticks every 500 ms).
        var asked: [UInt64] = []
        for _ in 0..<7 {
            if !h.handle(.tick(decodeBranches: 1), after: 500).keyframeRequests.isEmpty { asked.append(h.now) }
        }
        let start = h.now - 3500 * Self.ms
        #expect(asked.map { ($0 - start) / Self.ms } == [1000, 3000], "asked at 2.5 s and 4.5 s of silence")
        // A frame ends the asking; a new silence starts it again from 1 s.
        h.frames(for: 400)
        #expect(h.handle(.tick(decodeBranches: 1), after: 500).keyframeRequests.isEmpty)
        #expect(h.handle(.tick(decodeBranches: 1), after: 500).keyframeRequests == ["s1"], "1 s after the last frame")
    }

    @Test("an offer that cannot be answered, or a peer connection that fails: the session ends and the publisher is sought again after a growing wait")
    func seekAgainAfterFailure() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "pub")
        let failed = h.handle(.answerFailed(sessionId: "s1", reason: "set-remote-description failed: webrtcbin is closed"))
        #expect(failed.endedReasons == ["could not answer: set-remote-description failed: webrtcbin is closed"])
        #expect(failed.sent == [.endSession(sessionId: "s1")])
        #expect(failed.wakes == [h.now + 1000 * Self.ms])
        #expect(h.handle(.tick(decodeBranches: 0), after: 999).sent.isEmpty)
        #expect(h.handle(.tick(decodeBranches: 0), after: 1).sent == [.list], "sought again 1 s later")
        #expect(h.handle(.server(.list(producers: [ProducerInfo(id: "pub")]))).sent == [.startSession(peerId: "pub")])
        _ = h.handle(.server(.sessionStarted(peerId: "pub", sessionId: "s2")))
        // A second failure in a row waits twice as long.
        let ended = h.handle(.peerEnded(sessionId: "s2", state: "failed"))
        #expect(ended.endedReasons == ["peer connection failed"] && ended.wakes == [h.now + 2000 * Self.ms])
        #expect(h.handle(.tick(decodeBranches: 0), after: 1999).sent.isEmpty)
        #expect(h.handle(.tick(decodeBranches: 0), after: 1).sent == [.list])
        // A peer ending for a session that is no longer ours schedules nothing.
        #expect(h.handle(.peerEnded(sessionId: "s2", state: "closed")).wakes.isEmpty)
        // A frame decoded resets the wait.
        _ = h.handle(.server(.list(producers: [ProducerInfo(id: "pub")])))
        _ = h.handle(.server(.sessionStarted(peerId: "pub", sessionId: "s3")))
        h.frames(for: 200)
        #expect(h.handle(.peerEnded(sessionId: "s3", state: "failed")).wakes == [h.now + 1000 * Self.ms])
    }

    @Test("the publisher back under a new id with its media alive: the session is kept and follows the new id")
    func newIdAlive() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "old")
        h.frames(for: 400)
        let announced = h.handle(.server(.peerStatusChanged(peerId: "new", roles: [.producer], meta: nil, room: "site", role: .publisher)))
        #expect(announced.wakes == [h.now + 1000 * Self.ms] && announced.sent.isEmpty)
        h.frames(for: 1000)
        let settled = h.handle(.tick(decodeBranches: 1))
        #expect(settled.endedReasons.isEmpty && settled.sent.isEmpty && !settled.stopsMedia)
        #expect(h.machine.phase == .active(sessionId: "s1", producer: "new"))
        // The old id leaving is no longer ours; the new one leaving is.
        #expect(h.handle(.server(.peerStatusChanged(peerId: "old", roles: [], meta: nil, room: "site", role: nil))).isEmpty)
        let left = h.handle(.server(.peerStatusChanged(peerId: "new", roles: [], meta: nil, room: "site", role: nil)))
        #expect(left.endedReasons == ["the publisher left"] && left.sent.isEmpty)
    }

    @Test("the room's publisher under a new id while the media is silent: the session is dropped and the new one asked")
    func newIdSilent() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "old")
        h.frames(for: 400)
        // Frames stop just after the announcement (the jitter buffer empties).
        let announced = h.handle(.server(.peerStatusChanged(peerId: "new", roles: [.producer], meta: nil, room: "site", role: .publisher)))
        #expect(announced.wakes.count == 1)
        h.frames(for: 200)
        let settled = h.handle(.tick(decodeBranches: 1), after: 800)
        #expect(settled.stopsMedia)
        #expect(settled.endedReasons == ["publisher old went silent and new publishes in the room"])
        #expect(settled.sent == [.startSession(peerId: "new")], "the old server's session is not ended on the new one")
        #expect(h.machine.phase == .requested(producer: "new"))
        // Silent for a whole window already: no need to watch.
        var g = SubscriberHarness()
        g.activeSession("s1", with: "old")
        g.frames(for: 200)
        let at = g.handle(.server(.list(producers: [ProducerInfo(id: "new")])), after: 1001)
        #expect(at.wakes.isEmpty && at.endedReasons.count == 1 && at.sent == [.startSession(peerId: "new")])
    }

    @Test("our candidates gathered before the answer went out follow it, in order; none for a session that ended")
    func heldLocalCandidates() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "pub")
        func local(_ c: String, _ session: String = "s1") -> SubscriberSession.Event {
            .localCandidate(sessionId: session, ICECandidate(mlineIndex: 0, candidate: c))
        }
        _ = h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "offer", sdp: "v=0 o"))))))
        // webrtcbin gathers as soon as the answer is its local description, before we send it.
        #expect(h.handle(local("l1")).isEmpty)
        #expect(h.handle(local("l2")).isEmpty)
        #expect(h.handle(local("x", "old")).isEmpty)
        let answered = h.handle(.answerCreated(sessionId: "s1", sdp: "v=0 a"))
        #expect(answered.toServer == [.peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "answer", sdp: "v=0 a")))),
                                      .candidate("l1", mlineIndex: 0, sessionId: "s1"), .candidate("l2", mlineIndex: 0, sessionId: "s1")])
        #expect(h.handle(local("l3")).toServer == [.candidate("l3", mlineIndex: 0, sessionId: "s1")])
        // Ended before its answer was made: neither the answer nor its candidates go out.
        var late = SubscriberHarness()
        late.activeSession("s2", with: "pub")
        _ = late.handle(.server(.peer(PeerMessage(sessionId: "s2", payload: .sdp(SignalingSDP(type: "offer", sdp: "v=0 o"))))))
        #expect(late.handle(local("m1", "s2")).isEmpty)
        _ = late.handle(.server(.endSession(sessionId: "s2")))
        #expect(late.handle(.answerCreated(sessionId: "s2", sdp: "v=0 a")).toServer.isEmpty)
        #expect(late.handle(local("m2", "s2")).toServer.isEmpty)
    }

    @Test("remote candidates that overtake the offer wait for the answer, then go in order; later ones at once")
    func earlyCandidates() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "pub")
        func ice(_ c: String) -> SubscriberSession.Event {
            .server(.peer(PeerMessage(sessionId: "s1", payload: .ice(SignalingICE(candidate: c, sdpMLineIndex: 0)))))
        }
        #expect(h.handle(ice("a")).isEmpty)
        #expect(h.handle(ice("b")).isEmpty)
        #expect(h.handle(.server(.peer(PeerMessage(sessionId: "other", payload: .ice(SignalingICE(candidate: "x", sdpMLineIndex: 0)))))).sent.isEmpty)
        let offer = h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "offer", sdp: "v=0 o"))))))
        guard case .answer("s1", "v=0 o")? = offer.first, offer.count == 1 else { Issue.record("\(offer)"); return }
        let answered = h.handle(.answerCreated(sessionId: "s1", sdp: "v=0 a"))
        #expect(answered.toServer == [.peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "answer", sdp: "v=0 a"))))])
        guard case .addCandidates("s1", let early, true)? = answered.last else { Issue.record("\(answered)"); return }
        #expect(early.map(\.candidate) == ["a", "b"])
        guard case .addCandidates("s1", let late, false)? = h.handle(ice("c")).first else { Issue.record("c held"); return }
        #expect(late.map(\.candidate) == ["c"])
        // Our own candidates go to the server as they come.
        #expect(h.handle(.localCandidate(sessionId: "s1", ICECandidate(mlineIndex: 0, candidate: "l"))).toServer
                == [.peer(PeerMessage(sessionId: "s1", payload: .ice(SignalingICE(candidate: "l", sdpMLineIndex: 0))))])
        // The control channel is announced once per session, once the publisher is verified.
        #expect(h.handle(.controlChannelOpen).isEmpty)
        #expect(h.handle(.peerConnected(sessionId: "s1")).events.count == 2)
        #expect(h.handle(.controlChannelOpen).isEmpty)
        // Stopping ends the session; no server is left to tell.
        let stop = h.handle(.stopping)
        #expect(stop.endedReasons == ["subscriber stopping"] && stop.sent.isEmpty)
    }
}

/// A signaling server stood in for by the test: it says what happens on the link and
/// records what the node sends.
final class FakeSignalingLink: SignalingLink {
    private let stream: AsyncStream<SignalingLinkEvent>
    private let continuation: AsyncStream<SignalingLinkEvent>.Continuation
    private let state = Mutex((up: false, sent: [ClientMessage]()))

    init() { (stream, continuation) = AsyncStream.makeStream(of: SignalingLinkEvent.self) }

    func events() -> AsyncStream<SignalingLinkEvent> { stream }

    func send(_ message: ClientMessage) throws(SignalingClientError) {
        guard state.withLock({ s in if s.up { s.sent.append(message) }; return s.up }) else { throw .closed }
    }

    func serve(_ event: SignalingLinkEvent) {
        state.withLock { s in
            switch event {
            case .connected: s.up = true
            case .lost: s.up = false
            case .message: break
            }
        }
        continuation.yield(event)
    }

    var sent: [ClientMessage] { state.withLock { $0.sent } }
}

@Suite("subscriber node over a fake signaling link")
struct SubscriberNodeLinkTests {
    @Test("registers and lists on connecting, asks the listed publisher, reports a busy room and a lost link, asks again")
    func nodeOverFakeLink() async throws {
        let link = FakeSignalingLink()
        let (events, sink) = AsyncStream.makeStream(of: SubscriberNodeEvent.self)
        var config = SubscriberNodeConfig(signalingURL: "ws://signaling.test/")
        config.room = "site"
        var logger = Logger(label: "fake-link")
        logger.logLevel = .critical
        let node = SubscriberNode(config: config, logger: logger, link: link) { sink.yield($0) }
        let running = Task { await node.run() }
        var next = events.makeAsyncIterator()

        link.serve(.connected(peerId: "e1"))
        guard case .signalingConnected("ws://signaling.test/", "e1")? = await next.next() else { Issue.record("not connected"); return }
        #expect(link.sent == SubscriberSessionTests.register)
        link.serve(.message(.list(producers: [ProducerInfo(id: "pub")])))
        link.serve(.message(.error(details: "the room is full", code: .roomFull)))
        guard case .roomBusy("site", "the room is full", _)? = await next.next() else { Issue.record("no roomBusy"); return }
        #expect(link.sent.last == .startSession(peerId: "pub"))
        link.serve(.lost(reason: "gone"))
        guard case .signalingLost("gone")? = await next.next() else { Issue.record("not lost"); return }
        link.serve(.connected(peerId: "e2"))
        _ = await next.next()
        link.serve(.message(.list(producers: [ProducerInfo(id: "pub")])))
        link.serve(.message(.error(details: "still full", code: .roomFull)))
        _ = await next.next()
        #expect(link.sent.suffix(3) == SubscriberSessionTests.register + [.startSession(peerId: "pub")])
        running.cancel()
        await running.value
    }
}

@Suite("subscriber session: a busy room")
struct SubscriberRoomBusyTests {
    static let ms = SubscriberHarness.ms

    static func busy(_ effects: [SubscriberSession.Effect]) -> [Duration] {
        effects.events.compactMap { if case let .roomBusy("site", _, retryIn) = $0 { retryIn } else { nil } }
    }

    @Test("a refused declaration: said once, the list that follows ignored, declared again after 1 then 2 s")
    func declarationRefused() {
        var h = SubscriberHarness()
        #expect(h.handle(.signalingConnected(peerId: "e1")).sent == SubscriberSessionTests.register)
        let refused = h.handle(.server(.error(details: "room \"site\" is full", code: .roomFull)))
        #expect(Self.busy(refused) == [.seconds(1)] && refused.events.count == 1)
        #expect(refused.wakes == [h.now + 1000 * Self.ms])
        // The list answered to a peer outside the room is the default room's: not ours.
        #expect(h.handle(.server(.list(producers: [ProducerInfo(id: "stranger")]))).sent.isEmpty)
        #expect(h.handle(.server(.peerStatusChanged(peerId: "stranger", roles: [.producer], meta: nil, room: nil, role: nil))).sent.isEmpty)
        #expect(h.handle(.tick(decodeBranches: 0), after: 999).sent.isEmpty)
        #expect(h.handle(.tick(decodeBranches: 0), after: 1).sent == SubscriberSessionTests.register)
        let again = h.handle(.server(.error(details: "still full", code: .roomFull)))
        #expect(Self.busy(again) == [.seconds(2)])
        _ = h.handle(.server(.list(producers: [])))
        #expect(h.handle(.tick(decodeBranches: 0), after: 2000).sent == SubscriberSessionTests.register)
        // In at last: the room's list is ours and its publisher is asked.
        #expect(h.handle(.server(.list(producers: [ProducerInfo(id: "pub")]))).sent == [.startSession(peerId: "pub")])
        #expect(h.handle(.tick(decodeBranches: 0), after: 60_000).sent.isEmpty, "no retry left over")
    }

    @Test("a refused session request: said once, the publisher listed and asked again after the backoff")
    func sessionRefused() {
        var h = SubscriberHarness()
        _ = h.handle(.signalingConnected(peerId: "e1"))
        #expect(h.handle(.server(.list(producers: [ProducerInfo(id: "pub")]))).sent == [.startSession(peerId: "pub")])
        let refused = h.handle(.server(.error(details: "producer \"pub\" already has 16 sessions", code: .roomFull)))
        #expect(Self.busy(refused) == [.seconds(1)])
        #expect(h.machine.phase == .idle)
        #expect(h.handle(.tick(decodeBranches: 0), after: 1000).sent == [.list])
        #expect(h.handle(.server(.list(producers: [ProducerInfo(id: "pub")]))).sent == [.startSession(peerId: "pub")])
        _ = h.handle(.server(.sessionStarted(peerId: "pub", sessionId: "s1")))
        #expect(h.machine.phase == .active(sessionId: "s1", producer: "pub"))
    }

    @Test("an error no declaration can get (a late candidate's unknownSession) does not count as a refused declaration")
    func unrelatedErrorWhileDeclaring() {
        var h = SubscriberHarness()
        _ = h.handle(.signalingConnected(peerId: "e1"))
        _ = h.handle(.server(.error(details: "no session \"old\" of yours", code: .unknownSession)))
        #expect(h.handle(.server(.list(producers: [ProducerInfo(id: "pub")]))).sent == [.startSession(peerId: "pub")])
    }

    @Test("other refusals stay server errors and are not retried")
    func otherRefusals() {
        var h = SubscriberHarness()
        _ = h.handle(.signalingConnected(peerId: "e1"))
        let refused = h.handle(.server(.error(details: "wrong token", code: .unauthorized)))
        #expect(refused.wakes.isEmpty && Self.busy(refused).isEmpty)
        #expect(refused.events.contains { if case .serverError(.unauthorized?, _) = $0 { true } else { false } })
        #expect(h.handle(.tick(decodeBranches: 0), after: 60_000).sent.isEmpty)
    }
}
