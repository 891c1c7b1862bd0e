import RTCSession
import Synchronization
import Voice

/// The field's side of the conversation, in the publisher's pipeline (one clock with the
/// video, so a voice and a frame captured together carry the same running time):
///
/// - microphone → (echo canceller) → mute → **field tee** (a silent live source when
///   there is no microphone, so the mixers keep time);
/// - each expert's voice: webrtcbin → depay → Opus decode → **voice tee**;
/// - the speaker: silence + every expert's voice → audiomixer → (echo probe) → speaker;
/// - to each expert, mix-minus: the field and every *other* expert's voice → its own
///   audiomixer → Opus → its own audio transceiver, bundled with the video.
///
/// Branches are added and removed as sessions come and go, never blocking a streaming
/// thread: pads are unlinked behind IDLE probes, and elements leave on the state worker.
public final class PublisherVoice: @unchecked Sendable {
    let pipeline: Pipeline
    /// The devices lost under the running node, and their retries (`watchDevices`).
    let deviceLoss = Mutex(DeviceLoss())
    let deviceReport = Mutex<(@Sendable (DeviceChange) -> Void)?>(nil)
    let capture: VoiceCapture?
    let playback: VoicePlayback?
    private let fieldTee: Element
    let speakerMixer: Element?
    /// The silent live source that keeps the speaker's mixer on the clock.
    private let speakerSilence: [Element]
    /// Why a device is not in use, for the status and the start-up event.
    public let unavailable: [String]
    private let state = Mutex(State())

    private struct Input {
        var teePad: Pad; var queue: Element; var mixerPad: Pad; var mixer: Element; var tee: Element
        /// A received voice's re-timing into the mixer (nil for the field's own voice).
        var timing: PlayoutTiming?
    }
    private struct Branch {
        var mayTalk: Bool
        /// The branch into the SFU: its mix never takes the voices that come through the
        /// SFU (their speakers would hear themselves).
        var feedsSFU: Bool
        var mixer: Element
        var sendChain: [Element]
        /// Its Opus encoder (in `sendChain`).
        var encoder: Element
        var gate: VoiceSendGate
        /// The field's voice into this branch's mixer, then each other expert's voice by peer name.
        var inputs: [String: Input] = [:]
        /// This expert's voice, once its stream arrived.
        var voice: Voice?
        /// The decode chain of a voice refused (a viewer where viewers only listen).
        var refusedVoice: [Element] = []
    }
    /// A received voice: its decode chain ending in its tee, its meter and its sender's pauses.
    private typealias Voice = (chain: [Element], tee: Element, level: VoiceLevel, pauses: SenderPauses)
    private struct State {
        var branches: [String: Branch] = [:]
        /// Each expert's voice into the speaker's mixer.
        var speakerInputs: [String: Input] = [:]
        /// The voices of experts through the SFU (`attachRelayedVoice`), by name.
        var relayed: [String: Voice] = [:]
        var muted = false
    }

    public static let fieldKey = "field"

    /// Nil when there is neither a microphone nor a speaker (no audio is offered at all).
    /// `onTone`: the tones of `options.detectTones` starting and stopping where the field hears.
    public static func make(_ options: VoiceOptions, pipeline: Pipeline,
                            onTone: (@Sendable (ToneChange) -> Void)? = nil) throws(VoiceError) -> (PublisherVoice?, [String]) {
        var unavailable: [String] = []
        var microphone: MicrophoneSpec? = options.microphone == .none ? nil : options.microphone
        var speaker: SpeakerSpec? = options.speaker == .none ? nil : options.speaker
        // Open the devices first: one missing is said and left out, and the video goes on.
        if let spec = microphone, spec.isDevice || { if case .wav = spec { true } else { false } }() {
            do throws(VoiceError) { _ = try VoiceCapture.make(spec, echoProbe: nil, name: "probe") } catch {
                unavailable.append(error.description); microphone = nil
            }
        }
        if let spec = speaker, spec.isDevice {
            do throws(VoiceError) { _ = try VoicePlayback.make(spec, withEchoProbe: false, name: "probe", tones: nil) } catch {
                unavailable.append(error.description); speaker = nil
            }
        }
        guard microphone != nil || speaker != nil else { return (nil, unavailable) }
        return (try PublisherVoice(options: options, microphone: microphone, speaker: speaker, pipeline: pipeline,
                                   unavailable: unavailable, onTone: onTone), unavailable)
    }

