import PoseCastKit
import Publisher
import Signaling
import Synchronization
import Testing

/// Which experts' voices the publisher hears through the SFU, as a machine on stepped
/// time: routes told to the talkers only, subscriptions only to the feeds under the names
/// it gave out, a feed published again, failures tried again after a backoff, the room
/// lost and made again with a new pin, talkers that leave.
@Suite("publisher's experts' voices through an SFU (state machine)")
struct SFUVoicesTests {
    static let ms: UInt64 = 1_000_000

    struct Harness {
        var machine: SFUVoices
        var now: UInt64 = 1_000 * SFUVoicesTests.ms

        init() {
            let counter = Atomic<Int>(0)
            machine = SFUVoices(room: 1_000_001_234, backoff: RetryBackoff(initial: .seconds(1), maximum: .seconds(10)),
                                names: { "name-\(counter.add(1, ordering: .relaxed).newValue)" })
        }

        mutating func handle(_ event: SFUVoices.Event, after ms: UInt64 = 0) -> [SFUVoices.Effect] {
            now += ms * SFUVoicesTests.ms
            return machine.handle(event, now: now)
        }
    }

    static func route(_ pin: String, _ name: String, listen: [String] = []) -> VoiceRoute {
        VoiceRoute(room: 1_000_001_234, pin: pin, display: name, listen: listen)
    }

