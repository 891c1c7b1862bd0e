import Testing
import Foundation
import Synchronization
import CGStreamer
import CGstShim
import RTCSession
import TestSupport
import Voice

/// Echo cancellation measured in a room simulated inside one live pipeline:
///
///     far voice → caps → webrtcechoprobe → tee → queue → fakesink (the speaker, sync)
///                                           └→ queue (+ latency + delay) → volume (echo gain) ┐
///     near end (room noise or a second talker) → caps → queue ──────────────────────────────→ audiomixer
///     audiomixer → caps → webrtcdsp → fakesink (sync)
///
/// The room branch's running times are moved on by the pipeline's latency (fixed, so the
/// speaker plays each sample that much after its running time) plus the echo's delay: a
/// sample is heard in the microphone `delay` after the speaker played it, as a live
/// microphone would timestamp it. ERLE is 10·log10 of the power going into the processor
/// over the power coming out, after the canceller has had `convergence` to adapt.
/// Serialized: seven real-time rooms at once took CPU from the other suites' real-time
/// pipelines (a focus test missed its threshold by 0.7 % beside them).
@Suite("Echo cancellation (webrtcdsp)", .serialized, .tags(.realtime))
struct EchoCancellationTests {
    @Test("the standard settings cancel a delayed echo of a far voice by 20 dB or more", arguments: [10, 30, 45])
    func cancelsEcho(delayMs: Int) async throws {
        let result = try await EchoRoom(delayMs: delayMs, processing: .standard).run()
        print("echo delay \(delayMs) ms, standard: \(result)")
        #expect(result.microphoneDB > -40, "the echo reaches the microphone")
        #expect(result.erle >= 20, "ERLE \(result.erle) dB")
    }

    /// The harness is not trivially silent: without the canceller the echo goes through.
    @Test("without the canceller the echo goes through", arguments: [Baseline.bypass, .noiseSuppressionOnly])
    func baseline(_ baseline: Baseline) async throws {
        let result = try await EchoRoom(delayMs: 30, processing: baseline.settings).run()
        print("echo delay 30 ms, \(baseline): \(result)")
        #expect(result.microphoneDB > -40, "the echo reaches the microphone")
        #expect(result.erle < 6, "ERLE \(result.erle) dB")
    }

    /// Double talk: a second voice in the room, as loud as the echo, while the far end
    /// talks. The canceller must let it through (what it removes of a voice with no echo
    /// at all, its noise suppression included, was 4.7 dB when this was written).
    @Test("a near-end talker still gets through while the far end talks")
    func doubleTalk() async throws {
        let result = try await EchoRoom(delayMs: 30, processing: .standard, nearTalker: true).run()
        let passed = try #require(result.nearPassDB)
        print("double talk, echo delay 30 ms, standard: \(result)")
        #expect(passed > -10, "near-end voice after processing \(passed) dB relative to before")
    }

    @Test("the processor takes the settings and names its probe")
    func processorProperties() throws {
        try EchoCancellation.requireAvailable()
        let dsp = try EchoCancellation.standard.makeProcessor(probeName: "settings-probe", name: "settings-dsp")
        #expect(dsp.int("delay-agnostic") == 0)
        #expect(dsp.int("gain-control") == 0)
        #expect(dsp.int("echo-cancel") == 1)
        #expect(dsp.int("echo-suppression-level") == 1)   // moderate
        let probe = pcg_object_get_string(dsp.object, "probe")
        defer { g_free(probe) }
        #expect(probe.map { String(cString: $0) } == "settings-probe")
    }

    enum Baseline: String, CustomStringConvertible, CaseIterable {
        /// webrtcdsp with everything off.
        case bypass
        /// The standard settings without the canceller: noise suppression alone.
        case noiseSuppressionOnly
        var settings: EchoCancellation {
            switch self {
            case .bypass: .bypass
            case .noiseSuppressionOnly: { var s = EchoCancellation.standard; s.echoCancel = false; return s }()
            }
        }
        var description: String { rawValue }
    }
}

