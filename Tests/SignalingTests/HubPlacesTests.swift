import Foundation
import Signaling
import Testing

extension HubHarness {
    /// `send` at hub time `time` (seconds).
    mutating func send(_ message: ClientMessage, from peer: String, at time: Double) -> [Delivery] {
        hub.receive(SignalingCodec.encode(message), from: peer, at: time)
    }

    @discardableResult
    mutating func declare(_ peer: String, _ roles: [GstPeerRole], room: String, role: RoomRole? = nil,
                          token: String? = nil, at time: Double) -> [Delivery] {
        send(.setPeerStatus(PeerStatus(roles: roles, room: room, role: role, token: token)), from: peer, at: time)
    }

    /// `count` peers that declare themselves listeners of `room`; how many were refused `roomFull`.
    mutating func listeners(_ count: Int, in room: String, at time: Double = 0) -> (admitted: [String], refused: Int) {
        var admitted: [String] = [], refused = 0
        for _ in 0..<count {
            let peer = hub.connect(at: time).peer
            let replies = declare(peer, [.listener], room: room, at: time)
            if replies.isEmpty { admitted.append(peer) } else {
                expectOneError(replies, to: peer, .roomFull)
                refused += 1
            }
        }
        return (admitted, refused)
    }
}

/// A room whose publisher and experts need tokens; viewers and listeners need none.
private let site = AccessPolicy(roleTokens: ["site": [.publisher: "pub-token", .expert: "expert-token"]])

@Suite("Hub: reserved places, idle listeners and session caps")
struct HubPlacesTests {
    @Test func idleListenersCannotKeepOutThePublisherOrAnExpertWithAToken() throws {
        var h = HubHarness(access: site)
        // 16 places: 1 the publisher's, 4 for experts with a token, 11 for anyone.
        let crowd = h.listeners(30, in: "site")
        #expect(crowd.admitted.count == 11 && crowd.refused == 19)
        let publisher = h.connect()
        #expect(h.declare(publisher, [.producer], room: "site", token: "pub-token").count == 11, "its 11 listeners are told")
        var experts: [String] = []
        for _ in 0..<4 {
            let expert = h.connect()
            #expect(h.declare(expert, [.consumer], room: "site", role: .expert, token: "expert-token").isEmpty)
            experts.append(expert)
        }
        let fifth = h.connect()
        expectOneError(h.declare(fifth, [.consumer], room: "site", role: .expert, token: "expert-token"), to: fifth, .roomFull)
        // A viewer claiming expert without the token is refused for the token, not the room.
        expectOneError(h.declare(fifth, [.consumer], room: "site", role: .expert), to: fifth, .unauthorized)
        // A restarted publisher: the old one's place comes free, the new one takes it.
        _ = h.hub.disconnect(publisher)
        let restarted = h.connect()
        #expect(h.declare(restarted, [.producer], room: "site", token: "pub-token").count == 11)
        _ = try h.startSession(consumer: experts[0], producer: restarted)
    }

    @Test func theRefusalSaysWhatIsKeptForWhom() {
        var h = HubHarness(access: site)
        _ = h.listeners(11, in: "site")
        let late = h.connect()
        expectOneError(h.declare(late, [.listener], room: "site"), to: late, .roomFull, mentioning: "kept for experts with a token")
    }

    @Test func anOpenRoomKeepsOnlyThePublishersPlace() {
        var h = HubHarness()
        let crowd = h.listeners(30, in: "open")
        #expect(crowd.admitted.count == 15 && crowd.refused == 15)
        let expert = h.connect()
        expectOneError(h.declare(expert, [.consumer], room: "open", role: .expert), to: expert, .roomFull,
                       mentioning: "places besides the publisher's")
        let publisher = h.connect()
        #expect(h.declare(publisher, [.producer], room: "open").count == 15)
    }

    @Test func aSquatterWithoutThePublisherTokenNeverBecomesThePublisher() throws {
        var h = HubHarness(access: site)
        let listener = h.connect()
        h.declare(listener, [.listener], room: "site")
        let squatter = h.connect()
        // The room has no publisher yet: still refused, and nobody is told anything.
        expectOneError(h.declare(squatter, [.producer], room: "site"), to: squatter, .unauthorized)
        expectOneError(h.declare(squatter, [.producer], room: "site", token: "expert-token"), to: squatter, .unauthorized)
        #expect(try h.producers(seenBy: listener) == [])
        let publisher = h.connect()
        #expect(h.declare(publisher, [.producer], room: "site", token: "pub-token").map(\.to) == [listener])
        expectOneError(h.declare(squatter, [.producer], room: "site"), to: squatter, .unauthorized)
        #expect(try h.producers(seenBy: listener) == [publisher])
    }

