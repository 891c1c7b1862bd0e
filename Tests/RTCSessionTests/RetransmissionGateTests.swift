import RTCSession
import Testing

/// Which retransmissions leave (`RetransmissionGate`), on stepped time.
@Suite("retransmission gate: once per 100 ms per packet, within a budget")
struct RetransmissionGateTests {
    static let ms: Int64 = 1000

    @Test("the same packet asked again within 100 ms is refused, after it passes again; others are not held up")
    func repeats() {
        var gate = RetransmissionGate(budgetKbps: 1000)
        #expect(gate.decide(seq: 7, bytes: 1000, nowMicros: 0) == .pass)
        #expect(gate.decide(seq: 7, bytes: 1000, nowMicros: 20 * Self.ms) == .repeated)
        #expect(gate.decide(seq: 8, bytes: 1000, nowMicros: 20 * Self.ms) == .pass)
        #expect(gate.decide(seq: 7, bytes: 1000, nowMicros: 99 * Self.ms) == .repeated)
        #expect(gate.decide(seq: 7, bytes: 1000, nowMicros: 100 * Self.ms) == .pass)
        // A sequence number 512 later shares the ring slot: not taken for a repeat.
        #expect(gate.decide(seq: 7 &+ 512, bytes: 1000, nowMicros: 110 * Self.ms) == .pass)
        // Wrapping sequence numbers are just numbers.
        #expect(gate.decide(seq: 65535, bytes: 1000, nowMicros: 120 * Self.ms) == .pass)
        #expect(gate.decide(seq: 65535, bytes: 1000, nowMicros: 150 * Self.ms) == .repeated)
    }

    @Test("a burst takes the bucket (250 ms of the budget), then retransmissions pass at the budget's rate")
    func budget() {
        // 100 kbit/s: 25 000 bits in the bucket, 100 bits per ms.
        var gate = RetransmissionGate(budgetKbps: 100)
        var passed = 0
        for seq in 0..<10 where gate.decide(seq: UInt16(seq), bytes: 1000, nowMicros: 0) == .pass { passed += 1 }
        #expect(passed == 3)
        #expect(gate.decide(seq: 100, bytes: 1000, nowMicros: 10 * Self.ms) == .overBudget)
        // 8000 bits more after 80 ms (one was left over: 1000 bits).
        #expect(gate.decide(seq: 100, bytes: 1000, nowMicros: 70 * Self.ms) == .pass)
        // Over one second at 100 kbit/s: about 12.5 packets of 1000 bytes, plus the bucket.
        var t: Int64 = 100 * Self.ms, n = 0
        for seq in 200..<400 {
            t += 5 * Self.ms
            if gate.decide(seq: UInt16(seq), bytes: 1000, nowMicros: t) == .pass { n += 1 }
        }
        #expect((12...16).contains(n), "\(n) passed in a second at 100 kbit/s")
    }

    @Test("a refused packet does not count as sent: asked again within 100 ms, it may pass once the budget allows")
    func refusedIsNotSent() {
        var gate = RetransmissionGate(budgetKbps: 16)
        #expect(gate.decide(seq: 1, bytes: 1200, nowMicros: 0) == .pass)
        #expect(gate.decide(seq: 2, bytes: 1200, nowMicros: 0) == .overBudget)
        gate.setBudget(kbps: 1000)
        #expect(gate.decide(seq: 2, bytes: 1200, nowMicros: 50 * Self.ms) == .pass)
    }
}
