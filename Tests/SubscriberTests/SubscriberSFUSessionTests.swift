import PoseCastKit
import RTCSession
import Signaling
@testable import Subscriber
import Testing

/// The subscriber's session machine with its media through an SFU, on stepped time: the
/// session on signaling stands for the expert, the media is negotiated with the SFU, and
/// what the SFU says of the subscription (joined, hung up, connection lost, room gone)
/// reaches the machine as `NegotiationEvent`s, as a publisher's would, and is handled there.
@Suite("subscriber session through an SFU (state machine)")
struct SubscriberSFUSessionTests {
    static let ms = SubscriberHarness.ms
    static let offer = "v=0\r\no=janus 1 1 IN IP4 127.0.0.1\r\n"

    /// Connected, the publisher found and session `id` started: the machine asks to subscribe in the SFU.
    static func started(_ id: String = "s1") -> SubscriberHarness {
        var h = SubscriberHarness(sfu: SubscriberSFUConfig(url: "ws://janus.test:8188/", room: 1234))
        let declared = h.handle(.signalingConnected(peerId: "e1")).sent
        guard case .setPeerStatus(let status) = declared.first else { Issue.record("no declaration: \(declared)"); return h }
        #expect(status.meta?[PeerMessage.viaKey] == .string(PeerMessage.viaSFU), "the declaration must say via sfu: \(status)")
        #expect(h.handle(.server(.list(producers: [ProducerInfo(id: "pub")]))).sent == [.startSession(peerId: "pub")])
        let effects = h.handle(.server(.sessionStarted(peerId: "pub", sessionId: id)))
        #expect(effects.subscriptions == [id], "the session's start subscribes in the SFU: \(effects)")
        return h
    }

