internal import CGStreamer
import Foundation
import RTCSession
import Synchronization
import Dispatch

/// A node's microphone up to its processed voice: source → convert → resample → 48 kHz
/// mono → echo canceller (with a speaker) → volume (mute) → meter. The last element's
/// source pad is the voice, the elements are made but not added to a pipeline.
package struct VoiceCapture {
    package let elements: [Element]
    /// Mutes (`mute`): the stream goes on as silence, so the peers' jitter buffers and the
    /// mixers keep their timing.
    package let volume: Element
    package let level = VoiceLevel()
    package var output: Element { elements.last! }

    /// Nil for `.none`. A device that cannot be opened throws `.deviceUnavailable`; the
    /// caller goes on without a microphone.
    package static func make(_ spec: MicrophoneSpec, echoProbe: String?, name: String) throws(VoiceError) -> VoiceCapture? {
        do {
            var chain: [Element]
            var burstsAfterCaps = false
            switch spec {
            case .none: return nil
            case .system:
                chain = [try VoiceDevices.open("autoaudiosrc", name: "\(name)-mic", what: "the system microphone")]
            case .device(let device):
                let source = try VoiceDevices.open("pulsesrc", name: "\(name)-mic", device: device, what: "microphone \(device)")
                // µs: 10 ms periods, webrtcdsp's frame. With 5 ms pulsesrc marked most
                // buffers discontinuous, and webrtcdsp clears its half-filled frame at each
                // discontinuity: it never completed one and sent nothing.
                source.set("latency-time", 10000)
                chain = [source]
            case .tone(let hz), .bursts(let hz):
                let source = try ElementFactory.make("audiotestsrc", name: "\(name)-mic")
                source.set("is-live", true)
                source.set("wave", "sine")
                source.set("freq", String(hz))
                source.set("volume", "0.25")
                // 5 ms buffers: a live source's buffer leaves when full, so its length is latency.
                source.set("samplesperbuffer", 240)
                chain = [source]
                if case .bursts = spec { burstsAfterCaps = true }
            case .wav(let path):
                guard FileManager.default.isReadableFile(atPath: path) else {
                    throw VoiceError.deviceUnavailable(what: "microphone file \(path)", reason: "no such readable file")
                }
                // wavparse says nothing useful of a file that is not one (the pipeline only stalls).
                let header = FileHandle(forReadingAtPath: path).flatMap { try? $0.read(upToCount: 12) } ?? Data()
                guard header.count == 12, header.prefix(4) == Data("RIFF".utf8), header.suffix(4) == Data("WAVE".utf8) else {
                    throw VoiceError.deviceUnavailable(what: "microphone file \(path)", reason: "not a WAV file (no RIFF/WAVE header)")
                }
                let file = try ElementFactory.make("filesrc", name: "\(name)-wavfile")
                file.set("location", path)
                chain = [file, try ElementFactory.make("wavparse", name: "\(name)-wavparse")]
            }
            chain += [try ElementFactory.make("audioconvert", name: "\(name)-micconvert"),
                      try ElementFactory.make("audioresample", name: "\(name)-micresample")]
            let caps = try ElementFactory.make("capsfilter", name: "\(name)-miccaps")
            caps.set("caps", VoiceFormat.caps)
            chain.append(caps)
            if burstsAfterCaps { AudioProbes.installBursts(on: caps.staticPad("src")!) }
            if case .wav = spec {
                // A file is not live: play it at the clock's pace, then silence.
                let sync = try ElementFactory.make("clocksync", name: "\(name)-wavsync")
                chain.append(sync)
                AudioProbes.dropEndOfStream(on: sync.staticPad("src")!)
            }
            if let echoProbe { chain.append(try EchoCancellation.standard.makeProcessor(probeName: echoProbe, name: "\(name)-dsp")) }
            let volume = try ElementFactory.make("volume", name: "\(name)-mute")
            chain.append(volume)
            let capture = VoiceCapture(elements: chain, volume: volume)
            AudioProbes.installMeter(on: volume.staticPad("src")!, level: capture.level, tones: nil)
            VoiceThreadPriority.raise(on: volume.staticPad("src")!)
            return capture
        } catch { throw VoiceError(error) }
    }

    package func setMuted(_ muted: Bool) { volume.set("mute", muted) }
}

