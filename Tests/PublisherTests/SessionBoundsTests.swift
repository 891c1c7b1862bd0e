import PoseCastKit
import Publisher
import RTCSession
import Signaling
import Testing

/// Every session's life is bounded: setup deadlines, the server forgetting a
/// session, the publisher's own caps, and refused remote candidates counted and reported
/// rate-limited. The state machine alone, on stepped time.
@Suite("publisher sessions: bounds on abandoned and excess sessions")
struct SessionBoundsTests {
    static let ms: UInt64 = 1_000_000
    static let second: UInt64 = 1_000_000_000

    private func answer(_ id: String) -> PublisherSessions.Event {
        .server(.peer(PeerMessage(sessionId: id, payload: .sdp(SignalingSDP(type: "answer", sdp: AnswerCheckTests.vp8Answer)))))
    }

    @Test("a session not connected within 15 s ends, naming the step it stalled at; a connected one stays")
    func setupDeadline() {
        var h = PublisherHarness.connected()
        let started = h.now
        let build = h.handle(.server(.startSession(peerId: "c-never", sessionId: "never", role: .expert, meta: nil)))
        #expect(build.wakes == [started + 15 * Self.second], "the deadline is asked for when the session starts")
        _ = h.handle(.branchBuilt(sessionId: "never"))
        _ = h.handle(.offerCreated(sessionId: "never", sdp: "v=0"))
        h.start("answered")
        _ = h.handle(answer("answered"))
        h.start("ice")
        _ = h.handle(answer("ice"))
        _ = h.handle(.iceConnected(sessionId: "ice"))
        h.start("good")
        _ = h.handle(answer("good"))
        _ = h.handle(.iceConnected(sessionId: "good"))
        _ = h.handle(.peerConnected(sessionId: "good"))
        // A tick before the deadline ends nothing.
        #expect(h.handle(.tick, after: 14_900 * Self.ms).removed.isEmpty)
        let expired = h.handle(.tick, after: 100 * Self.ms)
        #expect(expired.removed.sorted() == ["answered", "ice", "never"])
        #expect(Set(expired.endedReasons) == ["not connected within 15.0 seconds: no answer",
                                                "not connected within 15.0 seconds: answered, but ICE never connected",
                                                "not connected within 15.0 seconds: ICE connected, but DTLS never completed"])
        #expect(Set(expired.sent) == [.endSession(sessionId: "never"), .endSession(sessionId: "answered"), .endSession(sessionId: "ice")],
                "the server is told, so it frees its places too")
        #expect(h.machine.subscriberCounts == (1, 1))
        #expect(h.handle(.tick, after: 60 * Self.second).removed.isEmpty, "a connected session has no deadline")
    }

    @Test("a session the server says it does not know ends at once; one of an earlier server's connection does not")
    func unknownToTheServer() {
        var h = PublisherHarness.connected(starting: "old")
        _ = h.handle(.signalingLost(reason: "restart"))
        _ = h.handle(.signalingConnected(peerId: "p2"))
        h.start("s1")
        h.start("s2")
        let forgotten = h.handle(.server(.error(details: "no session \"s1\" of yours", code: .unknownSession, sessionId: "s1")))
        #expect(forgotten.removed == ["s1"] && forgotten.sent.isEmpty)
        #expect(forgotten.endedReasons == ["the signaling server no longer knows it"])
        // The new server cannot know a session of the old one: it is left to ICE and the deadline.
        let old = h.handle(.server(.error(details: "no session \"old\" of yours", code: .unknownSession, sessionId: "old")))
        #expect(old.removed.isEmpty)
        // An unknownSession without an id, or for no session of ours, is only reported.
        #expect(h.handle(.server(.error(details: "x", code: .unknownSession))).removed.isEmpty)
        #expect(h.handle(.server(.error(details: "y", code: .unknownSession, sessionId: "nope"))).removed.isEmpty)
        #expect(h.machine.sessions.keys.sorted() == ["old", "s2"])
    }

    @Test("the publisher's own caps: 4 sessions per consumer and 16 in all, sessions being built included")
    func caps() {
        var h = PublisherHarness.connected()
        func start(_ id: String, by consumer: String) -> [PublisherSessions.Effect] {
            h.handle(.server(.startSession(peerId: consumer, sessionId: id, role: .viewer, meta: nil)))
        }
        for i in 0..<4 { #expect(start("m\(i)", by: "mallory").branchesBuilt == ["m\(i)"]) }
        let fifth = start("m4", by: "mallory")
        #expect(fifth.branchesBuilt.isEmpty && fifth.sent == [.endSession(sessionId: "m4")])
        #expect(fifth.events.contains { if case .error(let m) = $0 { m.contains("at most 4 per consumer") } else { false } })
        // One of hers ends: she may start another.
        _ = h.handle(.server(.endSession(sessionId: "m0")))
        _ = h.handle(.branchBuilt(sessionId: "m0"))
        #expect(start("m5", by: "mallory").branchesBuilt == ["m5"])
        for i in 0..<12 { #expect(start("o\(i)", by: "other\(i)").branchesBuilt == ["o\(i)"]) }
        let seventeenth = start("late", by: "honest")
        #expect(seventeenth.branchesBuilt.isEmpty && seventeenth.sent == [.endSession(sessionId: "late")])
        #expect(seventeenth.events.contains { if case .error(let m) = $0 { m.contains("at most 16") } else { false } })
        // A repeated startSession for a session we have builds nothing twice.
        #expect(start("o1", by: "other1").branchesBuilt.isEmpty)
    }

    @Test("refused remote candidates: the first of each kind at once, then at most one report per kind a second with the count; those left when they stop are summed up a second after the last report")
    func candidateReports() {
        var h = PublisherHarness.connected(starting: "s1")
        func refused(_ kind: String, after step: UInt64 = 0) -> [PublisherNodeEvent] {
            h.handle(.candidateFailed(sessionId: "s1", kind: kind, reason: "bad \(kind)"), after: step).events
        }
        guard case .candidateRefused("s1", "malformed", "bad malformed", 0, 1)? = refused("malformed").first else {
            Issue.record("first refusal not reported"); return
        }
        for _ in 0..<14 { #expect(refused("malformed", after: 10 * Self.ms).isEmpty) }
        guard case .candidateRefused("s1", "unknownMLine", _, 0, 1)? = refused("unknownMLine").first else {
            Issue.record("another kind is reported at once"); return
        }
        guard case .candidateRefused(_, "malformed", _, 14, 16)? = refused("malformed", after: Self.second).first else {
            Issue.record("the next report says how many went unreported"); return
        }
        // Five more within the second, then none: the wake a second after the last report sums them up, once.
        for _ in 0..<5 { #expect(refused("malformed", after: 10 * Self.ms).isEmpty) }
        guard case .candidateRefused("s1", "malformed", "bad malformed", 5, 21)? = h.handle(.tick, after: Self.second).events.first else {
            Issue.record("the refusals left unreported were not summed up"); return
        }
        #expect(h.handle(.tick, after: Self.second).events.isEmpty)
        #expect(h.machine.candidateRefusals.totals == ["malformed": 21, "unknownMLine": 1])
    }
}