    private init(options: VoiceOptions, microphone: MicrophoneSpec?, speaker: SpeakerSpec?, pipeline: Pipeline,
                 unavailable: [String], onTone: (@Sendable (ToneChange) -> Void)?) throws(VoiceError) {
        self.pipeline = pipeline
        self.unavailable = unavailable
        let echo = options.cancelsEcho(microphone: microphone, speaker: speaker)
        do {
            let playback = try speaker.map { spec throws(VoiceError) in
                try VoicePlayback.make(spec, withEchoProbe: echo, name: "field",
                                       playoutDelayNanos: UInt64(options.playoutMs) * 1_000_000 + Self.speakerMixerLeadNanos,
                                       toneThresholdDB: options.toneThresholdDB,
                                       tones: onTone.flatMap { options.detectTones.isEmpty ? nil : (options.detectTones, $0) })
            } ?? nil
            let probeName = echo ? playback?.echoProbe?.name : nil
            let capture = try microphone.map { spec throws(VoiceError) in
                try VoiceCapture.make(spec, echoProbe: probeName, name: "field")
            } ?? nil
            self.playback = playback
            self.capture = capture
            fieldTee = try ElementFactory.make("tee", name: "field-voicetee")
            fieldTee.set("allow-not-linked", true)
            var chain: [Element]
            if let capture { chain = capture.elements } else { chain = try Self.silence(name: "field-silence") }
            chain.append(fieldTee)
            for e in chain { pipeline.add(e) }
            try pipeline.link(chain)
            if let playback {
                let mixer = try ElementFactory.make("audiomixer", name: "field-speakermix")
                VoiceThreadPriority.raise(on: mixer.staticPad("src")!)
                // It gives out each 5 ms once its silence's 5 ms have passed (10 and 10 by
                // default): what the speaker needs as lead over the mixer's running time.
                mixer.set("output-buffer-duration", 5_000_000)
                // Silence keeps the speaker's mixer on the clock before any expert talks.
                let silence = try Self.silence(name: "field-speakersilence", samplesPerBuffer: 240)
                for e in silence + [mixer] + playback.elements { pipeline.add(e) }
                try pipeline.link(silence + [mixer])
                try pipeline.link([mixer] + playback.elements)
                speakerMixer = mixer
                speakerSilence = silence
            } else {
                speakerMixer = nil
                speakerSilence = []
            }
        } catch { throw VoiceError(error) }
        if options.startMuted { setMuted(true) }
    }

    /// A live silent source at the voice format.
    private static func silence(name: String, samplesPerBuffer: Int = 480) throws(RTCError) -> [Element] {
        let source = try ElementFactory.make("audiotestsrc", name: name)
        source.set("is-live", true)
        source.set("wave", "silence")
        source.set("samplesperbuffer", samplesPerBuffer)
        let caps = try ElementFactory.make("capsfilter", name: "\(name)caps")
        caps.set("caps", VoiceFormat.caps)
        return [source, caps]
    }

    public var hasMicrophone: Bool { capture != nil }
    public var hasSpeaker: Bool { playback != nil }
    public var echoCancelling: Bool { playback?.echoProbe != nil && capture != nil }
    public var microphoneLevel: VoiceLevel? { capture?.level }
    public var speakerLevel: VoiceLevel? { playback?.level }

    public var isMuted: Bool { state.withLock { $0.muted } }

    /// Voice packets sent to each expert since its voice opened, by peer name: 100 a
    /// second, about 5 while the field is muted and no other expert talks (DTX,
    /// `VoiceCodec.setDiscontinuous`).
    public var packetsSent: [String: UInt64] {
        state.withLock { $0.branches.mapValues(\.gate.packetsSent) }
    }
    /// Their RTP bytes, by peer name.
    public var bytesSent: [String: UInt64] {
        state.withLock { $0.branches.mapValues(\.gate.bytesSent) }
    }

    /// Everything that pushes into the speaker's mixer (its silence, each expert's queue).
    var speakerFeeds: [Element] {
        speakerSilence + state.withLock { $0.speakerInputs.values.map(\.queue) }
    }

    /// Mutes the field's microphone (its stream goes on as silence).
    /// Muted, each expert's stream goes discontinuous (`VoiceCodec.setDiscontinuous`).
    public func setMuted(_ muted: Bool) {
        let encoders = state.withLock { s -> [Element] in
            s.muted = muted
            return s.branches.values.map(\.encoder)
        }
        capture?.setMuted(muted)
        for encoder in encoders { VoiceCodec.setDiscontinuous(muted, encoder: encoder) }
    }

