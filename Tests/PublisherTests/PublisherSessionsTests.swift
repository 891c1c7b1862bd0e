import PoseCastKit
import PoseMedia
@testable import Publisher
import RTCSession
import Signaling
import Testing

/// The publisher's session logic fed events directly, on stepped time (nanoseconds): no
/// socket, no GStreamer, no sleep.
struct PublisherHarness {
    var machine: PublisherSessions
    var now: UInt64 = 1_000_000_000

    init(controlRate: ControlRateLimit = .standard, publishesToSFU: Bool = false) {
        var config = PublisherNodeConfig(signalingURL: "ws://signaling.test/")
        config.room = "site"
        config.controlRate = controlRate
        config.publishesToSFU = publishesToSFU
        machine = PublisherSessions(config: config)
    }

    /// Connected to the server as `p1`, with these sessions started (`start`).
    static func connected(starting sessions: String...) -> PublisherHarness {
        var h = PublisherHarness()
        _ = h.handle(.signalingConnected(peerId: "p1"))
        for id in sessions { h.start(id) }
        return h
    }

    mutating func handle(_ event: PublisherSessions.Event, after step: UInt64 = 0) -> [PublisherSessions.Effect] {
        now += step
        return machine.handle(event, now: now)
    }

    /// A session `id` from `consumer`, branch built and offer sent; its effects checked on the way.
    mutating func start(_ id: String, role: RoomRole = .expert) {
        let build = handle(.server(.startSession(peerId: "c-\(id)", sessionId: id, role: role, meta: nil)))
        #expect(build.branchesBuilt == [id])
        let built = handle(.branchBuilt(sessionId: id))
        #expect(built.negotiated == [id])
        #expect(built.events.contains { if case .sessionStarted(id, "c-\(id)", role, _) = $0 { true } else { false } })
        #expect(handle(.offerCreated(sessionId: id, sdp: "v=0 offer \(id)")).sent.count == 1)
    }
}

extension [PublisherSessions.Effect] {
    var sent: [ClientMessage] { compactMap { if case .send(let m) = $0 { m } else { nil } } }
    var events: [PublisherNodeEvent] { compactMap { if case .emit(let e) = $0 { e } else { nil } } }
    var branchesBuilt: [String] { compactMap { if case .buildBranch(let id, _, _, _) = $0 { id } else { nil } } }
    var negotiated: [String] { compactMap { if case .negotiate(let id) = $0 { id } else { nil } } }
    var removed: [String] { compactMap { if case .removeBranch(let id) = $0 { id } else { nil } } }
    var replies: [ControlReply] { compactMap { if case .sendControl(let r, _) = $0 { r } else { nil } } }
    var executed: Int { filter { if case .executeControl = $0 { true } else { false } }.count }
    var endedReasons: [String] { events.compactMap { if case .sessionEnded(_, let r) = $0 { r } else { nil } } }
    var wakes: [UInt64] { compactMap { if case .wake(let at) = $0 { at } else { nil } } }
}

@Suite("publisher sessions (state machine)")
struct PublisherSessionsTests {
    static let ms: UInt64 = 1_000_000
    static let register = ClientMessage.setPeerStatus(PeerStatus(roles: [.producer], meta: .object(["name": .string("posecast-publisher")]),
                                                                 room: "site", role: .publisher))

    @Test("registers on every connection; a session of the lost server is not ended on the new one")
    func reconnect() {
        var h = PublisherHarness()
        let first = h.handle(.signalingConnected(peerId: "p1"))
        #expect(first.sent == [Self.register])
        #expect(first.events.contains { if case .signalingConnected("ws://signaling.test/", "p1") = $0 { true } else { false } })
        h.start("s1")
        let lost = h.handle(.signalingLost(reason: "the signaling server closed the connection"))
        #expect(lost.events.count == 1 && lost.sent.isEmpty && lost.removed.isEmpty, "the media keeps flowing")
        #expect(h.machine.sessions.count == 1)
        // While no server is there, nothing is sent.
        #expect(h.handle(.localCandidate(sessionId: "s1", ICECandidate(mlineIndex: 0, candidate: "c"))).sent.isEmpty)
        let again = h.handle(.signalingConnected(peerId: "p2"), after: 1000 * Self.ms)
        #expect(again.sent == [Self.register])
        // ICE ends the old session: the restarted server never knew it.
        let ended = h.handle(.peerEnded(sessionId: "s1", state: "failed"))
        #expect(ended.removed == ["s1"] && ended.sent.isEmpty)
        #expect(ended.endedReasons == ["peer connection failed"])
        // A session of the new connection is ended there.
        h.start("s2")
        #expect(h.handle(.peerEnded(sessionId: "s2", state: "closed")).sent == [.endSession(sessionId: "s2")])
    }

