import RTCSession
import Subscriber
import Testing

/// The jitter buffer's latency following retransmission (`JitterLatency`).
@Suite("subscriber: the jitter buffer's latency")
struct JitterLatencyTests {
    static let s: UInt64 = 1_000_000_000
    static func stats(lost: UInt64, late: UInt64 = 0, rttMs: Double = 0, asked: UInt64 = 0) -> JitterBufferStats {
        var st = JitterBufferStats()
        st.lost = lost; st.late = late; st.retransmissionRoundTripMs = rttMs; st.retransmissionsRequested = asked
        return st
    }

    @Test("loss raises it to the retransmission round trip plus a margin, at least by half, up to three round trips plus the margin; 10 s clean bring it back")
    func follows() {
        var j = JitterLatency(configuration: .init(floorMs: 50))
        #expect(j.update(Self.stats(lost: 0), nowNanos: 0) == nil, "the first counters are the baseline")
        #expect(j.update(Self.stats(lost: 0), nowNanos: 1 * Self.s) == nil)
        #expect(j.update(Self.stats(lost: 3, rttMs: 60), nowNanos: 2 * Self.s) == 100)
        #expect(j.update(Self.stats(lost: 3, late: 2, rttMs: 60), nowNanos: 3 * Self.s) == 150, "late again: ×1.5")
        #expect(j.update(Self.stats(lost: 9, late: 2, rttMs: 60), nowNanos: 4 * Self.s) == 220, "the ceiling: 3 × 60 + 40")
        #expect(j.update(Self.stats(lost: 9, late: 2, rttMs: 60), nowNanos: 10 * Self.s) == nil, "not calm for 10 s yet")
        var now = 14 * Self.s
        #expect(j.update(Self.stats(lost: 9, late: 2, rttMs: 60), nowNanos: now) == 203)
        for _ in 0..<60 { now += Self.s; _ = j.update(Self.stats(lost: 9, late: 2, rttMs: 60), nowNanos: now) }
        #expect(j.latencyMs == 50)
    }

    @Test("on a long path the ceiling is three round trips plus the margin, so a retransmission lost in turn can be asked for again; never above the maximum")
    func longPath() {
        var j = JitterLatency(configuration: .init(floorMs: 50))
        _ = j.update(Self.stats(lost: 0), nowNanos: 0)
        // A 200 ms path: 202–223 ms retransmission round trips.
        #expect(j.update(Self.stats(lost: 1, rttMs: 210), nowNanos: 1 * Self.s) == 250, "the round trip plus 40 ms at once")
        #expect(j.update(Self.stats(lost: 2, rttMs: 215), nowNanos: 2 * Self.s) == 375, "×1.5")
        #expect(j.update(Self.stats(lost: 3, rttMs: 220), nowNanos: 3 * Self.s) == 563, "×1.5")
        #expect(j.update(Self.stats(lost: 4, rttMs: 220), nowNanos: 4 * Self.s) == 700, "3 × 220 + 40")
        #expect(j.update(Self.stats(lost: 5, rttMs: 220), nowNanos: 5 * Self.s) == nil)
        // A 600 ms round trip would want 1240 ms: the maximum holds.
        var far = JitterLatency(configuration: .init(floorMs: 50))
        _ = far.update(Self.stats(lost: 0), nowNanos: 0)
        #expect(far.update(Self.stats(lost: 1, rttMs: 600), nowNanos: 1 * Self.s) == 640)
        #expect(far.update(Self.stats(lost: 2, rttMs: 600), nowNanos: 2 * Self.s) == 960)
        #expect(far.update(Self.stats(lost: 3, rttMs: 600), nowNanos: 3 * Self.s) == 1000)
        var capped = JitterLatency.Configuration(floorMs: 50)
        capped.maximumMs = 300
        #expect(JitterLatency(configuration: capped).ceilingMs(Self.stats(lost: 0, rttMs: 600)) == 300)
    }