    @Test func inAnOpenRoomTheFirstPublisherKeepsItUntilItLeaves() throws {
        var h = HubHarness()
        let first = h.connect(), second = h.connect(), viewer = h.connect()
        h.declare(first, [.producer], room: "lab")
        h.declare(viewer, [.consumer], room: "lab")
        for _ in 0..<3 {
            expectOneError(h.declare(second, [.producer], room: "lab"), to: second, .roomFull, mentioning: "already has a publisher")
        }
        #expect(try h.producers(seenBy: viewer) == [first])
        _ = h.hub.disconnect(first)
        #expect(h.declare(second, [.producer], room: "lab").isEmpty)
        #expect(try h.producers(seenBy: viewer) == [second])
    }

    @Test func listenersWithoutASessionAreDroppedAfterTheTimeoutOnceThereIsAPublisher() throws {
        // (Undeclared peers have a timeout of their own: the next test.)
        var h = HubHarness(limits: HubLimits(listenerTimeout: 30, undeclaredTimeout: 100_000))
        let idle = h.hub.connect(at: 0).peer, busy = h.hub.connect(at: 0).peer, undeclared = h.hub.connect(at: 0).peer
        h.declare(idle, [.listener], room: "lab", at: 0)
        h.declare(busy, [.consumer, .listener], room: "lab", at: 0)
        // Waiting in a room with no publisher is not idling: nothing to start a session with.
        #expect(h.hub.expireIdle(at: 500).closed.isEmpty)
        let publisher = h.hub.connect(at: 500).peer
        h.declare(publisher, [.producer], room: "lab", at: 500)
        let session = try h.startSession(consumer: busy, producer: publisher)
        #expect(h.hub.expireIdle(at: 529.9).closed.isEmpty)
        let expired = h.hub.expireIdle(at: 530)
        #expect(expired.closed == [idle])
        expectOneError(expired.deliveries, to: idle, .idleTimeout, mentioning: "30 s")
        #expect(h.hub.peerCount == 3, "the idle listener is gone; the undeclared one is not counted in any room")
        #expect(h.hub.refusals[.idleTimeout] == 1)
        // A session ending restarts the clock of its consumer.
        _ = h.send(.endSession(sessionId: session), from: busy, at: 540)
        #expect(h.hub.expireIdle(at: 569).closed.isEmpty)
        #expect(h.hub.expireIdle(at: 570).closed == [busy])
        #expect(h.hub.expireIdle(at: 10_000).closed.isEmpty, "the publisher and the undeclared peer stay")
        _ = undeclared
    }

    @Test func connectionsThatNeitherDeclareNorHoldASessionAreDroppedAfterTheirOwnTimeout() throws {
        var h = HubHarness(limits: HubLimits(listenerTimeout: 30, undeclaredTimeout: 10))
        let stranger = h.hub.connect(at: 0).peer, late = h.hub.connect(at: 0).peer, source = h.hub.connect(at: 0).peer
        let publisher = h.hub.connect(at: 0).peer
        h.declare(publisher, [.producer], room: SignalingHub.defaultRoom, at: 0)
        // Declaring in time stops this clock (the room's own rules apply from then on).
        h.declare(late, [.listener], room: "elsewhere", at: 9)
        // GStreamer's webrtcsrc never declares: a session keeps it.
        let session = try h.startSession(consumer: source, producer: publisher)
        #expect(h.hub.expireIdle(at: 9.9).closed.isEmpty)
        let expired = h.hub.expireIdle(at: 10)
        #expect(expired.closed == [stranger], "only the bare connection goes")
        expectOneError(expired.deliveries, to: stranger, .idleTimeout, mentioning: "declared")
        // Its session over, the undeclared source has 10 s to start another.
        _ = h.send(.endSession(sessionId: session), from: source, at: 100)
        #expect(h.hub.expireIdle(at: 109).closed.isEmpty)
        #expect(h.hub.expireIdle(at: 110).closed == [source])
        #expect(h.hub.expireIdle(at: 10_000).closed.isEmpty, "the publisher and the declared listener (no publisher in its room) stay")
    }

