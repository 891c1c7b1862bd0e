import PoseCastKit
import Signaling
@testable import Subscriber
import Testing

/// An expert's voice into the SFU's voice room as a machine on stepped time: the route
/// starts it, a new route replaces it, failures back off and a connection resets them,
/// events of a withdrawn try are ignored, stop withdraws.
@Suite("expert's voice through an SFU (state machine)")
struct SFUVoicePublicationTests {
    static let ms: UInt64 = 1_000_000
    static let first = VoiceRoute(room: 7, pin: "p1", display: "n1")
    static let second = VoiceRoute(room: 7, pin: "p2", display: "n1")

    struct Harness {
        var machine = SFUVoicePublication(backoff: RetryBackoff(initial: .seconds(1), maximum: .seconds(4)))
        var now: UInt64 = 5_000 * SFUVoicePublicationTests.ms
        mutating func handle(_ event: SFUVoicePublication.Event, after ms: UInt64 = 0) -> [SFUVoicePublication.Effect] {
            now += ms * SFUVoicePublicationTests.ms
            return machine.handle(event, now: now)
        }
    }

    @Test("a route publishes; published then connected: talking; the same route again changes nothing")
    func publish() {
        var h = Harness()
        #expect(h.handle(.route(Self.first)) == [.publish(attempt: 1, Self.first)])
        #expect(h.handle(.published(attempt: 1, feed: 42)) == [.emit(.published(room: 7, feed: 42))])
        #expect(h.handle(.connected(attempt: 1, mismatch: nil)) == [.emit(.talking(room: 7))])
        #expect(h.handle(.route(Self.first)).isEmpty)
    }

    @Test("a new route (the room made again) withdraws the try and publishes with it at once")
    func newRoute() {
        var h = Harness()
        _ = h.handle(.route(Self.first))
        _ = h.handle(.connected(attempt: 1, mismatch: nil))
        #expect(h.handle(.route(Self.second)) == [.withdraw(attempt: 1), .publish(attempt: 2, Self.second)])
        #expect(h.handle(.ended(attempt: 1, reason: "late")).isEmpty, "an event of the withdrawn try")
    }

    @Test("a route that only changes whom we hear keeps the publication and says whom to hear")
    func newListeners() {
        var h = Harness()
        _ = h.handle(.route(Self.first))
        _ = h.handle(.connected(attempt: 1, mismatch: nil))
        var more = Self.first
        more.listen = ["n2", "n3"]
        #expect(h.handle(.route(more)) == [.hear(["n2", "n3"])])
        #expect(h.machine.phase == .publishing(attempt: 1, route: more, connected: true))
        #expect(h.handle(.route(more)).isEmpty)
    }

    @Test("failures back off, doubling to the maximum; a connection resets them; a certificate mismatch is a failure")
    func backoff() {
        var h = Harness()
        _ = h.handle(.route(Self.first))
        #expect(h.handle(.ended(attempt: 1, reason: "No such room"))
                == [.withdraw(attempt: 1), .emit(.lost(reason: "No such room", retryIn: .seconds(1))), .wake(at: h.now + 1_000 * Self.ms)])
        #expect(h.handle(.tick, after: 999).isEmpty)
        #expect(h.handle(.tick, after: 1) == [.publish(attempt: 2, Self.first)])
        #expect(h.handle(.ended(attempt: 2, reason: "x")).contains(.emit(.lost(reason: "x", retryIn: .seconds(2)))))
        _ = h.handle(.tick, after: 2_000)
        #expect(h.handle(.ended(attempt: 3, reason: "x")).contains(.emit(.lost(reason: "x", retryIn: .seconds(4)))))
        _ = h.handle(.tick, after: 4_000)
        #expect(h.handle(.ended(attempt: 4, reason: "x")).contains(.emit(.lost(reason: "x", retryIn: .seconds(4)))), "capped")
        _ = h.handle(.tick, after: 4_000)
        let mismatch = h.handle(.connected(attempt: 5, mismatch: "sha-256 AB"))
        #expect(mismatch.first == .withdraw(attempt: 5))
        _ = h.handle(.tick, after: 4_000)
        _ = h.handle(.connected(attempt: 6, mismatch: nil))
        #expect(h.handle(.ended(attempt: 6, reason: "hangup")).contains(.emit(.lost(reason: "hangup", retryIn: .seconds(1)))))
    }

    @Test("stop withdraws the try and nothing follows")
    func stop() {
        var h = Harness()
        _ = h.handle(.route(Self.first))
        #expect(h.handle(.stop) == [.withdraw(attempt: 1)])
        #expect(h.handle(.route(Self.second)).isEmpty)
        #expect(h.handle(.tick, after: 10_000).isEmpty)
    }
}
