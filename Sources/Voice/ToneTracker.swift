import Foundation

/// A tone starting or stopping in a stream, as `ToneTracker` found it.
public struct ToneChange: Sendable, Equatable {
    public var hertz: Double
    public var started: Bool
    /// When the first sample of the block that changed is played (wall clock).
    public var atNanos: UInt64
    /// The tone's level in that block (dBFS of its amplitude).
    public var levelDB: Double
    /// Of `atNanos`, how long the sink holds a sample before playing it (its latency).
    public var playDelayNanos: UInt64 = 0
    /// How late the block reached the sink for its play instant (0: in time).
    public var lateNanos: UInt64 = 0
}

extension ToneChange {
    /// The `tone` event's fields, as both executables print them.
    public var eventFields: [String: Any] {
        ["hertz": hertz, "started": started, "atNanos": atNanos, "levelDb": (levelDB * 10).rounded() / 10,
         "sinkLatencyMs": Double(playDelayNanos / 100_000) / 10, "lateMs": Double(lateNanos / 100_000) / 10]
    }

    /// The event in words.
    public var summary: String { "tone \(Int(hertz)) Hz \(started ? "started" : "stopped") (\(Int(levelDB)) dBFS)" }
}

/// Finds given tones in 48 kHz mono samples, block by block (5 ms, 240 samples:
/// 200 Hz apart bins, so 1, 2 and 3 kHz are told apart even when mixed), with the
/// Goertzel filter. A tone is on from the first block whose amplitude at its frequency is
/// at least `thresholdDB`, off from the first of two blocks in a row 6 dB below that.
/// Pure: no GStreamer (`ToneProbe` feeds it from a pad).
public struct ToneTracker: Sendable {
    public let frequencies: [Double]
    public let thresholdDB: Double
    public static let blockSize = 240
    private var on: [Bool]
    private var quietBlocks: [Int]
    /// Samples carried over to the next call (less than one block), and the play
    /// instant of the first of them.
    private var pending: [Int16] = []
    private var pendingStart: UInt64 = 0

    public init(frequencies: [Double], thresholdDB: Double = -30) {
        self.frequencies = frequencies
        self.thresholdDB = thresholdDB
        on = Array(repeating: false, count: frequencies.count)
        quietBlocks = Array(repeating: 0, count: frequencies.count)
    }

    /// Feeds samples whose first is played at `startNanos`; returns the changes found.
    public mutating func feed(_ samples: UnsafeBufferPointer<Int16>, startNanos: UInt64) -> [ToneChange] {
        var changes: [ToneChange] = []
        // Anchored on the newest buffer's instant: the carried-over samples come just before it.
        pendingStart = startNanos &- UInt64(pending.count) * 1_000_000_000 / UInt64(VoiceFormat.rate)
        pending.append(contentsOf: samples)
        var offset = 0
        while pending.count - offset >= Self.blockSize {
            let at = pendingStart &+ UInt64(offset) * 1_000_000_000 / UInt64(VoiceFormat.rate)
            pending.withUnsafeBufferPointer { all in
                let block = UnsafeBufferPointer(rebasing: all[offset..<(offset + Self.blockSize)])
                for (i, hz) in frequencies.enumerated() {
                    let level = Self.levelDB(block, hertz: hz)
                    if level >= thresholdDB {
                        quietBlocks[i] = 0
                        if !on[i] { on[i] = true; changes.append(ToneChange(hertz: hz, started: true, atNanos: at, levelDB: level)) }
                    } else if on[i], level < thresholdDB - 6 {
                        quietBlocks[i] += 1
                        if quietBlocks[i] == 2 {
                            on[i] = false
                            quietBlocks[i] = 0
                            let firstQuiet = at &- UInt64(Self.blockSize) * 1_000_000_000 / UInt64(VoiceFormat.rate)
                            changes.append(ToneChange(hertz: hz, started: false, atNanos: firstQuiet, levelDB: level))
                        }
                    }
                }
            }
            offset += Self.blockSize
        }
        pending.removeFirst(offset)
        pendingStart &+= UInt64(offset) * 1_000_000_000 / UInt64(VoiceFormat.rate)
        return changes
    }

    /// Whether each tone is on now.
    public var active: [Double: Bool] { Dictionary(uniqueKeysWithValues: zip(frequencies, on)) }

    /// The amplitude of `hertz` in the block, in dBFS (Goertzel).
    public static func levelDB(_ block: UnsafeBufferPointer<Int16>, hertz: Double) -> Double {
        let w = 2 * Double.pi * hertz / Double(VoiceFormat.rate)
        let coefficient = 2 * cos(w)
        var s1 = 0.0, s2 = 0.0
        for sample in block {
            let s0 = Double(sample) + coefficient * s1 - s2
            s2 = s1; s1 = s0
        }
        let power = max(s1 * s1 + s2 * s2 - coefficient * s1 * s2, 0)
        let amplitude = 2 * power.squareRoot() / Double(block.count)
        return 20 * log10(max(amplitude, 1e-3) / 32768)
    }
}