    @Test("local candidates wait for the offer, then follow it in order; later ones go at once")
    func candidatesBeforeOffer() {
        var h = PublisherHarness.connected()
        _ = h.handle(.server(.startSession(peerId: "c", sessionId: "s1", role: .viewer, meta: nil)))
        _ = h.handle(.branchBuilt(sessionId: "s1"))
        let a = ICECandidate(mlineIndex: 0, candidate: "candidate:a"), b = ICECandidate(mlineIndex: 0, candidate: "candidate:b")
        #expect(h.handle(.localCandidate(sessionId: "s1", a)).isEmpty)
        #expect(h.handle(.localCandidate(sessionId: "s1", b)).isEmpty)
        let offer = h.handle(.offerCreated(sessionId: "s1", sdp: "v=0"))
        #expect(offer.sent == [
            .peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "offer", sdp: "v=0")))),
            .peer(PeerMessage(sessionId: "s1", payload: .ice(SignalingICE(candidate: "candidate:a", sdpMLineIndex: 0)))),
            .peer(PeerMessage(sessionId: "s1", payload: .ice(SignalingICE(candidate: "candidate:b", sdpMLineIndex: 0)))),
        ])
        let c = ICECandidate(mlineIndex: 1, candidate: "candidate:c")
        #expect(h.handle(.localCandidate(sessionId: "s1", c)).sent
                == [.peer(PeerMessage(sessionId: "s1", payload: .ice(SignalingICE(candidate: "candidate:c", sdpMLineIndex: 1))))])
        // The answer and the subscriber's candidates go to the branch.
        let answer = h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "answer", sdp: AnswerCheckTests.vp8Answer))))))
        #expect(answer.count == 1)
        if case .applyAnswer("s1", AnswerCheckTests.vp8Answer)? = answer.first {} else { Issue.record("\(answer)") }
        // An offer where an answer belongs ends the session, and the server is told.
        let wrong = h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "offer", sdp: "x"))))))
        #expect(wrong.removed == ["s1"] && wrong.sent == [.endSession(sessionId: "s1")])
        #expect(wrong.endedReasons.first?.hasPrefix("bad answer") == true)
    }

    @Test("an answer that accepts no VP8 ends its session, naming what it offered instead; the others go on")
    func answerWithoutOurCodec() {
        var h = PublisherHarness.connected(starting: "s1", "s2")
        let refused = h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "answer", sdp: AnswerCheckTests.h264OnlyAnswer))))))
        #expect(!refused.contains { if case .applyAnswer = $0 { true } else { false } })
        #expect(refused.removed == ["s1"] && refused.sent == [.endSession(sessionId: "s1")])
        #expect(refused.endedReasons == ["bad answer: it accepts no VP8 video, only H264 (102)"])
        let kept = h.handle(.server(.peer(PeerMessage(sessionId: "s2", payload: .sdp(SignalingSDP(type: "answer", sdp: AnswerCheckTests.vp8Answer))))))
        if case .applyAnswer("s2", _)? = kept.first {} else { Issue.record("\(kept)") }
    }

    @Test("nothing flows before the subscriber's certificate is verified; a forged one ends its session only")
    func verificationGatesControl() {
        var h = PublisherHarness.connected(starting: "s1", "s2")
        // The channel opens with DTLS, a moment before the check: the list waits, requests are dropped.
        #expect(h.handle(.controlChannelOpen(sessionId: "s1")).isEmpty)
        let early = h.handle(.controlMessage(sessionId: "s1", .text(ControlCodec.encode(ControlEnvelope(id: "r1", request: .clearAnnotations)))))
        #expect(early.executed == 0 && early.replies.isEmpty)
        // Verified: the annotation list goes out now.
        let verified = h.handle(.peerConnected(sessionId: "s1"))
        #expect(verified.contains { if case .sendAnnotations("s1") = $0 { true } else { false } })
        #expect(verified.events.contains { if case .subscriberConnected("s1") = $0 { true } else { false } })
        // A forged certificate: that session ends, the server is told, s1 goes on.
        let forged = h.handle(.peerRejected(sessionId: "s2", reason: "the subscriber's DTLS certificate does not match its SDP (mismatch: x)"))
        #expect(forged.removed == ["s2"] && forged.sent == [.endSession(sessionId: "s2")])
        #expect(forged.endedReasons == ["the subscriber's DTLS certificate does not match its SDP (mismatch: x)"])
        #expect(h.machine.subscriberCounts == (1, 1))
    }

    @Test("a session ended while its branch is built: the branch is torn down once built")
    func endedWhileBuilding() {
        var h = PublisherHarness.connected()
        #expect(h.handle(.server(.startSession(peerId: "c", sessionId: "s1", role: .expert, meta: nil))).branchesBuilt == ["s1"])
        let ended = h.handle(.server(.endSession(sessionId: "s1")))
        #expect(ended.isEmpty, "nothing to tear down yet")
        let built = h.handle(.branchBuilt(sessionId: "s1"))
        #expect(built.removed == ["s1"] && built.negotiated.isEmpty && built.sent.isEmpty)
        #expect(built.endedReasons == ["ended before it was set up"])
        #expect(h.machine.subscriberCounts == (0, 0))
        // A failed build is reported, and nothing is left.
        _ = h.handle(.server(.startSession(peerId: "c", sessionId: "s2", role: .expert, meta: nil)))
        let failed = h.handle(.setupFailed(sessionId: "s2", reason: "no encoder"))
        #expect(failed.events.count == 1 && failed.removed.isEmpty)
        #expect(h.machine.sessions.isEmpty)
    }

    @Test("a viewer's control request is refused notAllowed and not executed; an expert's is executed")
    func viewerRefused() throws {
        var h = PublisherHarness.connected()
        h.start("viewer", role: .viewer)
        h.start("expert", role: .expert)
        _ = h.handle(.peerConnected(sessionId: "viewer"))
        _ = h.handle(.peerConnected(sessionId: "expert"))
        let request = DataChannelMessage.text(ControlCodec.encode(ControlEnvelope(id: "r1", request: .clearAnnotations)))
        let refused = h.handle(.controlMessage(sessionId: "viewer", request))
        #expect(refused.executed == 0)
        let reply = try #require(refused.replies.first)
        guard case .error(let error) = reply else { Issue.record("\(reply)"); return }
        #expect(error.code == .notAllowed && error.id == "r1")
        #expect(refused.events.contains { if case .control("viewer", "clearAnnotations", _) = $0 { true } else { false } })
        let executed = h.handle(.controlMessage(sessionId: "expert", request))
        #expect(executed.executed == 1 && executed.replies.isEmpty)
        // What it came to is answered, and a changed list goes to everyone.
        guard case let .executeControl(_, message, author, role)? = executed.first else { Issue.record("\(executed)"); return }
        #expect(author == "c-expert" && role == .expert)
        let control = PublisherControl(board: AnnotationBoard(), placer: AnnotationPlacer(history: FrameHistory(capacity: 4)))
        let outcome = control.handle(message, from: author, role: role)
        let answered = h.handle(.controlHandled(sessionId: "expert", outcome))
        #expect(answered.replies == [.ack(id: "r1", annotationId: nil)])
        #expect(answered.contains { if case .broadcastAnnotations = $0 { true } else { false } })
        // Connected counts, and stopping ends every session without telling the server.
        #expect(h.machine.subscriberCounts == (2, 2))
        let stop = h.handle(.stopping)
        #expect(stop.removed.sorted() == ["expert", "viewer"] && stop.sent.isEmpty)
        #expect(stop.endedReasons == ["publisher stopping", "publisher stopping"])
    }

    @Test("the control rate limit at its edge: the burst exactly, then rateLimited, then admitted after the refill")
    func rateLimitEdge() throws {
        // 2 a second: one token every 500 ms; a burst of 3.
        var h = PublisherHarness(controlRate: ControlRateLimit(requestsPerSecond: 2, burst: 3))
        _ = h.handle(.signalingConnected(peerId: "p1"))
        h.start("s1")
        _ = h.handle(.peerConnected(sessionId: "s1"))
        func request(_ id: String) -> PublisherSessions.Event {
            .controlMessage(sessionId: "s1", .text(ControlCodec.encode(ControlEnvelope(id: id, request: .clearAnnotations))))
        }
        for i in 0..<3 { #expect(h.handle(request("r\(i)")).executed == 1, "r\(i) is in the burst") }
        let over = h.handle(request("r3"))
        #expect(over.executed == 0)
        guard case .error(let error)? = over.replies.first else { Issue.record("\(over)"); return }
        #expect(error.code == .rateLimited && error.id == "r3")
        #expect(error.message.contains("2 requests/s, burst 3") && error.message.contains("retry in 500 ms"), "\(error.message)")
        // A nanosecond short of the refill: still refused (and refusals cost nothing).
        #expect(h.handle(request("r4"), after: 500 * PublisherSessionsTests.ms - 1).executed == 0)
        #expect(h.handle(request("r5"), after: 1).executed == 1, "one token back after 500 ms")
        #expect(h.handle(request("r6")).executed == 0)
        // Garbage counts against the limit and is answered too.
        let garbage = h.handle(.controlMessage(sessionId: "s1", .text("{not json")), after: 500 * PublisherSessionsTests.ms)
        guard case .error(let malformed)? = garbage.replies.first else { Issue.record("\(garbage)"); return }
        #expect(malformed.code == .malformed && garbage.executed == 0)
        #expect(h.handle(request("r7")).replies.count == 1, "bucket empty again")
    }
}