    /// How each received voice enters its mixer, by "expert→listener" ("field" for the
    /// speaker): the slack after its arrival now (ms) and how often it was moved
    /// (`PlayoutRetimer`).
    public var playout: [String: (slackMs: Double, moves: Int)] {
        state.withLock { s in
            var out: [String: (slackMs: Double, moves: Int)] = [:]
            for (expert, input) in s.speakerInputs { if let t = input.timing { out["\(expert)→\(Self.fieldKey)"] = t.snapshot } }
            for (listener, branch) in s.branches {
                for (expert, input) in branch.inputs { if let t = input.timing { out["\(expert)→\(listener)"] = t.snapshot } }
            }
            return out
        }
    }

    /// Each expert's voice level by peer name (only those whose voice arrived).
    public var voiceLevels: [String: VoiceLevel] {
        state.withLock { s in s.branches.compactMapValues { $0.voice?.level }.merging(s.relayed.mapValues(\.level)) { a, _ in a } }
    }

    /// Adds the audio to a session's peer: its mix-minus, Opus and a send pad whose
    /// transceiver is sendrecv when the expert may talk (else send-only). Its voice, when
    /// it arrives, is linked by `attachVoice`. Call before the offer.
    /// `intoSFU`: the branch into the SFU. Its offer names the payloader's SSRC (an SFU
    /// takes only the streams whose SSRC the offer declares: Janus drops the rest), and
    /// its mix takes no voice that came through the SFU (whose speaker would hear itself).
    func addBranch(name: String, peer: WebRTCPeer, mayTalk: Bool, intoSFU: Bool = false) throws(RTCError) {
        let mixer = try ElementFactory.make("audiomixer", name: "\(name)-voicemix")
        VoiceThreadPriority.raise(on: mixer.staticPad("src")!)
        // The mixer waits one output buffer before it mixes: 5 ms, not its default 10.
        mixer.set("output-buffer-duration", 5_000_000)
        let caps = try ElementFactory.make("capsfilter", name: "\(name)-voicemixcaps")
        caps.set("caps", VoiceFormat.caps)
        let sendChain = [caps] + (try VoiceCodec.makeEncoder(name: name))
        var preferences = VoiceFormat.rtpCaps
        if intoSFU {
            // Fixed before the offer: the payloader picks its own only once it runs.
            let ssrc = Int(UInt32.random(in: 1...UInt32.max))
            sendChain.last!.set("ssrc", ssrc)
            preferences += ",ssrc=(uint)\(ssrc)"
        }
        let sendPad = try peer.requestSendPad(codecPreferences: preferences,
                                              direction: mayTalk ? "sendrecv" : "sendonly", isVideo: false)
        for e in [mixer] + sendChain { pipeline.add(e) }
        try pipeline.link([mixer] + sendChain)
        // Nothing reaches the subscriber before its certificate is checked (as its video).
        let gate = try VoiceSendGate(after: sendChain.last!, to: sendPad, in: pipeline) { [weak peer] in peer?.isVerified ?? false }
        // Downstream first: an element that pushes into one still in NULL stops for good.
        for e in ([mixer] + sendChain).reversed() { e.syncStateWithParent() }
        var branch = Branch(mayTalk: mayTalk, feedsSFU: intoSFU, mixer: mixer, sendChain: sendChain, encoder: sendChain[1], gate: gate)
        branch.inputs[Self.fieldKey] = try feed(from: fieldTee, into: mixer, name: "\(name)-fieldin")
        // Every other expert's voice already heard (through the SFU too, unless this is the SFU's).
        let others = state.withLock { s in
            s.branches.compactMap { key, b in b.voice.map { (key, $0.tee, ($0.pauses, $0.level)) } }
                + (intoSFU ? [] : s.relayed.map { key, v in (key, v.tee, (v.pauses, v.level)) })
        }
        for (other, tee, received) in others {
            branch.inputs[other] = try feed(from: tee, into: mixer, name: "\(name)-from-\(other)", received: received)
        }
        let muted = state.withLock { s -> Bool in
            s.branches[name] = branch
            return s.muted
        }
        if muted { VoiceCodec.setDiscontinuous(true, encoder: branch.encoder) }
    }

