import Publisher
import Testing

/// The encoded size under congestion control (`ResolutionLadder`), on stepped time.
@Suite("congestion control: the resolution ladder")
struct ResolutionLadderTests {
    static let second: UInt64 = 1_000_000_000

    /// Feeds `kbps` every 250 ms from `from` for `seconds`; returns the sizes seen after each step.
    static func run(_ ladder: inout ResolutionLadder, kbps: Int, from: UInt64, seconds: Double) -> [(UInt64, Int, Int)] {
        var changes: [(UInt64, Int, Int)] = []
        var t = from
        while t < from + UInt64(seconds * 1e9) {
            if ladder.update(allowedKbps: kbps, nowNanos: t) { changes.append((t, ladder.width, ladder.height)) }
            t += second / 4
        }
        return changes
    }

    @Test("the steps a size allows: halves while within the divisor and 320×180")
    func divisors() {
        #expect(ResolutionLadder.Configuration(width: 640, height: 480, fps: 30).divisors == [1, 2])
        #expect(ResolutionLadder.Configuration(width: 1280, height: 720, fps: 30).divisors == [1, 2, 4])
        #expect(ResolutionLadder.Configuration(width: 1280, height: 720, fps: 30, maxDownscale: 2).divisors == [1, 2])
        #expect(ResolutionLadder.Configuration(width: 1280, height: 720, fps: 30, maxDownscale: 1).divisors == [1])
        #expect(ResolutionLadder.Configuration(width: 320, height: 240, fps: 30).divisors == [1])
        let odd = ResolutionLadder.Configuration(width: 1366, height: 768, fps: 30)
        #expect(odd.size(divisor: 2) == (682, 384))
        #expect(odd.size(divisor: 4) == (340, 192))
    }

    @Test("a rate too low for 640×480 steps down to 320×240 after a second, and no further")
    func stepsDown() {
        var ladder = ResolutionLadder(configuration: .init(width: 640, height: 480, fps: 30))
        #expect(Self.run(&ladder, kbps: 600, from: 0, seconds: 10).isEmpty)
        let changes = Self.run(&ladder, kbps: 200, from: 10 * Self.second, seconds: 30)
        #expect(changes.count == 1)
        #expect(changes.first.map { $0.0 - 10 * Self.second } == Self.second)
        #expect(ladder.width == 320 && ladder.height == 240)
        #expect(ladder.stepsDown == 1 && ladder.stepsUp == 0)
    }

    @Test("a short dip does not step; a rate in the band between the thresholds holds either size")
    func hysteresis() {
        var ladder = ResolutionLadder(configuration: .init(width: 640, height: 480, fps: 30))
        _ = Self.run(&ladder, kbps: 300, from: 0, seconds: 0.75)
        #expect(Self.run(&ladder, kbps: 800, from: Self.second, seconds: 5).isEmpty)
        #expect(Self.run(&ladder, kbps: 420, from: 6 * Self.second, seconds: 20).isEmpty)
        #expect(ladder.width == 640)
        _ = Self.run(&ladder, kbps: 300, from: 26 * Self.second, seconds: 2)
        #expect(ladder.width == 320)
        #expect(Self.run(&ladder, kbps: 420, from: 28 * Self.second, seconds: 20).isEmpty)
        #expect(ladder.width == 320)
    }

    @Test("up again after the up wait once the rate fits the larger size, not within the spacing of the last step")
    func stepsUp() {
        var ladder = ResolutionLadder(configuration: .init(width: 1280, height: 720, fps: 30))
        // Under 3 × 350 kbit/s for 1280×720 and 0.75 × 350 for 640×360: two steps down,
        // 4 s apart (the spacing).
        let down = Self.run(&ladder, kbps: 200, from: 0, seconds: 10)
        #expect(down.map(\.1) == [640, 320])
        #expect(down[1].0 - down[0].0 == 4 * Self.second)
        // 640×360 needs 490 × 0.75 = 368; 1280×720 needs 1470.
        let up = Self.run(&ladder, kbps: 1000, from: 10 * Self.second, seconds: 20)
        #expect(up.map(\.1) == [640])
        #expect(up.first.map { $0.0 - 10 * Self.second } == 3 * Self.second)
        let full = Self.run(&ladder, kbps: 2000, from: 30 * Self.second, seconds: 10)
        #expect(full.map(\.1) == [1280])
        #expect(ladder.stepsUp == 2)
    }

    @Test("a step up that does not fit doubles the next up wait; a size held for 10 s resets it")
    func failedUpBacksOff() {
        var ladder = ResolutionLadder(configuration: .init(width: 640, height: 480, fps: 30))
        var t: UInt64 = 0
        _ = Self.run(&ladder, kbps: 200, from: t, seconds: 2); t += 2 * Self.second
        #expect(ladder.width == 320)
        _ = Self.run(&ladder, kbps: 600, from: t, seconds: 5); t += 5 * Self.second
        #expect(ladder.width == 640)
        #expect(ladder.upWait == 3 * Self.second)
        // The larger size does not fit: down again within 10 s of the step up.
        _ = Self.run(&ladder, kbps: 250, from: t, seconds: 6); t += 6 * Self.second
        #expect(ladder.width == 320)
        #expect(ladder.upWait == 6 * Self.second)
        // Back up takes 6 s now, not 3.
        let up = Self.run(&ladder, kbps: 600, from: t, seconds: 10)
        #expect(up.first.map { $0.0 - t } == 6 * Self.second)
        t += 10 * Self.second
        _ = Self.run(&ladder, kbps: 600, from: t, seconds: 11)
        #expect(ladder.upWait == 3 * Self.second)
    }

    @Test("never scaled with maxDownscale 1; thresholds follow the frame rate")
    func offAndFrameRate() {
        var off = ResolutionLadder(configuration: .init(width: 640, height: 480, fps: 30, maxDownscale: 1))
        #expect(Self.run(&off, kbps: 150, from: 0, seconds: 20).isEmpty)
        // At 15 fps 640×480 needs half: 200 kbit/s is enough.
        var slow = ResolutionLadder(configuration: .init(width: 640, height: 480, fps: 15))
        #expect(Self.run(&slow, kbps: 200, from: 0, seconds: 20).isEmpty)
        #expect(Self.run(&slow, kbps: 160, from: 20 * Self.second, seconds: 2).count == 1)
    }
}