@Suite("publisher sessions: a busy room")
struct PublisherRoomBusyTests {
    static let ms = PublisherSessionsTests.ms

    @Test("roomFull never ends the publisher: it says why and declares again, backing off 1, 2, 4, 8, 8 s")
    func roomFullRetriesWithBackoff() {
        var h = PublisherHarness()
        #expect(h.handle(.signalingConnected(peerId: "p1")).sent == [PublisherSessionsTests.register])
        var expected: [UInt64] = [1000, 2000, 4000, 8000, 8000]
        while !expected.isEmpty {
            let delay = expected.removeFirst()
            let refused = h.handle(.server(.error(details: "room \"site\" already has a publisher", code: .roomFull)))
            #expect(refused.sent.isEmpty)
            let busy = refused.events.compactMap { if case let .roomBusy(room, details, retryIn) = $0 { (room, details, retryIn) } else { nil } }
            #expect(busy.count == 1 && busy.first?.0 == "site" && busy.first?.1.contains("already has a publisher") == true)
            #expect(busy.first?.2 == .milliseconds(Int64(delay)))
            #expect(!refused.events.contains { if case .serverError = $0 { true } else { false } }, "a busy room is not a server error")
            #expect(refused.wakes == [h.now + delay * Self.ms])
            #expect(h.handle(.tick, after: delay * Self.ms - 1).sent.isEmpty, "not before its time")
            #expect(h.handle(.tick, after: 1).sent == [PublisherSessionsTests.register])
            #expect(h.handle(.tick, after: 1).sent.isEmpty, "once per refusal")
        }
    }