    @Test("while retransmissions repair every loss it neither comes down nor stays under a round trip; 10 s without a request bring it down")
    func heldWhileRepairing() {
        var j = JitterLatency(configuration: .init(floorMs: 50))
        _ = j.update(Self.stats(lost: 0), nowNanos: 0)
        #expect(j.update(Self.stats(lost: 1, rttMs: 205, asked: 2), nowNanos: 1 * Self.s) == 245)
        #expect(j.update(Self.stats(lost: 2, rttMs: 205, asked: 4), nowNanos: 2 * Self.s) == 368)
        #expect(j.update(Self.stats(lost: 3, rttMs: 205, asked: 6), nowNanos: 3 * Self.s) == 552, "×1.5")
        #expect(j.update(Self.stats(lost: 4, rttMs: 205, asked: 8), nowNanos: 4 * Self.s) == 655, "3 × 205 + 40")
        // 30 s of 1 % loss that retransmission repairs: nothing lost, a request every second.
        var asked: UInt64 = 8, now = 4 * Self.s
        for _ in 0..<30 {
            asked += 2; now += Self.s
            #expect(j.update(Self.stats(lost: 4, rttMs: 205, asked: asked), nowNanos: now) == nil)
        }
        #expect(j.latencyMs == 655, "without loss for 30 s but repairing all along: held")
        for _ in 0..<9 { now += Self.s; _ = j.update(Self.stats(lost: 4, rttMs: 205, asked: asked), nowNanos: now) }
        #expect(j.latencyMs == 655, "9 s without a request: not yet")
        now += 2 * Self.s
        #expect(j.update(Self.stats(lost: 4, rttMs: 205, asked: asked), nowNanos: now).map { $0 < 655 } == true)
        // A repair seen below a round trip (from a low start) raises it to one at once.
        var low = JitterLatency(configuration: .init(floorMs: 50))
        _ = low.update(Self.stats(lost: 0), nowNanos: 0)
        #expect(low.update(Self.stats(lost: 0, rttMs: 120, asked: 1), nowNanos: 1 * Self.s) == 160)
    }

    @Test("on a path not known yet it starts at 300 ms and holds; the publisher's echo brings it to three round trips plus 40 ms, the floor on a short path")
    func unknownPath() {
        var c = JitterLatency.Configuration(floorMs: 50)
        c.unknownPathMs = 300
        // An 80 ms path each way: the echo says 165 ms.
        var far = JitterLatency(configuration: c)
        #expect(far.latencyMs == 300, "where a session starts")
        #expect(far.update(Self.stats(lost: 0), nowNanos: 0) == nil)
        #expect(far.update(Self.stats(lost: 0), nowNanos: 1 * Self.s) == nil, "held, not decaying from the start")
        #expect(far.ceilingMs(Self.stats(lost: 0)) == 300, "no round trip yet: the start is the ceiling")
        #expect(far.notePathRoundTrip(165, nowNanos: 2 * Self.s) == 535)
        #expect(far.notePathRoundTrip(170, nowNanos: 3 * Self.s) == nil, "only the first echo ends the start")
        #expect(far.ceilingMs(Self.stats(lost: 0)) == 550, "three echoed round trips plus 40 ms")
        #expect(far.update(Self.stats(lost: 2), nowNanos: 4 * Self.s) == 550, "a loss: ×1.5, within three round trips")
        // Loopback: the first echo takes it to the floor at once.
        var near = JitterLatency(configuration: c)
        _ = near.update(Self.stats(lost: 0), nowNanos: 0)
        #expect(near.notePathRoundTrip(0.8, nowNanos: 1 * Self.s) == 50)
        // No echo ever (a publisher that does not answer): held for 10 s, then down.
        var silent = JitterLatency(configuration: c)
        _ = silent.update(Self.stats(lost: 0), nowNanos: 5 * Self.s)
        #expect(silent.update(Self.stats(lost: 0), nowNanos: 14 * Self.s) == nil)
        #expect(silent.update(Self.stats(lost: 0), nowNanos: 16 * Self.s) == 275)
        // Trouble before the echo: the echo does not take it down.
        var early = JitterLatency(configuration: c)
        _ = early.update(Self.stats(lost: 0), nowNanos: 0)
        #expect(early.update(Self.stats(lost: 1, rttMs: 170), nowNanos: 1 * Self.s) == 450, "×1.5, within three retransmission round trips")
        #expect(early.notePathRoundTrip(170, nowNanos: 2 * Self.s) == nil)
        #expect(early.latencyMs == 450)
        // Nonsense from a publisher changes nothing.
        var odd = JitterLatency(configuration: c)
        #expect(odd.notePathRoundTrip(-5, nowNanos: 0) == nil && odd.notePathRoundTrip(.nan, nowNanos: 0) == nil)
        #expect(odd.pathRoundTripMs == nil && odd.latencyMs == 300)
    }
}
