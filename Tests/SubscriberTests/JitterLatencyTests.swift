import RTCSession
import Subscriber
import Testing

/// The jitter buffer's latency following retransmission (`JitterLatency`).
@Suite("subscriber: the jitter buffer's latency")
struct JitterLatencyTests {
    static let s: UInt64 = 1_000_000_000
    static func stats(lost: UInt64, late: UInt64 = 0, rttMs: Double = 0) -> JitterBufferStats {
        var st = JitterBufferStats()
        st.lost = lost; st.late = late; st.retransmissionRoundTripMs = rttMs
        return st
    }

    @Test("loss raises it to the retransmission round trip plus a margin, at least by half, up to 200 ms; 10 s clean bring it back")
    func follows() {
        var j = JitterLatency(configuration: .init(floorMs: 50))
        #expect(j.update(Self.stats(lost: 0), nowNanos: 0) == nil, "the first counters are the baseline")
        #expect(j.update(Self.stats(lost: 0), nowNanos: 1 * Self.s) == nil)
        #expect(j.update(Self.stats(lost: 3, rttMs: 60), nowNanos: 2 * Self.s) == 100)
        #expect(j.update(Self.stats(lost: 3, late: 2, rttMs: 60), nowNanos: 3 * Self.s) == 150, "late again: ×1.5")
        #expect(j.update(Self.stats(lost: 9, late: 2, rttMs: 60), nowNanos: 4 * Self.s) == 200, "the ceiling")
        #expect(j.update(Self.stats(lost: 9, late: 2), nowNanos: 10 * Self.s) == nil, "not calm for 10 s yet")
        var now = 14 * Self.s
        #expect(j.update(Self.stats(lost: 9, late: 2), nowNanos: now) == 185)
        for _ in 0..<60 { now += Self.s; _ = j.update(Self.stats(lost: 9, late: 2), nowNanos: now) }
        #expect(j.latencyMs == 50)
    }
}