    @Test("a new connection starts the backoff afresh; a lost one cancels the retry")
    func backoffPerConnection() {
        var h = PublisherHarness.connected()
        _ = h.handle(.server(.error(details: "full", code: .roomFull)))
        _ = h.handle(.server(.error(details: "full", code: .roomFull)))
        _ = h.handle(.signalingLost(reason: "gone"))
        #expect(h.handle(.tick, after: 10_000 * Self.ms).sent.isEmpty, "no connection, nothing to send")
        _ = h.handle(.signalingConnected(peerId: "p2"))
        #expect(h.handle(.server(.error(details: "full", code: .roomFull))).wakes == [h.now + 1000 * Self.ms])
    }

    @Test("an unauthorized or wrongRole refusal is still reported as a server error, not retried")
    func otherRefusalsAreNotRetried() {
        var h = PublisherHarness.connected()
        for code in [SignalingErrorCode.unauthorized, .wrongRole] {
            let refused = h.handle(.server(.error(details: "no", code: code)))
            #expect(refused.wakes.isEmpty)
            #expect(refused.events.contains { if case .serverError(let c, "no") = $0 { c == code } else { false } })
        }
        #expect(h.handle(.tick, after: 60_000 * Self.ms).sent.isEmpty)
    }

    @Test("a consumer's meta picks the pose transport: trailer on its branch only, no missing-extension warning for it; anything else is said and gets the extension")
    func poseTransport() {
        var h = PublisherHarness.connected()
        func build(_ id: String, meta: JSONValue?) -> [PublisherSessions.Effect] {
            h.handle(.server(.startSession(peerId: "c-\(id)", sessionId: id, role: .expert, meta: meta)))
        }
        func transport(_ effects: [PublisherSessions.Effect]) -> PoseTransport? {
            effects.compactMap { if case .buildBranch(_, _, let t, _) = $0 { t } else { nil } }.first
        }
        #expect(transport(build("plain", meta: .object(["name": .string("gst")]))) == .headerExtension)
        #expect(transport(build("browser", meta: .object([PoseTransport.metaKey: .string("trailer")]))) == .trailer)
        let odd = build("odd", meta: .object([PoseTransport.metaKey: .number(3)]))
        #expect(transport(odd) == .headerExtension)
        #expect(odd.events.contains { if case .error(let text) = $0 { text.contains("poseTransport") && text.contains("headerExtension | trailer | sei") } else { false } })
        #expect(transport(build("sfu-ish", meta: .object([PoseTransport.metaKey: .string("sei")]))) == .sei)
        let unknown = build("unknown", meta: .object([PoseTransport.metaKey: .string("smoke-signal")]))
        #expect(transport(unknown) == .headerExtension && !unknown.events.isEmpty)

        let built = h.handle(.branchBuilt(sessionId: "browser"))
        #expect(built.events.contains { if case .sessionStarted("browser", _, _, .trailer) = $0 { true } else { false } })
        _ = h.handle(.offerCreated(sessionId: "browser", sdp: "v=0 offer"))
        // Its answer has no pose extmap (it was offered none): not a subscriber without pose.
        let bare = AnswerCheckTests.vp8Answer.replacingOccurrences(of: "a=extmap:1 \(PoseHeaderExtension.uri)\n", with: "")
        #expect(bare != AnswerCheckTests.vp8Answer)
        let answer = h.handle(.server(.peer(PeerMessage(sessionId: "browser", payload: .sdp(SignalingSDP(type: "answer", sdp: bare))))))
        #expect(!answer.events.contains { if case .subscriberWithoutPose = $0 { true } else { false } })
        _ = h.handle(.branchBuilt(sessionId: "plain"))
        _ = h.handle(.offerCreated(sessionId: "plain", sdp: "v=0 offer"))
        let plainAnswer = h.handle(.server(.peer(PeerMessage(sessionId: "plain", payload: .sdp(SignalingSDP(type: "answer", sdp: bare))))))
        #expect(plainAnswer.events.contains { if case .subscriberWithoutPose = $0 { true } else { false } })
    }
}