/// What one run of the room measured (levels in dBFS over the measuring window).
struct EchoMeasurement: CustomStringConvertible {
    var microphoneDB: Double
    var processedDB: Double
    var erle: Double { microphoneDB - processedDB }
    /// The near-end talker's level before the room mixes the echo in.
    var nearDB: Double?
    /// Processed over near-end talker: how much of the near voice is left.
    var nearPassDB: Double? { nearDB.map { processedDB - $0 } }

    var description: String {
        var text = String(format: "microphone %.1f dBFS, processed %.1f dBFS, ERLE %.1f dB", microphoneDB, processedDB, erle)
        if let nearDB, let nearPassDB {
            text += String(format: "; near talker %.1f dBFS, after processing %+.1f dB", nearDB, nearPassDB)
        }
        return text
    }
}

/// One simulated room (see `EchoCancellationTests`).
struct EchoRoom {
    var delayMs: Int
    var processing: EchoCancellation
    var nearTalker = false
    /// The far voice comes back at half its amplitude (−6 dB), a loud echo.
    var echoGain = 0.5
    /// The pipeline's latency (fixed; more than its elements need, 40 ms).
    var latencyMs = 50
    var convergence = 3.0
    var window = 5.0

    private static let serial = Atomic<Int>(0)

    func run() async throws -> EchoMeasurement {
        try EchoCancellation.requireAvailable()
        let id = Self.serial.add(1, ordering: .relaxed).oldValue
        let rate = Double(VoiceFormat.rate)
        let skip = Int(convergence * rate), end = Int((convergence + window) * rate)
        let pipeline = try Pipeline(name: "echo-room-\(id)")
        let probeName = "echo-room-\(id)-probe"

        func make(_ factory: String, _ name: String, _ properties: [(String, String)] = []) throws -> Element {
            let element = try ElementFactory.make(factory, name: "echo-room-\(id)-\(name)")
            for (property, value) in properties { try element.setChecked(property, value) }
            return element
        }
        func caps(_ name: String) throws -> Element { try make("capsfilter", name, [("caps", VoiceFormat.caps)]) }
        func liveSource(_ name: String, _ properties: [(String, String)]) throws -> Element {
            try make("audiotestsrc", name, [("is-live", "true"), ("samplesperbuffer", "480")] + properties)
        }

        // The far end: a voice, played and heard back.
        let farSource = try liveSource("far", [("wave", "silence")])
        let farCaps = try caps("farcaps")
        let echoProbe = try EchoCancellation.makeProbe(name: probeName)
        let tee = try make("tee", "tee")
        let speakerQueue = try make("queue", "speakerqueue")
        let speaker = try make("fakesink", "speaker", [("sync", "true")])
        let roomQueue = try make("queue", "room", [("max-size-time", "2000000000"), ("max-size-buffers", "0"), ("max-size-bytes", "0")])
        let echoVolume = try make("volume", "echogain", [("volume", String(echoGain))])
        // The near end: a quiet room (−65 dBFS of hiss), or a second voice as loud as the echo.
        let nearSource = nearTalker ? try liveSource("near", [("wave", "silence")])
            : try liveSource("near", [("wave", "white-noise"), ("volume", "0.001")])
        let nearCaps = try caps("nearcaps")
        let nearQueue = try make("queue", "nearqueue")
        let mixer = try make("audiomixer", "mixer")
        let microphoneCaps = try caps("miccaps")
        let processor = try processing.makeProcessor(probeName: probeName, name: "echo-room-\(id)-dsp")
        let output = try make("fakesink", "out", [("sync", "true")])

        pipeline.add(farSource, farCaps, echoProbe, tee, speakerQueue, speaker, roomQueue, echoVolume,
                     nearSource, nearCaps, nearQueue, mixer, microphoneCaps, processor, output)
        try pipeline.link([farSource, farCaps, echoProbe, tee, speakerQueue, speaker])
        try pipeline.link([tee, roomQueue, echoVolume, mixer])
        try pipeline.link([nearSource, nearCaps, nearQueue, mixer])
        try pipeline.link([mixer, microphoneCaps, processor, output])

        gst_pipeline_set_latency(gcast(pipeline.element.raw, to: GstPipeline.self), GstClockTime(latencyMs) * 1_000_000)
        let roomPad = try #require(roomQueue.staticPad("src"))
        gst_pad_set_offset(roomPad.raw, gint64(latencyMs + delayMs) * 1_000_000)

        Voices.install(SpeechLikeVoice(seed: 7, levelDB: -24), on: try #require(farCaps.staticPad("src")))
        if nearTalker { Voices.install(SpeechLikeVoice(seed: 1_234_567, levelDB: -30), on: try #require(nearCaps.staticPad("src"))) }

        let done = OnceResult<Bool>()
        let microphone = PowerMeter(from: skip, to: end), processed = PowerMeter(from: skip, to: end) { done.finish(true) }
        let near = PowerMeter(from: skip, to: end)
        microphone.install(on: try #require(processor.staticPad("sink")))
        processed.install(on: try #require(processor.staticPad("src")))
        if nearTalker { near.install(on: try #require(nearQueue.staticPad("src"))) }
        let failure = Mutex<String?>(nil)
        pipeline.addObserver { message in
            if case let .error(source, text, debug) = message {
                failure.withLock { $0 = $0 ?? "\(source): \(text) (\(debug))" }
                done.finish(false)
            }
        }

        try await pipeline.start(timeout: .seconds(5))
        let finished = await done.value(orAfter: .seconds(convergence + window + 10), false)
        await pipeline.shutDown()
        if let failure = failure.withLock({ $0 }) { Issue.record("pipeline error: \(failure)") }
        try #require(finished, "the room ran \(processed.progress) of \(end) samples through the processor")
        return EchoMeasurement(microphoneDB: microphone.decibels, processedDB: processed.decibels,
                               nearDB: nearTalker ? near.decibels : nil)
    }
}

/// Mean power of the samples passing a pad between two sample counts.
final class PowerMeter: Sendable {
    private let state = Mutex<(seen: Int, energy: Double)>((0, 0))
    private let from: Int, to: Int
    private let whenDone: @Sendable () -> Void

    init(from: Int, to: Int, whenDone: @escaping @Sendable () -> Void = {}) {
        self.from = from
        self.to = to
        self.whenDone = whenDone
    }

    var progress: Int { state.withLock { $0.seen } }
    var decibels: Double {
        let energy = state.withLock { $0.energy }
        return 10 * log10(max(energy / Double(to - from), 1e-3) / (32768.0 * 32768.0))
    }

    func install(on pad: Pad) {
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [self] info in
            guard let buffer = gst_pad_probe_info_get_buffer(info) else { return GST_PAD_PROBE_OK }
            var finished = false
            AudioProbes.withSamples(buffer) { samples in
                finished = state.withLock { s -> Bool in
                    guard s.seen < to else { return false }
                    for (i, sample) in samples.enumerated() where (from..<to).contains(s.seen + i) {
                        s.energy += Double(sample) * Double(sample)
                    }
                    s.seen += samples.count
                    return s.seen >= to
                }
            }
            if finished { whenDone() }
            return GST_PAD_PROBE_OK
        }
    }
}

enum Voices {
    /// Writes `voice` into the buffers passing `pad` (S16LE mono, made writable), which are no
    /// longer a gap.
    static func install(_ voice: SpeechLikeVoice, on pad: Pad) {
        let voice = Mutex(voice)
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            guard let buffer = ProbeInfo.writableBuffer(info) else { return GST_PAD_PROBE_OK }
            // audiotestsrc marks its silence as a gap, which volume and audiomixer skip unread.
            buffer.pointee.mini_object.flags &= ~GST_BUFFER_FLAG_GAP.rawValue
            AudioProbes.withMutableSamples(buffer) { samples in voice.withLock { $0.fill(samples) } }
            return GST_PAD_PROBE_OK
        }
    }
}

/// An artificial voice (deterministic for a seed): talk spurts of 0.8–2.4 s with pauses
/// of 0.15–0.65 s; in a spurt, syllables of 120–300 ms, four in five voiced (a glottal
/// pulse train at 100–160 Hz, gliding ±10 %, through the three formants of one of seven
/// vowels) and the rest fricatives (noise through a wide resonance at 3.5–6 kHz), each
/// at `levelDB` ± 6 dB (fricatives 6 dB lower) with a smooth envelope. Non-stationary in
/// level, pitch and spectrum, as speech is: a canceller must keep adapting, and noise
/// suppression cannot take it for noise.
struct SpeechLikeVoice: Sendable {
    private var random: UInt64
    private let levelDB: Double
    private var pitch = 0.0
    private var pending: [Int16] = []
    private var index = 0
    private var phase = 0.0, glottis1 = 0.0, glottis2 = 0.0, previous = 0.0
    private var spurtLeft = 0
    private static let rate = Double(VoiceFormat.rate)
    private static let vowels: [(Double, Double, Double)] = [
        (730, 1090, 2440), (270, 2290, 3010), (530, 1840, 2480), (570, 840, 2410),
        (300, 870, 2240), (660, 1720, 2410), (490, 1350, 1690),
    ]

    init(seed: UInt64, levelDB: Double) {
        random = seed
        self.levelDB = levelDB
        pitch = 100 + 60 * uniform()
    }

    mutating func fill(_ out: UnsafeMutableBufferPointer<Int16>) {
        for i in out.indices {
            if index == pending.count { next() }
            out[i] = pending[index]
            index += 1
        }
    }

    private mutating func uniform() -> Double {
        random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Double(random >> 11) / Double(1 << 53)
    }

    /// The next syllable, or the pause that ends a spurt.
    private mutating func next() {
        index = 0
        if spurtLeft <= 0 {
            if pending.isEmpty || spurtLeft < 0 {   // start (or a pause was just played): a spurt
                spurtLeft = Int(Self.rate * (0.8 + 1.6 * uniform()))
            } else {
                pending = [Int16](repeating: 0, count: Int(Self.rate * (0.15 + 0.5 * uniform())))
                spurtLeft = -1
                return
            }
        }
        let voiced = uniform() < 0.8
        let length = max(1, min(spurtLeft, Int(Self.rate * (voiced ? 0.12 + 0.18 * uniform() : 0.06 + 0.09 * uniform()))))
        spurtLeft -= length
        func resonator(_ f: Double, _ bandwidth: Double) -> (Double, Double) {
            let r = exp(-Double.pi * bandwidth / Self.rate)
            return (2 * r * cos(2 * Double.pi * f / Self.rate), -r * r)
        }
        let filters: [(Double, Double)]
        var f0 = 0.0, glide = 0.0
        if voiced {
            let v = Self.vowels[Int(uniform() * Double(Self.vowels.count))]
            filters = [resonator(v.0, 80), resonator(v.1, 100), resonator(v.2, 140)]
            f0 = pitch * (0.85 + 0.3 * uniform())
            glide = f0 * (0.2 * uniform() - 0.1) / Double(length)
        } else {
            filters = [resonator(3500 + 2500 * uniform(), 1500)]
        }
        var memory = [Double](repeating: 0, count: 2 * filters.count)
        var syllable = [Double](repeating: 0, count: length)
        for k in 0..<length {
            var y: Double
            if voiced {
                phase += (f0 + glide * Double(k)) / Self.rate
                var pulse = 0.0
                if phase >= 1 { phase -= 1; pulse = 1 }
                glottis1 = 0.98 * glottis1 + pulse
                glottis2 = 0.98 * glottis2 + glottis1
                y = glottis2 - previous   // the lips radiate the flow's derivative
                previous = glottis2
            } else {
                y = 2 * uniform() - 1
            }
            for (j, (b1, b2)) in filters.enumerated() {
                let out = y + b1 * memory[2 * j] + b2 * memory[2 * j + 1]
                memory[2 * j + 1] = memory[2 * j]
                memory[2 * j] = out
                y = out
            }
            syllable[k] = y
        }
        let rms = (syllable.reduce(0) { $0 + $1 * $1 } / Double(length)).squareRoot()
        let level = levelDB + 12 * uniform() - 6 - (voiced ? 0 : 6)
        let scale = pow(10, level / 20) * 32767 / max(rms, 1e-9)
        pending = syllable.enumerated().map { k, v in
            let envelope = sin(Double.pi * Double(k) / Double(length)).squareRoot()
            return Int16(clamping: Int((v * scale * envelope).rounded()))
        }
    }
}
