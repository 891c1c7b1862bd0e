import RTCSession
import Testing

/// The delay gradient's trendline (`DelayTrend`), on frames of five packets at 30 fps.
@Suite("the delay trend: a queue starting against jitter and a longer path")
struct DelayTrendTests {
    /// Feeds `frames` frames from `start`; `delay(i)` is frame i's extra one-way delay (ms)
    /// on top of a 30 ms path and 1 ms between its packets. Returns each frame's usage.
    static func run(_ trend: inout DelayTrend, frames: Range<Int>, delay: (Int) -> Double) -> [DelayTrend.Usage] {
        var usages: [DelayTrend.Usage] = []
        for i in frames {
            let send = Double(i) * 1000 / 30
            for k in 0..<5 {
                if let u = trend.add(sendMs: send, arrivalMs: send + 30 + delay(i) + Double(k)) { usages.append(u) }
            }
        }
        return usages
    }

    /// Deterministic jitter of ±`ms` (a fixed pseudo-random sequence).
    static func jitter(_ i: Int, _ ms: Double) -> Double {
        let x = UInt64(truncatingIfNeeded: i &* 2_654_435_761) % 1000
        return (Double(x) / 500 - 1) * ms
    }

    @Test("a flat path with ±4 ms of jitter is never overuse")
    func jitterIsNormal() {
        var trend = DelayTrend()
        let usages = Self.run(&trend, frames: 0..<600) { Self.jitter($0, 4) }
        #expect(usages.filter { $0 == .overusing }.count == 0, "overuse on jitter: trend \(trend.modifiedTrend), threshold \(trend.threshold)")
    }

    @Test("a link 10 % too slow (3 ms more each frame) reads overuse within half a second")
    func queueIsOveruse() throws {
        var trend = DelayTrend()
        _ = Self.run(&trend, frames: 0..<300) { Self.jitter($0, 2) }
        let usages = Self.run(&trend, frames: 300..<330) { i in Self.jitter(i, 2) + Double(i - 300) * 3.3 }
        let first = try #require(usages.firstIndex(of: .overusing), "no overuse in 1 s of a filling queue (trend \(trend.modifiedTrend))")
        #expect(first <= 15, "overuse after \(first) frames")
    }

    @Test("a path 40 ms longer at once is no overuse, before or after")
    func longerPathIsNormal() {
        var trend = DelayTrend()
        _ = Self.run(&trend, frames: 0..<300) { Self.jitter($0, 2) }
        let usages = Self.run(&trend, frames: 300..<600) { i in Self.jitter(i, 2) + 40 }
        #expect(usages.filter { $0 == .overusing }.count == 0, "a longer path read as overuse (trend \(trend.modifiedTrend))")
    }

    @Test("a queue draining reads underuse; a gap of seconds starts again without a false reading")
    func drainingAndGaps() {
        var trend = DelayTrend()
        _ = Self.run(&trend, frames: 0..<300) { _ in 0 }
        _ = Self.run(&trend, frames: 300..<330) { i in Double(i - 300) * 5 }
        let draining = Self.run(&trend, frames: 330..<360) { i in max(0, 150 - Double(i - 330) * 10) }
        #expect(draining.contains(.underusing))
        // Five seconds of nothing, then the path as before: no reading from the gap itself.
        let after = Self.run(&trend, frames: 510..<600) { _ in 0 }
        #expect(after.filter { $0 == .overusing }.count == 0)
    }

    @Test("reordered packets of an older frame and a wrapped clock are ignored")
    func reordering() {
        var trend = DelayTrend()
        _ = Self.run(&trend, frames: 0..<100) { _ in 0 }
        #expect(trend.add(sendMs: 10, arrivalMs: 5000) == nil, "an old frame's packet is ignored")
        let usages = Self.run(&trend, frames: 100..<200) { _ in 0 }
        #expect(usages.filter { $0 == .overusing }.count == 0)
    }
}