@Suite("publisher sessions through an SFU (control over signaling)")
struct PublisherSFUSessionsTests {
    static let viaSFU: JSONValue = .object([PeerMessage.viaKey: .string(PeerMessage.viaSFU)])

    static let second: UInt64 = 1_000_000_000

    /// A `receiving` control message over signaling for `sessionId`.
    static func proof(_ sessionId: String, id: String = "rx1", frame: UInt32 = 42, nanos: UInt64 = 1_790_000_000_123_456_789) -> PublisherSessions.Event {
        let text = ControlCodec.encode(ControlEnvelope(id: id, request: .receiving(frameId: frame, captureTimeNanos: nanos)))
        return .server(.peer(PeerMessage(sessionId: sessionId, payload: .control(text))))
    }

    /// `sessionId` names a frame, which the node finds among ours: the effects of both steps.
    static func prove(_ h: inout PublisherHarness, _ sessionId: String, id: String = "rx1", after step: UInt64 = 0) -> [PublisherSessions.Effect] {
        let asked = h.handle(proof(sessionId, id: id), after: step)
        guard asked.contains(where: { if case .checkReception(sessionId, id, 42, 1_790_000_000_123_456_789) = $0 { true } else { false } }) else {
            Issue.record("no check of the proof: \(asked)")
            return asked
        }
        return asked + h.handle(.receptionChecked(sessionId: sessionId, requestId: id, frameId: 42, refusal: nil))
    }