    /// tee → queue → a new mixer pad, running before it is linked (a pad linked to a
    /// queue still in NULL is flushing: see `PublisherMedia.addPeer`).
    /// A received voice enters each mixer this much after its arrival, reporting no
    /// latency (`AudioProbes.hideLatency`): slack for its arrival's jitter (it has been
    /// through its jitter buffer already). The field's voice is then never held back by
    /// an expert's. 20 ms: expert → field 24 ms on loopback (50 ms made it 54).
    static let receivedVoiceSlackNanos: UInt64 = 20_000_000
    /// What that slack may grow to when the voice comes late (a busy machine): each
    /// late buffer costs a gap, so it doubles up to this (`PlayoutRetimer`).
    static let receivedVoiceMaxSlackNanos: UInt64 = 80_000_000
    /// The speaker plays what its mixer made this long (plus `VoiceOptions.playoutMs`,
    /// 45 ms in all) after the mixer's running time, not after the whole pipeline's
    /// latency (`AudioProbes.playSoon`), which other branches set: on a real sound
    /// server it was 150 ms, and the expert's voice reached the field's ear 225–391 ms
    /// after the expert's mouth (scripts/bench-voice). The mixer gives out each 5 ms once
    /// its silence's 5 ms have passed (12–15 ms after the running time measured with 10
    /// and 10); the rest is room for hold-ups, since the sink drops what comes after its
    /// instant. 45 ms: expert → field 110 ms and mutes heard in 93–109 ms, against 133
    /// and 118–131 with 70; beside two busy loops 15 % of the expert's speech frames lost
    /// against 18 % (one run each: busy runs move by more than that). 30 ms in all with
    /// the 10 ms mixer lost 86 % of it there.
    static let speakerMixerLeadNanos: UInt64 = 25_000_000
    /// The publisher's jitter-buffer latency for the experts' voices (it receives no video).
    static let receiveLatencyMs = 40

    /// `received`: a received voice's sender pauses and meter (nil for the field's own).
    private func feed(from tee: Element, into mixer: Element, name: String,
                      received: (pauses: SenderPauses, level: VoiceLevel)? = nil) throws(RTCError) -> Input {
        let queue = try ElementFactory.make("queue", name: name)
        VoiceThreadPriority.raise(on: queue.staticPad("src")!)
        queue.set("leaky", "downstream")
        queue.set("max-size-time", 200_000_000)
        queue.set("max-size-buffers", 0)
        queue.set("max-size-bytes", 0)
        pipeline.add(queue)
        let timing = received.map {
            AudioProbes.hideLatency(queue: queue, slackNanos: Self.receivedVoiceSlackNanos,
                                    maxSlackNanos: Self.receivedVoiceMaxSlackNanos, pauses: $0.pauses, level: $0.level)
        }
        guard let mixerPad = mixer.requestPad("sink_%u") else { throw .linkFailed(from: name, to: mixer.name) }
        try queue.staticPad("src")!.link(to: mixerPad)
        queue.syncStateWithParent()
        guard let teePad = tee.requestPad("src_%u") else { throw .linkFailed(from: tee.name, to: name) }
        try teePad.link(to: queue.staticPad("sink")!)
        return Input(teePad: teePad, queue: queue, mixerPad: mixerPad, mixer: mixer, tee: tee, timing: timing)
    }

    /// Links an expert's incoming voice (webrtcbin's new audio pad, on its streaming
    /// thread): decode → voice tee → the speaker's mixer and every other expert's mixer.
    /// A voice from an expert who may not talk is decoded into nothing.
    func attachVoice(name: String, pad: Pad) throws(RTCError) {
        let mayTalk = state.withLock { $0.branches[name]?.mayTalk } ?? false
        let voice = try decode(name: name, pad: pad, refused: !mayTalk)
        guard mayTalk else {
            state.withLock { $0.branches[name]?.refusedVoice = voice.chain }
            return
        }
        let others = state.withLock { s in s.branches.filter { $0.key != name }.map { ($0.key, $0.value.mixer) } }
        let inputs = try feedEverywhere(voice, name: name, mixers: others)
        state.withLock { s in
            s.branches[name]?.voice = voice
            record(inputs, of: name, in: &s)
        }
    }

    /// Links the voice of an expert through the SFU (the new audio pad of our subscription
    /// to its feed, `PublisherSFUVoices`): decode → voice tee → the speaker's mixer and
    /// the mix of every expert connected directly. Not into the branch into the SFU: its
    /// one stream goes to every subscriber of the feed, that expert among them.
    func attachRelayedVoice(name: String, pad: Pad) throws(RTCError) {
        let voice = try decode(name: name, pad: pad, refused: false)
        let direct = state.withLock { s in s.branches.filter { !$0.value.feedsSFU }.map { ($0.key, $0.value.mixer) } }
        let inputs = try feedEverywhere(voice, name: name, mixers: direct)
        state.withLock { s in
            s.relayed[name] = voice
            record(inputs, of: name, in: &s)
        }
    }

