import PoseCastKit
import Publisher
import Signaling
import Testing

/// The publisher's publication into an SFU as a machine on stepped time: the try, what
/// Janus says of it (published, hung up, lost, refused, room destroyed), the broadcasts
/// opened only once the channel is open and Janus's certificate checked, the backoff
/// between tries, and events of a try already withdrawn.
@Suite("publisher publication through an SFU (state machine)")
struct SFUPublicationTests {
    static let ms: UInt64 = 1_000_000

    /// The machine, its clock and the effects of the last step.
    struct Harness {
        var machine = SFUPublication(room: 1234, poseTransport: .sei,
                                     backoff: RetryBackoff(initial: .seconds(2), maximum: .seconds(10)))
        var now: UInt64 = 1_000 * SFUPublicationTests.ms

        mutating func handle(_ event: SFUPublication.Event, after ms: UInt64 = 0) -> [SFUPublication.Effect] {
            now += ms * SFUPublicationTests.ms
            return machine.handle(event, now: now)
        }

        /// Waits until the pending wake and ticks: the effects of the tick.
        mutating func tickAtWake(_ effects: [SFUPublication.Effect]) -> [SFUPublication.Effect] {
            guard let at = effects.wake else { Issue.record("no wake in \(effects)"); return [] }
            #expect(machine.handle(.tick, now: at - 1).isEmpty, "nothing before the wake")
            now = at
            return machine.handle(.tick, now: now)
        }
    }

    @Test("join: one try; published, then connected with a matching certificate; the broadcasts open once the channel is open too")
    func join() {
        var h = Harness()
        #expect(h.handle(.start) == [.publish(attempt: 1)])
        #expect(h.handle(.start).isEmpty, "a second start does not publish twice")
        #expect(h.handle(.published(attempt: 1, feed: 77), after: 300)
                == [.emit(.publishing(room: 1234, feed: 77, poseTransport: .sei))])
        #expect(h.handle(.channelOpen(attempt: 1)).isEmpty, "no broadcast before Janus's certificate is checked")
        #expect(h.handle(.connected(attempt: 1, mismatch: nil), after: 200) == [.emit(.connected), .openBroadcast(attempt: 1)])
        #expect(h.machine.phase == .publishing(attempt: 1, feed: 77, verified: true, open: true))

