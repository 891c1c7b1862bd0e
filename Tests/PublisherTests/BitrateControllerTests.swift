import Publisher
import RTCSession
import Testing

/// The loss-based bandwidth estimate (`BitrateController`), on stepped time.
@Suite("congestion control: the bitrate controller")
struct BitrateControllerTests {
    static let ms: UInt64 = 1_000_000
    static func controller(start: Int? = nil) -> BitrateController {
        BitrateController(configuration: .init(ceilingKbps: 2000, floorKbps: 150), startKbps: start)
    }
    /// An interval of `seconds` at `kbps` in 1000-byte packets, `loss` of them NACKed.
    static func interval(kbps: Double, seconds: Double, loss: Double) -> FeedbackInterval {
        let bytes = kbps * 1000 / 8 * seconds
        let packets = UInt64(bytes / 1000)
        return FeedbackInterval(sent: packets, bytes: UInt64(bytes), nacked: Int(Double(packets) * loss))
    }

    @Test("heavy loss cuts at once to what got through, less 5 %")
    func heavyLoss() {
        var c = Self.controller()
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        // 2 Mbit/s into a 600 kbit/s link: 70 % lost.
        let interval = Self.interval(kbps: 2000, seconds: 0.25, loss: 0.7)
        let kbps = c.update(interval, nowNanos: 250 * Self.ms)
        let loss = Double(interval.nacked) / Double(interval.sent)
        #expect(c.lastLoss == loss)
        let delivered = Double(interval.bytes) * 8 * (1 - loss) / 0.25 / 1000
        #expect(abs(Double(kbps) - 0.95 * delivered) <= 1, "\(kbps) against \(0.95 * delivered)")
        #expect((500...650).contains(kbps))
    }

    @Test("one cut per spacing while the encoder slows down")
    func spacing() {
        var c = Self.controller()
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        let first = c.update(Self.interval(kbps: 2000, seconds: 0.25, loss: 0.5), nowNanos: 250 * Self.ms)
        let second = c.update(Self.interval(kbps: 2000, seconds: 0.25, loss: 0.5), nowNanos: 500 * Self.ms)
        #expect(second == first)
        let third = c.update(Self.interval(kbps: 1000, seconds: 1, loss: 0.5), nowNanos: 1500 * Self.ms)
        #expect(third < first)
    }

    @Test("a clean link: up 10 % a second, to the ceiling and no further")
    func growth() {
        var c = Self.controller(start: 600)
        var now: UInt64 = 0
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: now)
        for _ in 0..<4 {
            now += 250 * Self.ms
            c.update(Self.interval(kbps: 600, seconds: 0.25, loss: 0), nowNanos: now)
        }
        #expect(abs(c.estimateKbps - 600 * 1.025 * 1.025 * 1.025 * 1.025) < 1)
        for _ in 0..<200 {
            now += 250 * Self.ms
            c.update(Self.interval(kbps: c.estimateKbps, seconds: 0.25, loss: 0), nowNanos: now)
        }
        #expect(c.estimateKbps == 2000)
    }

    @Test("a little loss holds; too few packets wait; never below the floor")
    func holdWaitFloor() {
        var c = Self.controller(start: 800)
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        #expect(c.update(FeedbackInterval(sent: 100, bytes: 100_000, nacked: 2), nowNanos: 250 * Self.ms) == 800)
        #expect(c.update(FeedbackInterval(sent: 5, bytes: 5000, nacked: 5), nowNanos: 500 * Self.ms) == 800)
        var now = 500 * Self.ms
        for _ in 0..<20 {
            now += Self.ms * 1000
            c.update(FeedbackInterval(sent: 100, bytes: 1000, nacked: 90), nowNanos: now)
        }
        #expect(c.estimateKbps == 150)
    }
}
