import Foundation
import NodeOutput
import PoseCastKit
import Synchronization
import Voice

/// One flash frame and the tone burst captured with it, as the expert got them.
struct AVSyncPair: Sendable {
    /// The whole second (wall clock) both were captured at.
    var second: UInt64
    /// Capture → shown for the frame, capture → played for the tone's onset (ms).
    var videoMs: Double, audioMs: Double
    /// Audio after video (ms): positive, the sound comes late.
    var offsetMs: Double { audioMs - videoMs }
}

/// Pairs the publisher's flash frames (`--flash`) with its tone bursts (`--microphone
/// bursts=HZ`), both captured at each whole second of the wall clock: the frame's capture
/// instant is its pose's; the burst's onset is the whole second itself.
final class AVSyncMeter: Sendable {
    let hertz: Double
    private let report: @Sendable (AVSyncPair) -> Void
    private let pending = Mutex((flashes: [UInt64: Double](), tones: [UInt64: Double]()))

    init(hertz: Double, report: @escaping @Sendable (AVSyncPair) -> Void) { self.hertz = hertz; self.report = report }

    func flash(captureNanos: UInt64, shownNanos: UInt64) {
        guard shownNanos > captureNanos else { return }
        let second = captureNanos / 1_000_000_000
        // A flash lasts one frame; a repeat within the second (none expected) keeps the first.
        pair(second: second) { p in if p.flashes[second] == nil { p.flashes[second] = Double(shownNanos - captureNanos) / 1e6 } }
    }

    func tone(_ change: ToneChange) {
        guard change.started, abs(change.hertz - hertz) < 1 else { return }
        let second = change.atNanos / 1_000_000_000
        pair(second: second) { p in p.tones[second] = Double(change.atNanos - second * 1_000_000_000) / 1e6 }
    }

    private func pair(second: UInt64, _ record: (inout (flashes: [UInt64: Double], tones: [UInt64: Double])) -> Void) {
        let matched = pending.withLock { p -> AVSyncPair? in
            record(&p)
            // Forget what can no longer pair (older than 3 s).
            p.flashes = p.flashes.filter { $0.key + 3 >= second }
            p.tones = p.tones.filter { $0.key + 3 >= second }
            guard let video = p.flashes[second], let audio = p.tones[second] else { return nil }
            p.flashes[second] = nil; p.tones[second] = nil
            return AVSyncPair(second: second, videoMs: video, audioMs: audio)
        }
        if let matched { report(matched) }
    }
}

extension SubscriberApp {
    static func avSyncEvent(_ pair: AVSyncPair, out: EventOutput) {
        func r(_ v: Double) -> Double { (v * 10).rounded() / 10 }
        out.event(.avSync, ["second": pair.second, "videoMs": r(pair.videoMs), "audioMs": r(pair.audioMs), "offsetMs": r(pair.offsetMs)],
                  human: String(format: "A/V: video %.0f ms, audio %.0f ms, audio %@ by %.0f ms", pair.videoMs, pair.audioMs,
                                pair.offsetMs >= 0 ? "late" : "early", abs(pair.offsetMs)))
    }

    static func toneEvent(_ change: ToneChange, out: EventOutput) {
        out.event(.tone, change.eventFields, human: change.summary)
    }
}