    @Test("join: the SFU's offer is answered, our answer and candidates go to the SFU, not to the publisher; control comes over signaling")
    func join() {
        var h = Self.started()
        #expect(h.handle(.localCandidate(sessionId: "s1", ICECandidate(mlineIndex: 0, candidate: "candidate:early"))).isEmpty,
                "a candidate before the answer waits")
        let offered = h.handle(.negotiation(sessionId: "s1", .offer(sdp: Self.offer, feed: 77, server: "ws://janus/")), after: 300)
        #expect(offered.events.contains { if case .sfuSubscribed("s1", 1234, 77, "ws://janus/") = $0 { true } else { false } }, "\(offered)")
        #expect(offered.contains { if case .answer("s1", Self.offer) = $0 { true } else { false } }, "\(offered)")
        let answered = h.handle(.answerCreated(sessionId: "s1", sdp: "answer-sdp"))
        #expect(answered.sent.isEmpty, "nothing goes to the server but through the signaller: \(answered.sent)")
        #expect(answered.negotiated.first == .answer(sessionId: "s1", sdp: "answer-sdp"))
        #expect(answered.trickled == ["candidate:early"])
        let later = h.handle(.localCandidate(sessionId: "s1", ICECandidate(mlineIndex: 0, candidate: "candidate:later")))
        #expect(later.trickled == ["candidate:later"] && later.sent.isEmpty)
        let control = h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .control("{\"type\":\"ack\"}")))))
        #expect(control.contains { if case .control("s1", "{\"type\":\"ack\"}") = $0 { true } else { false } }, "\(control)")
        #expect(h.handle(.peerConnected(sessionId: "s1")).events.contains { if case .connected("s1") = $0 { true } else { false } })
    }

    @Test("through the SFU a decoded frame names itself to the publisher (receiving) at once, then every 2 s; not before the peer connects, not on a direct session")
    func receptionProofs() {
        var h = Self.started()
        _ = h.handle(.negotiation(sessionId: "s1", .offer(sdp: Self.offer, feed: 77)))
        func pose(_ frame: UInt32) -> FramePose {
            FramePose(flags: [], frameID: frame, captureTimeNanos: 1_790_000_000_000_000_000 + UInt64(frame) * 33_333_333,
                      position: Vector3(0, 0, 0), orientation: Quaternion(x: 0, y: 0, z: 0, w: 1),
                      intrinsics: CameraIntrinsics(fx: 500, fy: 500, cx: 320, cy: 240))
        }
        func proofs(_ effects: [SubscriberSession.Effect]) -> [ControlEnvelope] {
            effects.sent.compactMap { message in
                guard case .peer(let peer) = message, peer.sessionId == "s1", case .control(let text) = peer.payload else { return nil }
                return try? ControlCodec.decodeRequest(text)
            }
        }
        #expect(proofs(h.handle(.frameDecoded(withPose: true, pose: pose(1)))).isEmpty, "not connected yet")
        _ = h.handle(.peerConnected(sessionId: "s1"))
        let first = proofs(h.handle(.frameDecoded(withPose: true, pose: pose(2)), after: 33))
        #expect(first == [ControlEnvelope(id: "rx1", request: .receiving(frameId: 2, captureTimeNanos: pose(2).captureTimeNanos))])
        #expect(SubscriberSession.isReceptionProof(id: first.first?.id) && !SubscriberSession.isReceptionProof(id: "r1"))
        var later: [ControlEnvelope] = []
        for frame in UInt32(3)...92 { later += proofs(h.handle(.frameDecoded(withPose: true, pose: pose(frame)), after: 33)) }
        // 90 frames, 2.97 s: one more, 2 s after the first; a frame flagged missing still names itself.
        #expect(later.map(\.id) == ["rx2"], "\(later)")
        var missing = pose(200); missing.flags = [.missing]
        #expect(proofs(h.handle(.frameDecoded(withPose: false, pose: missing), after: 2000)).map(\.id) == ["rx3"])

        var direct = SubscriberHarness()
        _ = direct.handle(.signalingConnected(peerId: "e1"))
        _ = direct.handle(.server(.list(producers: [ProducerInfo(id: "pub")])))
        _ = direct.handle(.server(.sessionStarted(peerId: "pub", sessionId: "d1")))
        _ = direct.handle(.peerConnected(sessionId: "d1"))
        #expect(direct.handle(.frameDecoded(withPose: true, pose: pose(5))).sent.isEmpty, "a direct session proves nothing")
    }

    @Test("through the SFU the first keyframe is asked for 400 ms after the session's start when nothing decoded (on a wake of its own), then with the usual waits")
    func earlyKeyframeAsk() {
        var h = Self.started()
        _ = h.handle(.negotiation(sessionId: "s1", .offer(sdp: Self.offer, feed: 77)))
        _ = h.handle(.peerConnected(sessionId: "s1"), after: 200)
        let early = h.handle(.tick(decodeBranches: 1), after: 100)
        #expect(early.keyframeRequests.isEmpty && early.wakes == [h.now + 100 * Self.ms], "\(early)")
        #expect(h.handle(.tick(decodeBranches: 1), after: 100).keyframeRequests == ["s1"])
        let next = h.handle(.tick(decodeBranches: 1), after: 500)
        #expect(next.keyframeRequests.isEmpty && next.wakes == [h.now + 500 * Self.ms], "the next waits keyframeRetry's 1 s: \(next)")
        #expect(h.handle(.tick(decodeBranches: 1), after: 500).keyframeRequests == ["s1"])
    }

    @Test("hang-up: Janus ends the subscription; the session ends, the server is told, the SFU left, and the publisher sought again")
    func hangUp() {
        var h = Self.started()
        _ = h.handle(.negotiation(sessionId: "s1", .offer(sdp: Self.offer, feed: 77)))
        _ = h.handle(.peerConnected(sessionId: "s1"))
        let ended = h.handle(.negotiation(sessionId: "s1", .hungUp(reason: "Janus hangup: DTLS alert")), after: 2000)
        #expect(ended.stopsMedia && ended.leavesSFU)
        #expect(ended.sent == [.endSession(sessionId: "s1")])
        #expect(ended.endedReasons == ["the SFU hung up (Janus hangup: DTLS alert)"])
        #expect(h.machine.phase == .idle)
        let wake = try? #require(ended.wakes.first)
        #expect(h.handle(.tick(decodeBranches: 0), after: 999).sent.isEmpty, "not before the backoff")
        #expect(h.handle(.tick(decodeBranches: 0), after: 1).sent == [.list], "sought again at \(String(describing: wake))")
    }

    @Test("Janus lost: the connection to the SFU goes; the session ends with an error said, and is sought again")
    func janusLost() {
        var h = Self.started()
        let lost = h.handle(.negotiation(sessionId: "s1", .lost(reason: "the connection to Janus is closed")), after: 500)
        #expect(lost.stopsMedia && lost.leavesSFU && lost.sent == [.endSession(sessionId: "s1")])
        #expect(lost.endedReasons == ["the connection to the SFU was lost (the connection to Janus is closed)"])
        #expect(lost.events.contains { if case .error(let text) = $0 { text.contains("Janus") } else { false } })
        #expect(lost.wakes.count == 1)
    }

    @Test("room gone: a subscription refused for a room that does not exist says so, and failures in a row back off longer")
    func roomGone() {
        var h = Self.started()
        let first = h.handle(.negotiation(sessionId: "s1", .refused(reason: "Janus refused join: No such room (error 426)", roomGone: true)))
        #expect(first.endedReasons == ["the SFU has no room 1234: Janus refused join: No such room (error 426)"])
        #expect(first.leavesSFU && first.sent == [.endSession(sessionId: "s1")])
        let firstDelay = (first.wakes.first ?? 0) - h.now
        _ = h.handle(.tick(decodeBranches: 0), after: firstDelay / Self.ms)
        #expect(h.handle(.server(.list(producers: [ProducerInfo(id: "pub")]))).sent == [.startSession(peerId: "pub")])
        #expect(h.handle(.server(.sessionStarted(peerId: "pub", sessionId: "s2"))).subscriptions == ["s2"])
        let second = h.handle(.negotiation(sessionId: "s2", .refused(reason: "no such room", roomGone: true)))
        let secondDelay = (second.wakes.first ?? 0) - h.now
        #expect(secondDelay > firstDelay, "backoff: \(firstDelay / Self.ms) ms, then \(secondDelay / Self.ms) ms")
    }

    @Test("a negotiation event of an earlier session changes nothing; control over signaling is for SFU sessions only")
    func staleEvents() {
        var h = Self.started()
        let stale = h.handle(.negotiation(sessionId: "s0", .hungUp(reason: "old")))
        #expect(!stale.stopsMedia && stale.sent.isEmpty && stale.events.isEmpty && stale.negotiated.isEmpty)
        #expect(h.machine.phase == .active(sessionId: "s1", producer: "pub"))
        var direct = SubscriberHarness()
        direct.activeSession("s1", with: "pub")
        let ignored = direct.handle(.negotiation(sessionId: "s2", .lost(reason: "not this session")))
        #expect(!ignored.stopsMedia && ignored.sent.isEmpty)
        let control = direct.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .control("{}")))))
        #expect(!control.contains { if case .control = $0 { true } else { false } }, "control over signaling is only for SFU sessions")
    }

    @Test("one vocabulary for both sides: a direct session is started, answered, trickled and ended through the signaller too, and the direct signaller turns only the answer and candidates into messages to the publisher")
    func directNegotiation() {
        var h = SubscriberHarness()
        _ = h.handle(.signalingConnected(peerId: "e1"))
        _ = h.handle(.server(.list(producers: [ProducerInfo(id: "pub")])))
        let started = h.handle(.server(.sessionStarted(peerId: "pub", sessionId: "s1")))
        #expect(started.negotiated == [.start(sessionId: "s1")] && started.toServer.isEmpty)
        let offered = h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "offer", sdp: Self.offer))))))
        #expect(offered.contains { if case .answer("s1", Self.offer) = $0 { true } else { false } })
        #expect(!offered.events.contains { if case .sfuSubscribed = $0 { true } else { false } }, "no SFU feed for a direct offer")
        let candidate = ICECandidate(mlineIndex: 1, candidate: "candidate:1 1 UDP 1 10.0.0.1 9 typ host")
        _ = h.handle(.localCandidate(sessionId: "s1", candidate))
        let answered = h.handle(.answerCreated(sessionId: "s1", sdp: "answer-sdp"))
        #expect(answered.negotiated == [.answer(sessionId: "s1", sdp: "answer-sdp"), .candidate(sessionId: "s1", candidate)])
        #expect(answered.toServer == [.peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "answer", sdp: "answer-sdp")))),
                                      .candidate(candidate.candidate, mlineIndex: 1, sessionId: "s1")])
        // Another side's word through the signaller ends a direct session as it does an SFU's.
        let lost = h.handle(.negotiation(sessionId: "s1", .lost(reason: "gone")), after: 100)
        #expect(lost.stopsMedia && lost.negotiated == [.end(sessionId: "s1")])
        #expect(lost.toServer == [.endSession(sessionId: "s1")], "the end is the server's message, not the signaller's")
        #expect(lost.endedReasons == ["the connection to the publisher was lost (gone)"])
        #expect(DirectSignaller.message(for: .start(sessionId: "s1")) == nil && DirectSignaller.message(for: .end(sessionId: "s1")) == nil)
    }
}

extension [SubscriberSession.Effect] {
    var subscriptions: [String] { negotiated.compactMap { if case .start(let id) = $0 { id } else { nil } } }
    var trickled: [String] { negotiated.compactMap { if case .candidate(_, let c) = $0 { c.candidate } else { nil } } }
    var leavesSFU: Bool { negotiated.contains { if case .end = $0 { true } else { false } } }
}
