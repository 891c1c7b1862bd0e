import RTCSession
import Synchronization
import Voice

/// The expert's side of the conversation, in the session's pipeline:
/// microphone → (echo canceller) → mute → Opus → the audio transceiver (sendrecv), and
/// webrtcbin → Opus decode → (echo probe) → speaker, played on the clock.
///
/// What it can do follows the offer: a publisher that offers audio send-only (a viewer
/// where viewers only listen) gets a receive-only answer; no microphone answers
/// receive-only, no speaker send-only, and each says so (`mode`).
public final class SubscriberVoice: @unchecked Sendable {
    private let pipeline: Pipeline
    let capture: VoiceCapture?
    let playback: VoicePlayback?
    /// Why a device is not in use.
    public let unavailable: [String]
    private let state = Mutex(State())
    /// Voice packets sent to the publisher so far.
    public var packetsSent: UInt64 { state.withLock { $0.gate }?.packetsSent ?? 0 }
    /// Their RTP bytes (header and payload).
    public var bytesSent: UInt64 { state.withLock { $0.gate }?.bytesSent ?? 0 }
    private struct State {
        var mode = "no audio offered"; var gate: VoiceSendGate?; var encoder: Element?
        /// Our voice for the SFU's voice room: the microphone → Opus → this tee, made at
        /// the first try (`addSFUSend`); the payloader's SSRC, named in each try's offer.
        var sfuOut: (tee: Element, ssrc: Int)?
        /// The other experts' voices heard through the SFU, by name: decode → a player each.
        var heard: [String: [Element]] = [:]
    }
    /// How the speaker was asked for, for the players of the other experts' voices.
    private let options: VoiceOptions
    private let onTone: (@Sendable (ToneChange) -> Void)?

    /// One try's share of our voice into the SFU: a queue off the tee, and its gate.
    struct SFUSend {
        let teePad: Pad
        let queue: Element
        let gate: VoiceSendGate
    }

    init(options: VoiceOptions, pipeline: Pipeline, onTone: (@Sendable (ToneChange) -> Void)?) throws(VoiceError) {
        self.pipeline = pipeline
        self.options = options
        self.onTone = onTone
        var unavailable: [String] = []
        var playback: VoicePlayback?, capture: VoiceCapture?
        let wantsEcho = options.cancelsEcho(microphone: options.microphone == .none ? nil : options.microphone,
                                            speaker: options.speaker == .none ? nil : options.speaker)
        do throws(VoiceError) {
            playback = try VoicePlayback.make(options.speaker, withEchoProbe: wantsEcho, name: "expert",
                                              playoutDelayNanos: UInt64(options.playoutMs) * 1_000_000,
                                              toneThresholdDB: options.toneThresholdDB,
                                              tones: onTone.flatMap { options.detectTones.isEmpty ? nil : (options.detectTones, $0) })
        } catch {
            guard case .deviceUnavailable = error else { throw error }
            unavailable.append(error.description)
        }
        do throws(VoiceError) {
            capture = try VoiceCapture.make(options.microphone, echoProbe: wantsEcho ? playback?.echoProbe?.name : nil, name: "expert")
        } catch {
            guard case .deviceUnavailable = error else { throw error }
            unavailable.append(error.description)
        }
        self.playback = playback
        self.capture = capture
        self.unavailable = unavailable
        if options.startMuted { capture?.setMuted(true) }
        if let playback {
            for e in playback.elements { pipeline.add(e) }
            do throws(RTCError) { try pipeline.link(playback.elements) } catch { throw .media(error) }
        }
    }

    /// "two-way", "listen only (…)", "talk only (…)" or "no audio offered".
    public var mode: String { state.withLock { $0.mode } }
    public var echoCancelling: Bool { playback?.echoProbe != nil && capture != nil }
    public var microphoneLevel: VoiceLevel? { capture?.level }
    public var speakerLevel: VoiceLevel? { playback?.level }
    public var isMuted: Bool { capture.map { $0.volume.int("mute") != 0 } ?? true }
    /// Muted, the stream goes discontinuous (`VoiceCodec.setDiscontinuous`).
    public func setMuted(_ muted: Bool) {
        capture?.setMuted(muted)
        if let encoder = state.withLock({ $0.encoder }) { VoiceCodec.setDiscontinuous(muted, encoder: encoder) }
    }