/// Where received voices are played: convert → resample → 48 kHz mono → echo probe (the
/// canceller's reference) → sink, synchronised to the clock. The first element's sink pad
/// takes the (mixed) voices; level and tone probes sit before the echo probe.
package struct VoicePlayback {
    package let elements: [Element]
    package let level = VoiceLevel()
    /// The echo canceller's reference, when one is in use (its name goes to the canceller).
    package let echoProbe: Element?
    package var input: Element { elements.first! }
    /// The element that plays (a base sink; inside autoaudiosink, its chosen child).
    var sink: Element { elements.last! }


    /// `playoutDelayNanos`: play each voice that long after it arrives, whatever the
    /// pipeline's latency (`AudioProbes.playSoon`); nil: at its running time plus the
    /// latency, as a sink does.
    package static func make(_ spec: SpeakerSpec, withEchoProbe: Bool, name: String, playoutDelayNanos: UInt64? = nil,
                             toneThresholdDB: Double = -30,
                             tones: (frequencies: [Double], report: @Sendable (ToneChange) -> Void)?) throws(VoiceError) -> VoicePlayback? {
        do {
            let sink: Element
            switch spec {
            case .none: return nil
            case .system: sink = try VoiceDevices.open("autoaudiosink", name: "\(name)-speaker", what: "the system speaker")
            case .device(let device):
                sink = try VoiceDevices.open("pulsesink", name: "\(name)-speaker", device: device, what: "speaker \(device)")
            case .discard:
                sink = try ElementFactory.make("fakesink", name: "\(name)-speaker")
                sink.set("sync", true)
            }
            let caps = try ElementFactory.make("capsfilter", name: "\(name)-speakercaps")
            caps.set("caps", VoiceFormat.caps)
            var chain = [try ElementFactory.make("audioconvert", name: "\(name)-speakerconvert"),
                         try ElementFactory.make("audioresample", name: "\(name)-speakerresample"), caps]
            // webrtcdsp finds its probe by name in the whole process: each gets its own.
            let probe = withEchoProbe ? try EchoCancellation.makeProbe(name: "\(name)-echoprobe\(probeNumber.add(1, ordering: .relaxed).newValue)") : nil
            if let probe { chain.append(probe) }
            chain.append(sink)
            let playback = VoicePlayback(elements: chain, echoProbe: probe)
            if let playoutDelayNanos { AudioProbes.playSoon(on: chain[1].staticPad("src")!, sink: sink, delayNanos: playoutDelayNanos) }
            let tracker = tones.map { t in
                ToneProbe(frequencies: t.frequencies, thresholdDB: toneThresholdDB, playDelay: { VoiceDevices.latency(of: sink) }, report: t.report)
            }
            AudioProbes.installMeter(on: caps.staticPad("src")!, level: playback.level, tones: tracker)
            VoiceThreadPriority.raise(on: chain[0].staticPad("sink")!)
            return playback
        } catch { throw VoiceError(error) }
    }
}

/// `VoiceDevices.noAudio`'s answers, by factory and device.
private let checkedSources = Mutex<[String: String?]>([:])

/// Numbers the echo probes of a process.
private let probeNumber = Atomic<Int>(0)

/// Opus over RTP, both ways.
package enum VoiceCodec {
    /// Voice → Opus (32 kbit/s, 10 ms frames, in-band FEC for a lossy link) → RTP (pt 111).
    /// 10 ms frames, not Opus's usual 20: the frame is capture latency, and the voice must
    /// keep up with a video shown as soon as it is decoded (lip sync, docs/VOICE.md).
    /// The encoder is the first element (`setDiscontinuous`).
    package static func makeEncoder(name: String) throws(RTCError) -> [Element] {
        let encoder = try ElementFactory.make("opusenc", name: "\(name)-opusenc")
        encoder.set("bitrate", 32000)
        encoder.set("audio-type", "voice")
        encoder.set("frame-size", 10)
        encoder.set("inband-fec", true)
        encoder.set("packet-loss-percentage", 5)
        let payloader = try ElementFactory.make("rtpopuspay", name: "\(name)-opuspay")
        payloader.set("pt", VoiceFormat.payloadType)
        // Sends nothing for the encoder's empty frames (only made while discontinuous).
        payloader.set("dtx", true)
        return [encoder, payloader]
    }

    /// Discontinuous transmission on `encoder` (from `makeEncoder`), for a muted
    /// microphone: in silence the encoder makes empty frames, which the payloader drops,
    /// and a comfort-noise frame every 400 ms: about 5 packets a second instead of 100
    /// (36 kbit/s of silence each way before). Not while talking: with it on all the
    /// time, real speech through a sound server reached the far end with 73–346 of 803
    /// speech frames digitally silent (10 without), since every pause restarts the
    /// stream and a restarted stream's first buffers come late to the speaker's sink
    /// (scripts/bench-voice; docs/VOICE.md).
    package static func setDiscontinuous(_ on: Bool, encoder: Element) {
        encoder.set("dtx", on)
    }

    /// Where the Opus decoder sits in `makeDecoder`'s chain.
    package static let decoderIndex = 1

    /// RTP → Opus (concealing losses, using FEC) → voice at `VoiceFormat`.
    package static func makeDecoder(name: String) throws(RTCError) -> [Element] {
        let decoder = try ElementFactory.make("opusdec", name: "\(name)-opusdec")
        decoder.set("plc", true)
        decoder.set("use-inband-fec", true)
        let caps = try ElementFactory.make("capsfilter", name: "\(name)-voicecaps")
        caps.set("caps", VoiceFormat.caps)
        let depay = try ElementFactory.make("rtpopusdepay", name: "\(name)-opusdepay")
        // The thread that pushes here is the jitter buffer's for this voice alone.
        VoiceThreadPriority.raise(on: depay.staticPad("sink")!)
        return [depay, decoder,
                try ElementFactory.make("audioconvert", name: "\(name)-voiceconvert"),
                try ElementFactory.make("audioresample", name: "\(name)-voiceresample"), caps]
    }
}

