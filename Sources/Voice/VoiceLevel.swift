import Foundation
import Synchronization

/// A voice's level as a meter shows it: RMS of the last buffer in dBFS, smoothed so that
/// it falls at about 20 dB/s (a VU meter's release) and rises at once. Written on a
/// streaming thread, read from anywhere.
public final class VoiceLevel: Sendable {
    /// dBFS × 10, as an integer for the atomic; −1000 is silence.
    private let tenths = Atomic<Int>(-1000)
    private let lastNanos = Atomic<UInt64>(0)
    /// The last buffer's own level (dBFS × 10), unsmoothed.
    private let lastTenths = Atomic<Int>(-1000)
    public static let floorDB = -100.0

    public init() {}

    /// The level now (dBFS, −100 for silence).
    public var decibels: Double { Double(tenths.load(ordering: .relaxed)) / 10 }

    /// The last buffer's RMS in dBFS, without the meter's fall (−100 for silence).
    public var lastBufferDecibels: Double { Double(lastTenths.load(ordering: .relaxed)) / 10 }

    /// Measures a buffer of samples taken at `nowNanos` (monotonic).
    public func measure(_ samples: UnsafeBufferPointer<Int16>, nowNanos: UInt64) {
        guard !samples.isEmpty else { return }
        var sum = 0.0
        for s in samples { let v = Double(s); sum += v * v }
        let rms = (sum / Double(samples.count)).squareRoot()
        let db = max(20 * log10(max(rms, 1e-5) / 32768), Self.floorDB)
        lastTenths.store(Int((db * 10).rounded()), ordering: .relaxed)
        let previous = Double(tenths.load(ordering: .relaxed)) / 10
        let last = lastNanos.exchange(nowNanos, ordering: .relaxed)
        let elapsed = last == 0 ? 1 : Double(nowNanos &- last) / 1e9
        let fallen = previous - 20 * min(elapsed, 1)
        tenths.store(Int((max(db, fallen) * 10).rounded()), ordering: .relaxed)
    }

    /// A ten-step bar for a status line: "▮▮▮▮▯▯▯▯▯▯" from −60 to 0 dBFS.
    public var bar: String {
        let steps = Int(((decibels + 60) / 6).rounded().clamped(0, 10))
        return String(repeating: "▮", count: steps) + String(repeating: "▯", count: 10 - steps)
    }
}

extension Double {
    func clamped(_ low: Double, _ high: Double) -> Double { Swift.min(Swift.max(self, low), high) }
}
