@testable import Publisher
import Testing

/// Keyframe requests on a lossy link (`KeyframeThrottle`): one keyframe per spacing,
/// none lost, the rest merged.
@Suite("congestion control: keyframe requests")
struct KeyframeThrottleTests {
    static let ms: UInt64 = 1_000_000

    @Test("the first passes; one within the spacing is deferred to its end; later ones merge into it")
    func throttle() {
        let t = KeyframeThrottle(spacingNanos: 500 * Self.ms)
        #expect(t.request(nowNanos: 1000 * Self.ms) == .pass)
        #expect(t.request(nowNanos: 1100 * Self.ms) == .deferred(nanos: 400 * Self.ms))
        #expect(t.request(nowNanos: 1200 * Self.ms) == .merged)
        #expect(t.request(nowNanos: 1480 * Self.ms) == .merged)
        // The deferred request itself, its timer a few ms early, passes.
        #expect(t.request(nowNanos: 1495 * Self.ms) == .pass)
        #expect(t.request(nowNanos: 1600 * Self.ms) == .deferred(nanos: 395 * Self.ms))
        #expect(t.request(nowNanos: 1995 * Self.ms) == .pass)
        // Quiet for longer than the spacing: the next passes at once.
        #expect(t.request(nowNanos: 3000 * Self.ms) == .pass)
    }
}
