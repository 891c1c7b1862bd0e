import PoseCastKit
import Signaling
import Subscriber
import Testing

/// A publisher that sends no pose, control requests nobody answers, and what the
/// subscriber says when it cannot send a request: the session
/// state machine on stepped time, no sockets.
@Suite("subscriber session: publishers without pose, unanswered requests")
struct SubscriberPoseAndRepliesTests {
    static func noPoseEvents(_ effects: [SubscriberSession.Effect]) -> [(String, Int)] {
        effects.events.compactMap { if case let .publisherWithoutPose(id, _, frames) = $0 { (id, frames) } else { nil } }
    }

    @Test("frames without a pose from the start are reported once, after 30 frames; the next session is watched afresh")
    func publisherWithoutPose() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "pub")
        #expect(h.machine.controlUnavailableReason == "the session with the publisher is still being set up")
        var said: [(String, Int)] = []
        for _ in 0..<120 { said += Self.noPoseEvents(h.handle(.frameDecoded(withPose: false), after: 33)) }
        #expect(said.count == 1 && said.first?.0 == "s1" && said.first?.1 == 30)
        #expect(h.machine.publisherSendsNoPose)
        // A posed frame later: the publisher does send poses after all.
        _ = h.handle(.frameDecoded(withPose: true), after: 33)
        #expect(!h.machine.publisherSendsNoPose)

        // A new session with the same kind of publisher is told again.
        _ = h.handle(.server(.endSession(sessionId: "s1")))
        _ = h.handle(.server(.sessionStarted(peerId: "pub", sessionId: "s2")))
        said = []
        for _ in 0..<40 { said += Self.noPoseEvents(h.handle(.frameDecoded(withPose: false), after: 33)) }
        #expect(said.count == 1 && said.first?.0 == "s2")
    }

    @Test("a publisher whose first frames carry a pose is never reported, even if some later ones lack it")
    func posedPublisherNeverReported() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "pub")
        _ = h.handle(.frameDecoded(withPose: true), after: 33)
        var said: [(String, Int)] = []
        for _ in 0..<100 { said += Self.noPoseEvents(h.handle(.frameDecoded(withPose: false), after: 33)) }
        #expect(said.isEmpty)
        #expect(!h.machine.publisherSendsNoPose)
    }

    @Test("a request with no reply is reported after the timeout, once; a replied one never; the rest when the session ends")
    func unansweredRequests() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "pub")
        _ = h.handle(.peerConnected(sessionId: "s1"))
        _ = h.handle(.controlChannelOpen)
        _ = h.handle(.requestSent(id: "r1", type: "focus"))
        _ = h.handle(.requestSent(id: "r2", type: "annotate"), after: 1000)
        _ = h.handle(.replyReceived(id: "r2"), after: 100)
        // Frames keep coming (no stall); 4.9 s after r1: not yet.
        h.frames(for: 3800)
        #expect(h.handle(.tick(decodeBranches: 1)).events.isEmpty)
        h.frames(for: 200)
        let late = h.handle(.tick(decodeBranches: 1)).events
        #expect(late.count == 1)
        if case let .requestUnanswered("r1", "focus", reason)? = late.first {
            #expect(reason == "no reply within 5.0 seconds")
        } else { Issue.record("\(late)") }
        h.frames(for: 10_000)
        #expect(h.handle(.tick(decodeBranches: 1)).events.allSatisfy {
            if case .requestUnanswered = $0 { false } else { true }
        })
        // A request still waiting when its session ends is reported with the reason.
        _ = h.handle(.requestSent(id: "r3", type: "meter"))
        let ended = h.handle(.server(.endSession(sessionId: "s1")), after: 100).events
        #expect(ended.contains { if case .requestUnanswered("r3", "meter", "the session ended before a reply") = $0 { true } else { false } })
    }

    @Test("why no request can be sent is said as it is: no session, being set up, no control channel")
    func controlUnavailable() {
        var h = SubscriberHarness()
        #expect(h.machine.controlUnavailableReason == "not connected to a publisher (no session)")
        h.activeSession("s1", with: "pub")
        #expect(h.machine.controlUnavailableReason == "the session with the publisher is still being set up")
        _ = h.handle(.peerConnected(sessionId: "s1"))
        #expect(h.machine.controlUnavailableReason
                == "the publisher has opened no control channel in this session (it takes no requests)")
    }

    @Test("a publisher whose certificate does not match its offer: the session ends, the server is told, nothing is asked again")
    func forgedPublisher() {
        var h = SubscriberHarness()
        h.activeSession("s1", with: "pub")
        #expect(h.handle(.controlChannelOpen).isEmpty)
        let rejected = h.handle(.peerRejected(sessionId: "s1", reason: "the publisher's DTLS certificate does not match its SDP (mismatch: x)"))
        #expect(rejected.endedReasons == ["the publisher's DTLS certificate does not match its SDP (mismatch: x)"])
        #expect(rejected.sent == [.endSession(sessionId: "s1")])
        #expect(rejected.stopsMedia)
        #expect(!rejected.events.contains { if case .controlOpen = $0 { true } else { false } })
        #expect(h.machine.phase == .idle && !h.machine.connected)
        // A late "connected" of the ended session changes nothing.
        #expect(h.handle(.peerConnected(sessionId: "s1")).isEmpty)
    }
}