/// A voice's way into its peer's send pad, opened once the peer is connected.
///
/// Until then the voice ends in a tee that discards it (`allow-not-linked`); the first
/// packet after the connection links the tee to the send pad (off the streaming thread).
/// Linked from the start, a chain whose source pushes into webrtcbin's send pad while the
/// session is negotiated now and then got FLUSHING back, and a live source stops for good
/// on that (seen: one expert in eight never heard); and what piled up meanwhile would
/// arrive in one burst, leaving the far end's jitter buffer seconds to learn the
/// stream's timing again (measured: the first second's audio 70 ms late).
package final class VoiceSendGate: Sendable {
    private final class Flags: Sendable {
        let opened = Atomic<Bool>(false)
        let sent = Atomic<UInt64>(0)
        let sentBytes = Atomic<UInt64>(0)
    }
    private let flags = Flags()
    /// The tee the gate added to the pipeline (its owner removes it with the chain).
    package let tee: Element
    private let sendPad: Pad

    /// Adds a tee after `output` (already in `pipeline`) and links it to `sendPad` at the
    /// first packet `isConnected()` allows. The probe holds the gate weakly (its owner
    /// keeps it), so the pad does not keep the tee alive for ever.
    package init(after output: Element, to sendPad: Pad, in pipeline: Pipeline,
                 isConnected: @escaping @Sendable () -> Bool) throws(RTCError) {
        tee = try ElementFactory.make("tee")
        tee.set("allow-not-linked", true)
        self.sendPad = sendPad
        pipeline.add(tee)
        try output.link(tee)
        let flags = self.flags
        tee.staticPad("sink")!.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [weak self] info in
            if flags.opened.load(ordering: .relaxed) {
                flags.sent.add(1, ordering: .relaxed)
                if let buffer = gst_pad_probe_info_get_buffer(info) { flags.sentBytes.add(UInt64(gst_buffer_get_size(buffer)), ordering: .relaxed) }
                return GST_PAD_PROBE_OK
            }
            guard isConnected(), !flags.opened.exchange(true, ordering: .relaxed) else { return GST_PAD_PROBE_DROP }
            let gate = self
            DispatchQueue.global().async { gate?.open() }
            return GST_PAD_PROBE_DROP
        }
        tee.syncStateWithParent()
    }

    private func open() {
        guard let teePad = tee.requestPad("src_%u") else { return }
        _ = try? teePad.link(to: sendPad)
    }

    /// Packets sent since the link opened.
    package var packetsSent: UInt64 { flags.sent.load(ordering: .relaxed) }
    /// Their RTP bytes (header and payload, before SRTP, UDP and IP).
    package var bytesSent: UInt64 { flags.sentBytes.load(ordering: .relaxed) }
}