    @Test("a session through the SFU has no branch and is connected once it names a frame it received; its control comes and goes over signaling, role checked")
    func controlOverSignaling() {
        var h = PublisherHarness(publishesToSFU: true)
        _ = h.handle(.signalingConnected(peerId: "p1"))
        let started = h.handle(.server(.startSession(peerId: "c-expert", sessionId: "s1", role: .expert, meta: Self.viaSFU)))
        #expect(!started.contains { if case .buildBranch = $0 { true } else { false } }, "no branch: \(started)")
        #expect(!started.contains { if case .sendAnnotations = $0 { true } else { false } }, "nothing sent to it yet: \(started)")
        #expect(started.wakes == [h.now + 15 * Self.second], "its setup deadline: \(started)")
        #expect(h.machine.sessions["s1"]?.connected == false && h.machine.sessions["s1"]?.viaSFU == true)
        let request = #"{"id":"r1","type":"clearAnnotations"}"#
        // Before it proved anything, nothing but a proof is read, and the sender is told.
        let early = h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .control(request)))))
        #expect(early.executed == 0)
        #expect(early.replies.contains { if case .error(let e) = $0 { e.id == "r1" && e.code == .notAllowed && e.message.contains("receiving") } else { false } }, "\(early)")
        let proved = Self.prove(&h, "s1")
        #expect(proved.contains { if case .sendAnnotations("s1") = $0 { true } else { false } })
        #expect(proved.events.contains { if case .subscriberConnected("s1") = $0 { true } else { false } })
        #expect(proved.replies.contains(.ack(id: "rx1", annotationId: nil)))
        #expect(h.machine.sessions["s1"]?.connected == true)
        let control = h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .control(request)))))
        #expect(control.contains { if case .executeControl("s1", _, "c-expert", .expert) = $0 { true } else { false } }, "\(control) \(started)")
        // A viewer proves the same way (it receives too), and its requests are refused by role.
        _ = h.handle(.server(.startSession(peerId: "c-viewer", sessionId: "s2", role: .viewer, meta: Self.viaSFU)))
        #expect(Self.prove(&h, "s2").replies.contains(.ack(id: "rx1", annotationId: nil)))
        let refused = h.handle(.server(.peer(PeerMessage(sessionId: "s2", payload: .control(request)))))
        #expect(refused.contains { if case .sendControl(.error(let e), "s2") = $0 { e.code == .notAllowed } else { false } }, "\(refused)")
        // An SDP for a session through the SFU is no answer to anything.
        let sdp = h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "answer", sdp: "v=0"))))))
        #expect(!sdp.contains { if case .applyAnswer = $0 { true } else { false } })
    }

    @Test("16 strangers through the SFU that never name a frame, or name a wrong one, all end at the setup deadline, and tell the server")
    func strangersEndAtTheDeadline() {
        var h = PublisherHarness(publishesToSFU: true)
        _ = h.handle(.signalingConnected(peerId: "p1"))
        let ids = (1...16).map { "s\($0)" }
        for (n, id) in ids.enumerated() {
            _ = h.handle(.server(.startSession(peerId: "c\(n / 4)", sessionId: id, role: .viewer, meta: Self.viaSFU)))
        }
        #expect(h.machine.sessions.count == 16 && h.machine.subscriberCounts.connected == 0)
        // One guesses: refused, with its id, and its clock runs on.
        _ = h.handle(Self.proof("s3", id: "rx9"), after: Self.second)
        let wrong = h.handle(.receptionChecked(sessionId: "s3", requestId: "rx9", frameId: 42, refusal: "this publisher sent it with another capture time"))
        #expect(wrong.replies.contains { if case .error(let e) = $0 { e.id == "rx9" && e.code == .invalidValue } else { false } }, "\(wrong)")
        #expect(h.machine.sessions["s3"]?.connected == false)
        #expect(h.handle(.tick, after: 13 * Self.second).endedReasons.isEmpty, "not before the deadline")
        let ended = h.handle(.tick, after: Self.second)
        #expect(ended.endedReasons.count == 16 && ended.endedReasons.allSatisfy { $0.contains("never named a frame it received") }, "\(ended.endedReasons)")
        #expect(Set(ended.sent.compactMap { if case .endSession(let id) = $0 { id } else { nil } }) == Set(ids))
        #expect(h.machine.sessions.isEmpty)
    }

    @Test("a session through the SFU that stops naming frames ends after the reception timeout; one that goes on stays")
    func silentSessionEnds() {
        var h = PublisherHarness(publishesToSFU: true)
        _ = h.handle(.signalingConnected(peerId: "p1"))
        for id in ["quiet", "live"] {
            _ = h.handle(.server(.startSession(peerId: "c-\(id)", sessionId: id, role: .expert, meta: Self.viaSFU)))
            let proved = Self.prove(&h, id)
            #expect(proved.wakes == [h.now + 10 * Self.second], "the timeout's wake: \(proved)")
        }
        var ended: [String] = []
        for n in 1...10 {
            // Every 2 s "live" names a frame; "quiet" never again.
            ended += Self.prove(&h, "live", id: "rx\(n + 1)", after: 2 * Self.second).endedReasons
            ended += h.handle(.tick).endedReasons
        }
        #expect(ended.count == 1 && ended[0].contains("named no frame it received for 10"), "\(ended)")
        #expect(h.machine.sessions["quiet"] == nil && h.machine.sessions["live"]?.connected == true)
    }

    @Test("a proof over a direct session's data channel is refused: its peer connection shows it receives")
    func proofOnDirectSession() {
        var h = PublisherHarness.connected(starting: "d1")
        _ = h.handle(.peerConnected(sessionId: "d1"))
        let text = ControlCodec.encode(ControlEnvelope(id: "rx1", request: .receiving(frameId: 1, captureTimeNanos: 5)))
        let effects = h.handle(.controlMessage(sessionId: "d1", .text(text)))
        #expect(!effects.contains { if case .checkReception = $0 { true } else { false } })
        #expect(effects.replies.contains { if case .error(let e) = $0 { e.id == "rx1" && e.code == .notAllowed } else { false } }, "\(effects)")
    }

    @Test("asking for the SFU from a publisher that publishes into none is refused; control over signaling for a direct session is refused with a reply")
    func refusals() {
        var h = PublisherHarness()
        _ = h.handle(.signalingConnected(peerId: "p1"))
        let refused = h.handle(.server(.startSession(peerId: "c1", sessionId: "s1", role: .expert, meta: Self.viaSFU)))
        #expect(refused.sent.contains(.endSession(sessionId: "s1")))
        #expect(h.machine.sessions["s1"] == nil)
        h.start("s2")
        let control = h.handle(.server(.peer(PeerMessage(sessionId: "s2", payload: .control(#"{"id":"r1","type":"clearAnnotations"}"#)))))
        #expect(!control.contains { if case .executeControl = $0 { true } else { false } })
        #expect(control.events.contains { if case .error(let text) = $0 { text.contains("media is direct") } else { false } })
        // The sender is answered where it asked, with its request's id.
        let replies = control.sent.compactMap { message -> ControlReply? in
            guard case .peer(let peer) = message, peer.sessionId == "s2", case .control(let text) = peer.payload else { return nil }
            return try? ControlCodec.decodeReply(text)
        }
        guard case .error(let error)? = replies.first else { Issue.record("no reply over signaling: \(control.sent)"); return }
        #expect(error.id == "r1" && error.code == .notAllowed && replies.count == 1)
    }
}

/// `UnprovenConsumers`: the wait of a consumer whose sessions through the SFU end unproven.
@Suite("consumers whose sessions through the SFU never proved themselves")
struct UnprovenConsumersTests {
    static let s: UInt64 = 1_000_000_000

    @Test("the first unproven end is free; from the second the wait is the base, then doubles up to the maximum; a proof clears it")
    func waits() {
        var u = UnprovenConsumers(base: 15 * Self.s, maximum: 60 * Self.s)
        u.ended("c", at: 100 * Self.s)
        #expect(u.wait("c", now: 100 * Self.s) == nil)
        u.ended("c", at: 120 * Self.s)
        #expect(u.wait("c", now: 120 * Self.s) == 15 * Self.s)
        #expect(u.wait("c", now: 135 * Self.s) == nil)
        #expect([2, 3, 4, 5, 30].map { u.penalty(afterEnds: $0) / Self.s } == [15, 30, 60, 60, 60])
        u.proved("c")
        u.ended("c", at: 200 * Self.s)
        #expect(u.wait("c", now: 200 * Self.s) == nil, "a proof started the count again")
        #expect(u.wait("other", now: 200 * Self.s) == nil)
    }

    @Test("records are forgotten once their wait ended longer than the maximum ago")
    func forgets() {
        var u = UnprovenConsumers(base: 15 * Self.s, maximum: 60 * Self.s)
        for n in 0..<100 { u.ended("stranger\(n)", at: 0); u.ended("stranger\(n)", at: 0) }
        u.forget(at: 74 * Self.s)
        #expect(u.count == 100)
        u.forget(at: 76 * Self.s)
        #expect(u.count == 0)
    }
}

extension PublisherSFUSessionsTests {
    @Test("a consumer whose sessions through the SFU end unproven again and again is refused for a while; its first proof clears it")
    func repeatOffender() {
        var h = PublisherHarness(publishesToSFU: true)
        _ = h.handle(.signalingConnected(peerId: "p1"))
        func start(_ id: String) -> [PublisherSessions.Effect] {
            h.handle(.server(.startSession(peerId: "stranger", sessionId: id, role: .viewer, meta: Self.viaSFU)))
        }
        _ = start("a1"); _ = start("a2")
        #expect(h.handle(.tick, after: 15 * Self.second).endedReasons.count == 2)
        let refused = start("a3")
        #expect(refused.sent == [.endSession(sessionId: "a3")] && h.machine.sessions["a3"] == nil, "\(refused)")
        #expect(refused.events.contains { if case .error(let text) = $0 { text.contains("15 s more") } else { false } }, "\(refused)")
        // Another consumer is not concerned.
        _ = h.handle(.server(.startSession(peerId: "honest", sessionId: "h1", role: .expert, meta: Self.viaSFU)))
        #expect(h.machine.sessions["h1"] != nil)
        // After the wait it may try again; a proof clears its record.
        _ = h.handle(.tick, after: 15 * Self.second)
        _ = start("a4")
        #expect(h.machine.sessions["a4"] != nil)
        _ = Self.prove(&h, "a4")
        _ = start("a5")
        #expect(h.machine.sessions["a5"] != nil)
    }
}

extension PublisherSFUSessionsTests {
    @Test("a session through the SFU that floods requests before its proof is refused within its rate limit, like anyone")
    func floodBeforeProof() {
        var h = PublisherHarness(publishesToSFU: true)
        _ = h.handle(.signalingConnected(peerId: "p1"))
        _ = h.handle(.server(.startSession(peerId: "stranger", sessionId: "s1", role: .expert, meta: Self.viaSFU)))
        var codes: [ControlErrorCode] = []
        for n in 0..<100 {
            let text = #"{"id":"r\#(n)","type":"clearAnnotations"}"#
            for case .error(let e) in h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .control(text))))).replies { codes.append(e.code) }
        }
        #expect(codes.count == 100, "every request answered")
        #expect(codes.contains(.notAllowed) && codes.contains(.rateLimited), "\(Set(codes))")
        #expect(codes.count { $0 == .notAllowed } < 50, "the limiter counts them: \(codes.count { $0 == .notAllowed }) refused as not allowed")
    }
}