    /// Before the offer is applied: the audio transceiver the answer needs (the pipeline
    /// is playing). Sends only where the offer lets us (its audio m-line is sendrecv);
    /// `listenOnlyBecause`: why it does not, when the offerer is not the publisher.
    func prepare(for offer: SessionDescription, peer: WebRTCPeer, listenOnlyBecause: String? = nil) throws(RTCError) {
        guard let direction = Self.audioDirection(in: offer.sdp) else { return }
        let publisherListens = direction == "sendrecv" || direction == "recvonly"
        let publisherTalks = direction == "sendrecv" || direction == "sendonly"
        let send = publisherListens && capture != nil
        let receive = publisherTalks && playback != nil
        let mode: String
        switch (send, receive) {
        case (true, true): mode = "two-way"
        case (true, false): mode = "talk only (\(playback == nil ? "no speaker" : "the publisher sends no voice"))"
        case (false, true): mode = "listen only (\(capture == nil ? "no microphone" : listenOnlyBecause ?? "this room lets viewers only listen"))"
        case (false, false): mode = "no audio (no usable microphone or speaker)"
        }
        state.withLock { $0.mode = mode }
        if receive { peer.disableLipSync() }
        if send, let capture {
            let sendPad = try peer.requestSendPad(codecPreferences: VoiceFormat.rtpCaps,
                                                  direction: receive ? "sendrecv" : "sendonly", isVideo: false)
            let codec = try VoiceCodec.makeEncoder(name: "expert")
            if isMuted { VoiceCodec.setDiscontinuous(true, encoder: codec[0]) }
            let chain = capture.elements + codec
            for e in chain { pipeline.add(e) }
            try pipeline.link(chain)
            let gate = try VoiceSendGate(after: chain.last!, to: sendPad, in: pipeline) { [weak peer] in
                peer?.connectionState == .connected
            }
            // Downstream first: a live source pushing into an element still in NULL gets
            // FLUSHING back and stops for good (seen: one expert in four never heard).
            for e in chain.reversed() { e.syncStateWithParent() }
            state.withLock { $0.gate = gate; $0.encoder = codec[0] }
        } else if receive {
            try peer.addReceiveTransceiver(matching: offer, media: "audio", encodings: ["OPUS"])
        }
    }

    /// Our voice into `peer`, a try's publication into the SFU's voice room: a send-only
    /// audio transceiver whose offer names our payloader's SSRC (Janus takes only declared
    /// streams), fed once the peer is connected. Nil without a microphone. Call before the
    /// offer; `removeSFUSend` when the try ends (the microphone's chain stays for the next).
    func addSFUSend(to peer: WebRTCPeer) throws(RTCError) -> SFUSend? {
        guard let capture else { return nil }
        let (tee, ssrc) = try sfuOutput(capture)
        let sendPad = try peer.requestSendPad(codecPreferences: VoiceFormat.rtpCaps + ",ssrc=(uint)\(ssrc)",
                                              direction: "sendonly", isVideo: false)
        let queue = try ElementFactory.make("queue", name: "\(peer.name)-voicequeue")
        VoiceThreadPriority.raise(on: queue.staticPad("src")!)
        queue.set("leaky", "downstream")
        queue.set("max-size-time", 200_000_000)
        queue.set("max-size-buffers", 0)
        queue.set("max-size-bytes", 0)
        pipeline.add(queue)
        let gate = try VoiceSendGate(after: queue, to: sendPad, in: pipeline) { [weak peer] in peer?.connectionState == .connected }
        queue.syncStateWithParent()
        guard let teePad = tee.requestPad("src_%u") else { throw .linkFailed(from: tee.name, to: queue.name) }
        try teePad.link(to: queue.staticPad("sink")!)
        state.withLock { $0.gate = gate; $0.mode = "two-way (our voice through the SFU's voice room)" }
        return SFUSend(teePad: teePad, queue: queue, gate: gate)
    }

    /// Takes a try's share out: unlinked behind an IDLE probe, then out on the state worker.
    func removeSFUSend(_ send: SFUSend) {
        let pipeline = self.pipeline
        let tee = state.withLock { $0.sfuOut?.tee }
        send.teePad.unlinkWhenIdle(from: send.queue.staticPad("sink")!) {
            StateWorker.shared.submit {
                tee?.releaseRequestPad(send.teePad)
                send.queue.stopOnThisThread()
                pipeline.remove(send.queue)
                pipeline.remove(send.gate.tee)
            }
        }
    }