    @Test("a talker is told its route once the room is open, and its feed (and only its) is subscribed to")
    func talkerHeard() {
        var h = Harness()
        #expect(h.handle(.talkers(["s1"])).isEmpty, "no route before the room exists")
        #expect(h.handle(.roomOpened(pin: "p1", feeds: [])) == [.emit(.roomOpened(room: 1_000_001_234)), .tell(sessionId: "s1", Self.route("p1", "name-1"))])
        // A stranger's feed under a name nobody was given: said once, never subscribed.
        #expect(h.handle(.published(.init(id: 9, display: "s1"))) == [.emit(.strangerFeed(feed: 9, display: "s1"))])
        #expect(h.handle(.published(.init(id: 9, display: "s1"))).isEmpty, "said once")
        #expect(h.handle(.published(.init(id: 10, display: "name-1"))) == [.subscribe(attempt: 1, sessionId: "s1", feed: 10, pin: "p1")])
        #expect(h.handle(.subscribed(attempt: 1)) == [.emit(.voiceHeard(sessionId: "s1", feed: 10))])
        #expect(h.machine.playing == ["s1"])
        // A later talker, with the room open: told at once, and the first told again: each hears the other.
        #expect(h.handle(.talkers(["s1", "s2"])) == [.tell(sessionId: "s1", Self.route("p1", "name-1", listen: ["name-2"])),
                                                      .tell(sessionId: "s2", Self.route("p1", "name-2", listen: ["name-1"]))])
        #expect(h.handle(.talkers(["s1", "s2"])).isEmpty, "no change, nothing told")
    }

    @Test("a feed already there when the room is watched, or before its talker is known, is matched when both are")
    func orderDoesNotMatter() {
        var h = Harness()
        _ = h.handle(.roomOpened(pin: "p", feeds: []))
        #expect(h.handle(.talkers(["s1"])) == [.tell(sessionId: "s1", Self.route("p", "name-1"))])
        var g = Harness()
        _ = g.handle(.talkers(["s1"]))
        // The room made again (a new pin) while a feed of the old name is listed.
        #expect(g.handle(.roomOpened(pin: "p2", feeds: [.init(id: 4, display: "name-1")]))
                == [.emit(.roomOpened(room: 1_000_001_234)), .tell(sessionId: "s1", Self.route("p2", "name-1")),
                    .subscribe(attempt: 1, sessionId: "s1", feed: 4, pin: "p2")])
    }

    @Test("a talker that leaves: unsubscribed, its name forgotten (a feed under it later is a stranger's)")
    func talkerLeaves() {
        var h = Harness()
        _ = h.handle(.talkers(["s1"]))
        _ = h.handle(.roomOpened(pin: "p", feeds: [.init(id: 3, display: "name-1")]))
        _ = h.handle(.subscribed(attempt: 1))
        _ = h.handle(.talkers(["s1", "s2"]))
        // The one left is told it hears nobody now.
        #expect(h.handle(.talkers(["s2"])) == [.unsubscribe(attempt: 1),
                                                .emit(.voiceEnded(sessionId: "s1", reason: "its session ended or may no longer talk")),
                                                .tell(sessionId: "s2", Self.route("p", "name-2"))])
        _ = h.handle(.talkers([]))
        #expect(h.machine.names.isEmpty)
        #expect(h.handle(.published(.init(id: 5, display: "name-1"))) == [.emit(.strangerFeed(feed: 5, display: "name-1"))])
    }

    @Test("a feed that leaves ends its subscription; published again under the same name, the new feed is subscribed")
    func republished() {
        var h = Harness()
        _ = h.handle(.talkers(["s1"]))
        _ = h.handle(.roomOpened(pin: "p", feeds: [.init(id: 3, display: "name-1")]))
        _ = h.handle(.subscribed(attempt: 1))
        #expect(h.handle(.unpublished(feed: 3)) == [.unsubscribe(attempt: 1),
                                                     .emit(.voiceEnded(sessionId: "s1", reason: "its feed left the voice room"))])
        #expect(h.handle(.published(.init(id: 8, display: "name-1"))) == [.subscribe(attempt: 2, sessionId: "s1", feed: 8, pin: "p")])
        // A newer feed under the name while the old one is still listed replaces it.
        #expect(h.handle(.published(.init(id: 12, display: "name-1")))
                == [.unsubscribe(attempt: 2), .subscribe(attempt: 3, sessionId: "s1", feed: 12, pin: "p")])
        #expect(h.handle(.subscribed(attempt: 2)).isEmpty, "an event of a subscription already ended")
    }

    @Test("a failed subscription is tried again after the backoff, doubling; one that plays starts the count again")
    func backoff() {
        var h = Harness()
        _ = h.handle(.talkers(["s1"]))
        _ = h.handle(.roomOpened(pin: "p", feeds: [.init(id: 3, display: "name-1")]))
        let failed = h.handle(.subscriptionFailed(attempt: 1, reason: "ICE failed"))
        #expect(failed == [.unsubscribe(attempt: 1), .emit(.voiceLost(sessionId: "s1", reason: "ICE failed", retryIn: .seconds(1))),
                           .wake(at: h.now + 1_000 * Self.ms)])
        #expect(h.handle(.tick, after: 999).isEmpty, "not before the wait")
        #expect(h.handle(.tick, after: 1) == [.subscribe(attempt: 2, sessionId: "s1", feed: 3, pin: "p")])
        let again = h.handle(.subscriptionFailed(attempt: 2, reason: "hangup"))
        #expect(again.contains(.emit(.voiceLost(sessionId: "s1", reason: "hangup", retryIn: .seconds(2)))))
        _ = h.handle(.tick, after: 2_000)
        _ = h.handle(.subscribed(attempt: 3))
        _ = h.handle(.subscriptionFailed(attempt: 3, reason: "hangup"))
        #expect(h.handle(.tick, after: 1_000) == [.subscribe(attempt: 4, sessionId: "s1", feed: 3, pin: "p")], "back to 1 s")
    }

    @Test("the room lost: every subscription ends; made again, every talker gets the new pin and is matched anew")
    func roomLost() {
        var h = Harness()
        _ = h.handle(.talkers(["s1", "s2"]))
        _ = h.handle(.roomOpened(pin: "p", feeds: [.init(id: 3, display: "name-1"), .init(id: 4, display: "name-2")]))
        _ = h.handle(.subscribed(attempt: 1))
        let lost = h.handle(.roomLost(reason: "Janus gone"))
        #expect(lost == [.unsubscribe(attempt: 1), .emit(.voiceEnded(sessionId: "s1", reason: "the voice room is gone")),
                         .unsubscribe(attempt: 2), .emit(.roomLost(room: 1_000_001_234, reason: "Janus gone"))])
        #expect(h.handle(.roomLost(reason: "again")).isEmpty, "said once")
        #expect(h.handle(.published(.init(id: 5, display: "name-1"))).isEmpty, "nothing subscribed while the room is down")
        #expect(h.handle(.roomOpened(pin: "q", feeds: []))
                == [.emit(.roomOpened(room: 1_000_001_234)), .tell(sessionId: "s1", Self.route("q", "name-1", listen: ["name-2"])),
                    .tell(sessionId: "s2", Self.route("q", "name-2", listen: ["name-1"]))])
    }
}