        // The other order: connected first, the channel later.
        var g = Harness()
        _ = g.handle(.start)
        _ = g.handle(.published(attempt: 1, feed: 5))
        #expect(g.handle(.connected(attempt: 1, mismatch: nil)) == [.emit(.connected)])
        #expect(g.handle(.channelOpen(attempt: 1)) == [.openBroadcast(attempt: 1)])
    }

    @Test("a certificate that does not match Janus's answer ends the try: withdrawn and tried again, never connected")
    func certificateMismatch() {
        var h = Harness()
        _ = h.handle(.start)
        _ = h.handle(.published(attempt: 1, feed: 77))
        _ = h.handle(.channelOpen(attempt: 1))
        let effects = h.handle(.connected(attempt: 1, mismatch: "sha-256 AB:CD"))
        #expect(effects.first == .withdraw(attempt: 1))
        #expect(!effects.contains(.emit(.connected)) && !effects.contains(.openBroadcast(attempt: 1)))
        #expect(effects.lostReasons.first?.contains("does not match its answer (sha-256 AB:CD)") == true, "\(effects)")
    }

    @Test("hang-up: Janus ends the publication; withdrawn, said, and published again after the first delay")
    func hangUp() {
        var h = Harness()
        _ = h.handle(.start)
        _ = h.handle(.published(attempt: 1, feed: 77))
        _ = h.handle(.connected(attempt: 1, mismatch: nil))
        let ended = h.handle(.hungUp(attempt: 1, reason: "hangup: DTLS alert"), after: 5000)
        #expect(ended == [.withdraw(attempt: 1),
                          .emit(.lost(reason: "Janus ended our publication (hangup: DTLS alert)", retryIn: .seconds(2))),
                          .wake(at: h.now + 2000 * Self.ms)])
        #expect(h.tickAtWake(ended) == [.publish(attempt: 2)])
    }

    @Test("Janus lost or refusing: failures in a row back off 2, 4, 8, 10 s; frames flowing again start the count anew")
    func janusLostBacksOff() {
        var h = Harness()
        var effects = h.handle(.start)
        var delays: [Duration] = []
        for attempt in 1...5 {
            #expect(effects.last == .publish(attempt: attempt), "\(effects)")
            let failure: SFUPublication.Event = attempt % 2 == 1
                ? .lost(attempt: attempt, reason: "Janus at ws://127.0.0.1:8188/: connection refused")
                : .refused(attempt: attempt, reason: "Janus refused join: Unauthorized (error 433)")
            let failed = h.handle(failure, after: 10)
            delays += failed.retryDelays
            effects = h.tickAtWake(failed)
        }
        #expect(delays == [.seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10)])
        _ = h.handle(.published(attempt: 6, feed: 9))
        _ = h.handle(.connected(attempt: 6, mismatch: nil))
        #expect(h.machine.failures == 0)
        #expect(h.handle(.lost(attempt: 6, reason: "the connection to Janus closed")).retryDelays == [.seconds(2)])
    }

    @Test("room gone: a destroyed room is published again (the try makes it) after the first delay, whatever failed before")
    func roomDestroyed() {
        var h = Harness()
        _ = h.handle(.start)
        let refused = h.handle(.refused(attempt: 1, reason: "Janus refused create"))
        _ = h.tickAtWake(refused)
        _ = h.handle(.published(attempt: 2, feed: 3))
        let gone = h.handle(.roomDestroyed(attempt: 2), after: 100)
        #expect(gone.first == .withdraw(attempt: 2))
        #expect(gone.lostReasons == ["Janus destroyed room 1234"])
        #expect(gone.retryDelays == [.seconds(2)])
        #expect(h.tickAtWake(gone) == [.publish(attempt: 3)])
    }

    @Test("events of a withdrawn try are ignored: a late hang-up cannot end the next publication")
    func staleEvents() {
        var h = Harness()
        _ = h.handle(.start)
        let lost = h.handle(.lost(attempt: 1, reason: "timed out"))
        #expect(h.handle(.hungUp(attempt: 1, reason: "hangup")).isEmpty, "waiting: the old try's hang-up changes nothing")
        _ = h.tickAtWake(lost)
        #expect(h.handle(.hungUp(attempt: 1, reason: "hangup")).isEmpty)
        #expect(h.handle(.connected(attempt: 1, mismatch: nil)).isEmpty)
        #expect(h.handle(.published(attempt: 2, feed: 8)) == [.emit(.publishing(room: 1234, feed: 8, poseTransport: .sei))])
    }

    @Test("stop: the current try is withdrawn, and nothing after it publishes again")
    func stop() {
        var h = Harness()
        _ = h.handle(.start)
        _ = h.handle(.published(attempt: 1, feed: 1))
        #expect(h.handle(.stop) == [.withdraw(attempt: 1)])
        #expect(h.handle(.lost(attempt: 1, reason: "closed")).isEmpty)
        #expect(h.handle(.tick, after: 60_000).isEmpty && h.handle(.start).isEmpty)
        #expect(h.machine.phase == .stopped)

        var waiting = Harness()
        _ = waiting.handle(.start)
        let lost = waiting.handle(.lost(attempt: 1, reason: "closed"))
        #expect(waiting.handle(.stop).isEmpty, "nothing to withdraw while waiting")
        #expect(waiting.machine.handle(.tick, now: lost.wake ?? 0).isEmpty)
    }
}

extension [SFUPublication.Effect] {
    var wake: UInt64? {
        for case .wake(let at) in self { return at }
        return nil
    }

    var retryDelays: [Duration] {
        compactMap { if case .emit(.lost(_, let retryIn)) = $0 { retryIn } else { nil } }
    }

    var lostReasons: [String] {
        compactMap { if case .emit(.lost(let reason, _)) = $0 { reason } else { nil } }
    }
}
