import Foundation
import Synchronization

/// A voice's level as a meter shows it: RMS of the last buffer in dBFS, smoothed so that
/// it falls at about 20 dB/s (a VU meter's release) and rises at once. Written on a
/// streaming thread, read from anywhere.
public final class VoiceLevel: Sendable {
    /// dBFS × 10, as an integer for the atomic; −1000 is silence.
    private let tenths = Atomic<Int>(-1000)
    private let lastNanos = Atomic<UInt64>(0)
    public static let floorDB = -100.0

    public init() {}

    /// The level now (dBFS, −100 for silence).
    public var decibels: Double { Double(tenths.load(ordering: .relaxed)) / 10 }

    /// Measures a buffer of samples taken at `nowNanos` (monotonic).
    public func measure(_ samples: UnsafeBufferPointer<Int16>, nowNanos: UInt64) {
        guard !samples.isEmpty else { return }
        let db = Self.decibels(of: samples)
        let previous = Double(tenths.load(ordering: .relaxed)) / 10
        let last = lastNanos.exchange(nowNanos, ordering: .relaxed)
        let elapsed = last == 0 ? 1 : Double(nowNanos &- last) / 1e9
        let fallen = previous - 20 * min(elapsed, 1)
        tenths.store(Int((max(db, fallen) * 10).rounded()), ordering: .relaxed)
    }

    /// The RMS of `samples` in dBFS (−100 for silence or none).
    public static func decibels(of samples: UnsafeBufferPointer<Int16>) -> Double {
        guard !samples.isEmpty else { return floorDB }
        var sum = 0.0
        for s in samples { let v = Double(s); sum += v * v }
        let rms = (sum / Double(samples.count)).squareRoot()
        return max(20 * log10(max(rms, 1e-5) / 32768), floorDB)
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