/// Opening audio devices before they join a pipeline: one that cannot open fails here,
/// with its own reason, instead of failing the whole pipeline's start (and the video).
package enum VoiceDevices {
    static func open(_ factory: String, name: String, device: String? = nil, what: String) throws(VoiceError) -> Element {
        let element: Element
        do throws(RTCError) { element = try ElementFactory.make(factory, name: name) } catch {
            throw .deviceUnavailable(what: what, reason: error.description)
        }
        if let device { element.set("device", device) }
        // READY opens the device (PulseAudio connects; autoaudio* picks a working child).
        let result = gst_element_set_state(element.raw, GST_STATE_READY)
        // autoaudiosrc/-sink fall back to a fake element when nothing works: no device.
        var fallback = false
        Element.forEachDescendant(of: element.raw) { child in
            let f = Element.factoryName(of: child)
            if f == "fakesrc" || f == "fakesink" || f == "fakeaudiosink" { fallback = true }
        }
        _ = gst_element_set_state(element.raw, GST_STATE_NULL)
        guard result != GST_STATE_CHANGE_FAILURE, !fallback else {
            throw .deviceUnavailable(what: what, reason: "\(factory) found no working device (no PulseAudio or PipeWire server, no sound card)")
        }
        // A source can open and still capture nothing (autoaudiosrc settles for OpenAL
        // with no capture device): it must deliver a buffer before it counts.
        if factory.hasSuffix("src"), let reason = noAudio(from: factory, device: device) {
            throw .deviceUnavailable(what: what, reason: reason)
        }
        return element
    }

    /// Why a source of `factory` delivers no audio (nil: its first buffer came in time),
    /// from a throwaway pipeline `source ! fakesink`. A named device gets 3 s (a PulseAudio
    /// null sink's monitor took more than 1 s in one start of three) and, failing, is asked
    /// again at the next session; the system default gets 1 s and its answer is kept for
    /// the process (on a machine with no sound, autoaudiosrc settles on a source that never
    /// delivers: each session would wait for it). A source that delivered is not asked again.
    static func noAudio(from factory: String, device: String?) -> String? {
        let key = factory + "|" + (device ?? "")
        if let known = checkedSources.withLock({ $0[key] }) { return known }
        let seconds = device == nil ? 1.0 : 3.0
        var reason: String? = "\(factory) delivered no audio within \(Int(seconds)) s (no capture device?)"
        if let pipeline = gst_pipeline_new(nil), let source = gst_element_factory_make(factory, nil),
           let sink = gst_element_factory_make("fakesink", nil) {
            if let device { gst_util_set_object_arg(gcast(UnsafeMutableRawPointer(source), to: GObject.self), "device", device) }
            let bin = gcast(UnsafeMutableRawPointer(pipeline), to: GstBin.self)
            _ = gst_bin_add(bin, source); _ = gst_bin_add(bin, sink)
            _ = gst_element_link(source, sink)
            let arrived = DispatchSemaphore(value: 0)
            let once = Atomic<Bool>(false)
            if let pad = gst_element_get_static_pad(sink, "sink") {
                Pad(takingOwnership: pad).addProbe(GST_PAD_PROBE_TYPE_BUFFER) { _ in
                    if !once.exchange(true, ordering: .relaxed) { arrived.signal() }
                    return GST_PAD_PROBE_OK
                }
            }
            if gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE,
               arrived.wait(timeout: .now() + seconds) == .success {
                reason = nil
            }
            _ = gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(UnsafeMutableRawPointer(pipeline))
        }
        if reason == nil || device == nil { checkedSources.withLock { $0[key] = .some(reason) } }   // (= nil would remove the key)
        return reason
    }

    /// What a synchronised sink adds to running time before it plays: its latency (0
    /// without a base sink).
    static func latency(of sink: Element) -> UInt64 {
        guard let base = baseSink(in: sink) else { return 0 }
        return UInt64(gst_base_sink_get_latency(base))
    }

    /// Makes a sink (or the base sink inside it) change state without prerolling. A sink
    /// started again inside a running pipeline (a speaker whose sound server came back)
    /// otherwise prerolls, which makes the whole pipeline lose its state, PAUSED until the
    /// sink has a buffer; its running time then resumes where it stopped, behind the
    /// timestamps the camera gave meanwhile, and the video encoder refuses every frame
    /// until it catches up (seen: 30 "Encode x264 frame failed", a second without video).
    /// Call once the sink is READY (autoaudiosink makes its child then).
    package static func startWithoutPreroll(_ sink: Element) {
        guard let base = baseSink(in: sink) else { return }
        gst_base_sink_set_async_enabled(base, 0)
    }

    /// The base sink itself, or the one inside a bin (autoaudiosink's chosen child).
    static func baseSink(in element: Element) -> UnsafeMutablePointer<GstBaseSink>? {
        func isBaseSink(_ e: UnsafeMutablePointer<GstElement>) -> Bool {
            g_type_check_instance_is_a(gcast(e, to: GTypeInstance.self), gst_base_sink_get_type()) != 0
        }
        if isBaseSink(element.raw) { return gcast(element.raw, to: GstBaseSink.self) }
        var found: UnsafeMutablePointer<GstBaseSink>?
        Element.forEachDescendant(of: element.raw) { child in if found == nil, isBaseSink(child) { found = gcast(child, to: GstBaseSink.self) } }
        return found
    }
}