    @Test func aPublisherArrivingStartsTheClockAfresh() {
        var h = HubHarness(limits: HubLimits(listenerTimeout: 30))
        let listener = h.hub.connect(at: 0).peer
        h.declare(listener, [.listener], room: "lab", at: 0)
        let publisher = h.hub.connect(at: 100).peer
        h.declare(publisher, [.producer], room: "lab", at: 100)
        #expect(h.hub.expireIdle(at: 129).closed.isEmpty)
        #expect(h.hub.expireIdle(at: 130).closed == [listener])
    }

    @Test func sessionsBeingSetUpCountAgainstTheProducersLimit() {
        var h = HubHarness()
        let publisher = h.connect()
        h.declare(publisher, [.producer], room: "lab")
        // Four consumers, four sessions each: no SDP ever sent, all 16 still count.
        for _ in 0..<4 {
            let consumer = h.connect()
            h.declare(consumer, [.consumer], room: "lab")
            for _ in 0..<4 { #expect(h.send(.startSession(peerId: publisher), from: consumer).count == 2) }
        }
        #expect(h.hub.sessionCount == 16)
        let late = h.connect()
        h.declare(late, [.consumer], room: "lab", role: .expert)
        expectOneError(h.send(.startSession(peerId: publisher), from: late), to: late, .roomFull, mentioning: "16 sessions")
    }

    @Test func oneConsumerHoldsAtMostFourSessions() throws {
        var h = HubHarness()
        let publisher = h.connect(), consumer = h.connect()
        h.declare(publisher, [.producer], room: "lab")
        h.declare(consumer, [.consumer], room: "lab")
        var sessions: [String] = []
        for _ in 0..<4 { sessions.append(try h.startSession(consumer: consumer, producer: publisher)) }
        expectOneError(h.send(.startSession(peerId: publisher), from: consumer), to: consumer, .roomFull, mentioning: "at most 4")
        _ = h.send(.endSession(sessionId: sessions[0]), from: consumer)
        _ = try h.startSession(consumer: consumer, producer: publisher)
        #expect(h.hub.refusals[.roomFull] == 1)
    }

    @Test func theLastSessionsOfAPublisherAreKeptForExpertsWithAToken() throws {
        var h = HubHarness(access: site)
        let publisher = h.connect()
        h.declare(publisher, [.producer], room: "site", token: "pub-token")
        for _ in 0..<3 {
            let viewer = h.connect()
            h.declare(viewer, [.consumer], room: "site")
            for _ in 0..<4 { _ = try h.startSession(consumer: viewer, producer: publisher) }
        }
        let fourth = h.connect()
        h.declare(fourth, [.consumer], room: "site")
        expectOneError(h.send(.startSession(peerId: publisher), from: fourth), to: fourth, .roomFull,
                       mentioning: "kept for experts with a token")
        let expert = h.connect()
        h.declare(expert, [.consumer], room: "site", role: .expert, token: "expert-token")
        for _ in 0..<4 { _ = try h.startSession(consumer: expert, producer: publisher) }
        #expect(h.hub.sessionCount == 16)
    }

    @Test func everyRefusalIsCountedByReason() {
        var h = HubHarness(access: site)
        let peer = h.connect()
        expectOneError(h.declare(peer, [.producer], room: "site"), to: peer, .unauthorized)
        expectOneError(h.hub.receive("nonsense", from: peer), to: peer, .malformed)
        expectOneError(h.hub.receive("nonsense", from: peer), to: peer, .malformed)
        #expect(h.hub.refusals == [.unauthorized: 1, .malformed: 2])
    }
}

@Suite("Refusal log")
struct RefusalLogTests {
    @Test func firstOfEachReasonAtOnceThenOneLinePerIntervalSayingHowManyWereNotLogged() {
        var log = RefusalLog<SignalingErrorCode>(interval: 5)
        #expect(log.record(.malformed, peer: "a", details: "x", at: 100)?.unlogged == 0)
        for i in 0..<99 { #expect(log.record(.malformed, peer: "a", details: "x", at: 100 + Double(i) * 0.01) == nil) }
        #expect(log.record(.roomFull, peer: "b", details: "full", at: 101) != nil, "each reason has its own budget")
        #expect(log.record(.malformed, peer: "a", details: "x", at: 104.99) == nil)
        let next = log.record(.malformed, peer: "c", details: "y", at: 105)
        #expect(next == RefusalLog<SignalingErrorCode>.Line(code: .malformed, peer: "c", details: "y", unlogged: 100, total: 102))
        #expect(log.totals == [.malformed: 102, .roomFull: 1])
    }
}
