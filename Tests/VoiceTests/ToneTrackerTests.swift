import Foundation
import Testing
import Voice

/// The tone detector and level meter on synthetic samples (no GStreamer).
@Suite("tones and levels")
struct ToneTrackerTests {
    static let rate = 48_000.0

    /// `seconds` of the sum of sines (hertz, dBFS), starting at sample `start` (silence before).
    static func signal(_ tones: [(Double, Double)], seconds: Double, start: Int = 0, stop: Int? = nil) -> [Int16] {
        let n = Int(seconds * rate)
        return (0..<n).map { i in
            guard i >= start, i < (stop ?? n) else { return 0 }
            let v = tones.reduce(0.0) { sum, t in sum + pow(10, t.1 / 20) * 32767 * sin(2 * .pi * t.0 * Double(i) / rate) }
            return Int16(max(min(v, 32767), -32768))
        }
    }

    static func feed(_ tracker: inout ToneTracker, _ samples: [Int16], chunk: Int, startNanos: UInt64 = 0) -> [ToneChange] {
        var changes: [ToneChange] = []
        var i = 0
        while i < samples.count {
            let end = min(i + chunk, samples.count)
            let at = startNanos + UInt64(Double(i) / rate * 1e9)
            changes += samples[i..<end].withUnsafeBufferPointer { tracker.feed($0, startNanos: at) }
            i = end
        }
        return changes
    }

    @Test("a 1 kHz burst is found where it starts and stops, within a 5 ms block, at its level", arguments: [240, 480, 333, 1000])
    func burst(chunk: Int) {
        var tracker = ToneTracker(frequencies: [1000, 2000])
        let samples = Self.signal([(1000, -12)], seconds: 1, start: 4800, stop: 9600)   // 100 ms … 200 ms
        let changes = Self.feed(&tracker, samples, chunk: chunk)
        let thousand = changes.filter { $0.hertz == 1000 }
        #expect(changes.allSatisfy { $0.hertz == 1000 }, "no 2 kHz in a 1 kHz tone: \(changes)")
        #expect(thousand.count == 2, "\(thousand)")
        guard thousand.count == 2 else { return }
        let startMs = Double(thousand[0].atNanos) / 1e6, stopMs = Double(thousand[1].atNanos) / 1e6
        #expect(thousand[0].started && !thousand[1].started)
        #expect(abs(startMs - 100) <= 5, "start found at \(startMs) ms (true 100 ms)")
        #expect(abs(stopMs - 200) <= 5, "stop found at \(stopMs) ms (true 200 ms)")
        #expect(abs(thousand[0].levelDB - -12) <= 2, "level \(thousand[0].levelDB) dBFS (true −12)")
    }

    @Test("mixed tones 1, 2 and 3 kHz are told apart; a quiet one stays below the threshold")
    func mixed() {
        var tracker = ToneTracker(frequencies: [1000, 2000, 3000, 4000])
        let samples = Self.signal([(2000, -14), (3000, -14), (4000, -50)], seconds: 0.5)
        let started = Set(Self.feed(&tracker, samples, chunk: 480).filter(\.started).map(\.hertz))
        #expect(started == [2000, 3000], "\(started)")
        #expect(tracker.active == [1000: false, 2000: true, 3000: true, 4000: false])
    }

    @Test("the level meter: silence at the floor, a full-scale sine at −3 dBFS, and it falls at 20 dB/s")
    func level() {
        let level = VoiceLevel()
        let silence = [Int16](repeating: 0, count: 480)
        silence.withUnsafeBufferPointer { level.measure($0, nowNanos: 1) }
        #expect(level.decibels == VoiceLevel.floorDB)
        let loud = Self.signal([(1000, 0)], seconds: 0.01)
        loud.withUnsafeBufferPointer { level.measure($0, nowNanos: 2) }
        #expect(abs(level.decibels - -3) <= 0.2, "\(level.decibels)")
        silence.withUnsafeBufferPointer { level.measure($0, nowNanos: 500_000_002) }
        #expect(abs(level.decibels - -13) <= 0.2, "half a second later: \(level.decibels)")
        #expect(level.bar.count == 10)
    }
}

/// The voice options as the executables parse them.
@Suite("voice options")
struct VoiceOptionsTests {
    @Test("microphone and speaker specs parse, and say what they expect when they do not")
    func specs() throws {
        #expect(try MicrophoneSpec(parsing: "system") == .system)
        #expect(try MicrophoneSpec(parsing: "none") == MicrophoneSpec.none)
        #expect(try MicrophoneSpec(parsing: "tone") == .tone(hertz: 1000))
        #expect(try MicrophoneSpec(parsing: "bursts=2000") == .bursts(hertz: 2000))
        #expect(try MicrophoneSpec(parsing: "device=alsa_input.usb") == .device("alsa_input.usb"))
        #expect(try MicrophoneSpec(parsing: "wav=/tmp/a.wav") == .wav(path: "/tmp/a.wav"))
        #expect(try SpeakerSpec(parsing: "discard") == .discard)
        for bad in ["tone=20", "tone=x", "device=", "wav", "loud"] {
            #expect(throws: VoiceError.self, "microphone \(bad)") { try MicrophoneSpec(parsing: bad) }
        }
        #expect(throws: VoiceError.self) { try SpeakerSpec(parsing: "tone") }
        let options = try VoiceOptions(microphone: "tone=1000", speaker: "discard", echoCancellation: "auto", detectTones: "1000,2000")
        #expect(options.detectTones == [1000, 2000])
        #expect(throws: VoiceError.self) { try VoiceOptions(microphone: "system", speaker: "system", echoCancellation: "maybe", detectTones: nil) }
        #expect(throws: VoiceError.self) { try VoiceOptions(microphone: "system", speaker: "system", echoCancellation: "on", detectTones: "1000,abc") }
    }

    @Test("echo cancellation is on by itself only with a real microphone and a real speaker")
    func echoDefault() {
        var options = VoiceOptions()
        #expect(options.cancelsEcho(microphone: .system, speaker: .system))
        #expect(options.cancelsEcho(microphone: .device("m"), speaker: .device("s")))
        #expect(!options.cancelsEcho(microphone: .tone(hertz: 1000), speaker: .system))
        #expect(!options.cancelsEcho(microphone: .system, speaker: .discard))
        #expect(!options.cancelsEcho(microphone: .system, speaker: nil))
        options.echoCancellation = true
        #expect(options.cancelsEcho(microphone: .tone(hertz: 1000), speaker: .discard))
        options.echoCancellation = false
        #expect(!options.cancelsEcho(microphone: .system, speaker: .system))
    }
}