    /// The microphone → Opus → tee chain of our voice through the SFU, made once.
    private func sfuOutput(_ capture: VoiceCapture) throws(RTCError) -> (Element, Int) {
        if let made = state.withLock({ $0.sfuOut }) { return made }
        let codec = try VoiceCodec.makeEncoder(name: "expert-sfu")
        // Fixed before the first offer: the payloader picks its own only once it runs.
        let ssrc = Int(UInt32.random(in: 1...UInt32.max))
        codec.last!.set("ssrc", ssrc)
        if isMuted { VoiceCodec.setDiscontinuous(true, encoder: codec[0]) }
        let tee = try ElementFactory.make("tee", name: "expert-sfuvoicetee")
        tee.set("allow-not-linked", true)
        let chain = capture.elements + codec + [tee]
        for e in chain { pipeline.add(e) }
        try pipeline.link(chain)
        // Downstream first (see `prepare`).
        for e in chain.reversed() { e.syncStateWithParent() }
        state.withLock { $0.sfuOut = (tee, ssrc); $0.encoder = codec[0] }
        return (tee, ssrc)
    }

    /// Another expert's voice through the SFU (a new audio pad of our subscription to the
    /// voice room, on its streaming thread): decoded into a player of its own on the same
    /// speaker (the sound server mixes them), played as soon as it arrives. The echo
    /// canceller's reference is the field's voice alone: with loudspeakers, these voices
    /// are not cancelled (docs/VOICE.md).
    func attachHeard(name: String, pad: Pad) throws(RTCError) {
        var chain = try VoiceCodec.makeDecoder(name: name)
        let player: VoicePlayback?
        do throws(VoiceError) {
            player = try VoicePlayback.make(options.speaker, withEchoProbe: false, name: name,
                                            playoutDelayNanos: UInt64(options.playoutMs) * 1_000_000,
                                            toneThresholdDB: options.toneThresholdDB,
                                            tones: onTone.flatMap { options.detectTones.isEmpty ? nil : (options.detectTones, $0) })
        } catch {
            throw .invalidArgument("the speaker for \(name): \(error)")
        }
        if let player { chain += player.elements } else {
            let sink = try ElementFactory.make("fakesink", name: "\(name)-unheard")
            sink.set("sync", false)
            chain.append(sink)
        }
        for e in chain { pipeline.add(e) }
        try pipeline.link(chain)
        for e in chain.reversed() { e.syncStateWithParent() }
        try pad.link(to: chain[0].staticPad("sink")!)
        state.withLock { $0.heard[name] = chain }
    }

    /// Takes the players of the voices named `prefix`… out (their subscription ended), on the state worker.
    func removeHeard(prefix: String) {
        let chains = state.withLock { s in
            s.heard.keys.filter { $0.hasPrefix(prefix) }.compactMap { s.heard.removeValue(forKey: $0) }
        }
        let pipeline = self.pipeline
        StateWorker.shared.submit { for chain in chains { for e in chain { pipeline.remove(e) } } }
    }

    /// The publisher's voice (webrtcbin's new audio pad, on its streaming thread): decoded
    /// into the speaker, or into nothing without one.
    func attach(_ pad: Pad) throws(RTCError) {
        var chain = try VoiceCodec.makeDecoder(name: "field")
        if playback == nil {
            let sink = try ElementFactory.make("fakesink", name: "field-novoice")
            sink.set("sync", false)
            chain.append(sink)
        }
        for e in chain { pipeline.add(e) }
        try pipeline.link(chain)
        if let playback { try chain.last!.link(playback.input) }
        for e in chain.reversed() { e.syncStateWithParent() }
        try pad.link(to: chain[0].staticPad("sink")!)
    }

    /// The direction of the first `m=audio` section ("sendrecv" when it names none).
    static func audioDirection(in sdp: String) -> String? {
        var inAudio = false, found = false
        for line in sdp.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("m=") {
                if found { break }
                inAudio = line.hasPrefix("m=audio")
                if inAudio { found = true }
                continue
            }
            guard inAudio, line.hasPrefix("a=") else { continue }
            let attribute = line.dropFirst(2)
            if ["sendrecv", "sendonly", "recvonly", "inactive"].contains(attribute) { return String(attribute) }
        }
        return found ? "sendrecv" : nil
    }
}