    /// Removes the voice of an expert through the SFU and every input it fed.
    func removeRelayedVoice(name: String) {
        let (voice, fed) = state.withLock { s -> (Voice?, [Input]) in
            guard let voice = s.relayed.removeValue(forKey: name) else { return (nil, []) }
            return (voice, Self.takeInputs(fedBy: name, from: &s))
        }
        guard let voice else { return }
        release(fed, then: voice.chain)
    }

    /// depay → Opus decode → a tee (or, `refused`, into nothing), running and linked to `pad`.
    private func decode(name: String, pad: Pad, refused: Bool) throws(RTCError) -> Voice {
        var chain = try VoiceCodec.makeDecoder(name: name)
        let tee = try ElementFactory.make("tee", name: "\(name)-voicetee")
        tee.set("allow-not-linked", true)
        chain.append(tee)
        if refused {
            let sink = try ElementFactory.make("fakesink", name: "\(name)-refusedvoice")
            sink.set("sync", false)
            chain.append(sink)
        }
        for e in chain { pipeline.add(e) }
        try pipeline.link(chain)
        let level = VoiceLevel()
        AudioProbes.installMeter(on: chain[chain.count - (refused ? 3 : 2)].staticPad("src")!, level: level, tones: nil)
        for e in chain.reversed() { e.syncStateWithParent() }
        let pauses = SenderPauses(decoderInput: chain[VoiceCodec.decoderIndex].staticPad("sink")!)
        try pad.link(to: chain[0].staticPad("sink")!)
        return (chain, tee, level, pauses)
    }

    /// A received voice into the speaker's mixer (keyed `fieldKey`) and each of `mixers`
    /// (keyed by their branch).
    private func feedEverywhere(_ voice: Voice, name: String, mixers: [(String, Element)]) throws(RTCError) -> [(String, Input)] {
        var inputs: [(String, Input)] = []
        let received = (voice.pauses, voice.level)
        if let speakerMixer {
            inputs.append((Self.fieldKey, try feed(from: voice.tee, into: speakerMixer, name: "\(name)-tospeaker", received: received)))
        }
        for (other, mixer) in mixers {
            inputs.append((other, try feed(from: voice.tee, into: mixer, name: "\(other)-from-\(name)", received: received)))
        }
        return inputs
    }

    /// Recorded on the receiving side: each mixer's inputs by whose voice they carry.
    private func record(_ inputs: [(String, Input)], of name: String, in s: inout State) {
        for (target, input) in inputs where target != Self.fieldKey { s.branches[target]?.inputs[name] = input }
        if let speaker = inputs.first(where: { $0.0 == Self.fieldKey })?.1 { s.speakerInputs[name] = speaker }
    }

    /// Takes out of the state every input `name`'s voice fed (other mixers', the speaker's).
    private static func takeInputs(fedBy name: String, from s: inout State) -> [Input] {
        var fed: [Input] = []
        for key in s.branches.keys { if let input = s.branches[key]?.inputs.removeValue(forKey: name) { fed.append(input) } }
        if let speaker = s.speakerInputs.removeValue(forKey: name) { fed.append(speaker) }
        return fed
    }

    /// Unlinks `inputs` behind IDLE probes, then takes them and `elements` out on the state worker.
    private func release(_ inputs: [Input], then elements: [Element]) {
        let pipeline = self.pipeline
        for input in inputs {
            input.teePad.unlinkWhenIdle(from: input.queue.staticPad("sink")!) {
                StateWorker.shared.submit {
                    input.tee.releaseRequestPad(input.teePad)
                    input.queue.stopOnThisThread()
                    input.mixer.releaseRequestPad(input.mixerPad)
                    pipeline.remove(input.queue)
                }
            }
        }
        StateWorker.shared.submit {
            for e in elements { pipeline.remove(e) }
        }
    }

    /// Removes a session's audio: its mixer and encoder, its voice and every input its
    /// voice fed; unlinks behind IDLE probes, then leaves on the state worker.
    func removeBranch(name: String) {
        let (branch, fedByVoice) = state.withLock { s -> (Branch?, [Input]) in
            guard let branch = s.branches.removeValue(forKey: name) else { return (nil, []) }
            return (branch, Self.takeInputs(fedBy: name, from: &s))
        }
        guard let branch else { return }
        release(Array(branch.inputs.values) + fedByVoice,
                then: [branch.mixer] + branch.sendChain + [branch.gate.tee] + (branch.voice?.chain ?? []) + branch.refusedVoice)
    }
}
