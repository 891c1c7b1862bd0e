import PoseCastKit
import CameraControl
import RTCSession
import SyntheticCamera
import Synchronization
import Dispatch
import NodeOutput
#if canImport(Glibc)
import Glibc
import PoseMedia
#endif
import VideoEffects
import Voice

/// Subscriber branches: one queue → webrtcbin per subscriber off the tee of its pose
/// transport, the link each one's packets cross, and their removal.
extension PublisherMedia {
    /// Adds a subscriber branch (tee → queue → new webrtcbin) and returns its peer; the
    /// caller drives the offer. Call after `start()`: the branch's codec preferences are
    /// its payloader's negotiated caps (with the pose `extmap` for `.headerExtension`,
    /// without for `.trailer`), so the offer is exact.
    /// With voice, the branch also gets an audio transceiver (after the video's: m-line 1),
    /// sendrecv when `mayTalk`, else send-only.
    /// `declaresSSRC`: the offer names the payloader's SSRC and, in an `ssrc-group:FID`,
    /// the SSRC of its retransmissions (webrtcbin writes both, and maps rtprtxsend to the
    /// second, when the preferences carry the first): an SFU routes by them (Janus drops
    /// RTX packets of an SSRC nobody declared).
    public func addPeer(name: String, poseTransport: PoseTransport = .headerExtension,
                        mayTalk: Bool = true, declaresSSRC: Bool = false) async throws(RTCError) -> WebRTCPeer {
        guard let (source, tee) = fanout.output(for: poseTransport) else {
            throw .negotiation(peer: name, reason: "a pose SEI needs H.264; this publisher sends \(config.codec.rawValue)")
        }
        var preferences = try await sendCaps(from: source)
        if declaresSSRC, let ssrc = source.capsUInt("ssrc") { preferences += ", ssrc=(uint)\(ssrc)" }
        var rtc = config.rtc
        rtc.linkConditions = state.withLock { $0.linkConditions }
        rtc.pacingKbps = Self.pacingKbps(forEncoderKbps: bitrateKbps)
        rtc.pacedMediaPayloadType = config.codec.payloadType
        rtc.retransmissionBudgetKbps = Self.retransmissionBudgetKbps(forAllowedKbps: bitrateKbps)
        // It receives only the experts' voices: a short jitter buffer (see PublisherVoice).
        if voice != nil {
            rtc.jitterBufferLatencyMs = PublisherVoice.receiveLatencyMs
            rtc.unpacedPayloadTypes = [VoiceFormat.payloadType]
            rtc.receiveThreadNice = VoiceThreadPriority.nice
        }
        let peer = try WebRTCPeer(name: name, pipeline: pipeline, configuration: rtc)
        let queue = try ElementFactory.make("queue", name: "\(name)-queue")
        queue.set("leaky", "downstream")          // a stalled subscriber never blocks the encoder
        queue.set("max-size-buffers", 60)
        // Each overrun drops the oldest item: RTP that never reaches the retransmission
        // store, so the receiver's NACKs for it go unanswered (a loss burst).
        let drops = branchDrops
        _ = Signal.connect(queue.object, "overrun") { drops.add(1) }
        pipeline.add(queue)
        let sendPad = try peer.requestSendPad(codecPreferences: preferences)
        try queue.staticPad("src")!.link(to: sendPad)
        guard let teePad = tee.requestPad("src_%u") else { throw .linkFailed(from: "tee", to: name) }
        // Until the peer connects its frames would only pile up and arrive late: drop
        // them at the tee. The first frame after the connection opens the gate and asks
        // the encoder for a keyframe, so a subscriber joining mid-stream sees a picture
        // at once.
        let gate = BranchGate()
        // Weak: the pad owns this closure; the branch entry below owns the wrappers.
        teePad.watch(.media) { [weak peer, weak teePad] _ in
            if gate.isOpen { return .pass }
            // Connected and its DTLS certificate checked against its answer (an atomic).
            guard let peer, peer.isVerified else { return .drop }
            gate.open()
            // Not from this streaming thread: the event travels back up through it.
            if let pad = teePad { DispatchQueue.global().async { pad.requestKeyframeUpstream() } }
            return .pass
        }
        // The branch must be running before the tee can push into it: a pad linked to a
        // queue still in NULL is flushing, the tee's next push (its sticky events go
        // before the gate probe sees the buffer) returns FLUSHING, and tee hands that up
        // to the encoder queue and the source, whose tasks pause for good: the start-up
        // stall (docs/THREADING.md). So: states first, link last.
        queue.syncStateWithParent()
        peer.webrtc.syncStateWithParent()
        if let voice {
            // The expert's voice arrives on a new pad of its webrtcbin (linked at once, on its thread).
            peer.onIncomingStream { [weak voice, weak peer] pad in
                guard let voice, let peer else { return }
                do throws(RTCError) { try voice.attachVoice(name: name, pad: pad) } catch { peer.report(error) }
            }
            try voice.addBranch(name: name, peer: peer, mayTalk: mayTalk, intoSFU: declaresSSRC)
        }
        try teePad.link(to: queue.staticPad("sink")!)
        state.withLock { $0.peers[ObjectIdentifier(peer)] = (peer, queue, teePad, tee) }
        if poseTransport == .sei { seiWriter.addConsumer() }
        return peer
    }

    /// The payloader's output caps without per-stream fields, plus the RTCP feedback we
    /// answer (PLI/FIR for keyframes, NACK; REMB is added to the offer's text, as
    /// webrtcbin drops it from caps: `SessionDescription.addingFeedback`). Waits up to 5 s for the first frame's caps
    /// (`notify::caps` on the payloader's source pad, no polling).
    private func sendCaps(from payloaderSource: Pad) async throws(RTCError) -> String {
        guard await payloaderSource.waitForCaps(timeout: .seconds(5)),
              // Per-stream and per-keyframe fields would pin the branch to one caps
              // instance (sprop-parameter-sets changes with H.264 parameter sets).
              let caps = payloaderSource.negotiatedCaps(removing: [
                  "ssrc", "timestamp-offset", "seqnum-offset", "sprop-parameter-sets"]) else {
            throw .negotiation(peer: "publisher", reason: "no frame reached the payloader within 5 s (is the source producing?)")
        }
        let level = config.codec.profileLevelID(width: config.width, height: config.height, fps: config.fps,
                                                bitrateKbps: config.bitrateKbps)
        let declared = caps.contains("profile-level-id") ? "" : level.map { ", profile-level-id=(string)\($0)" } ?? ""
        return caps + declared + ", rtcp-fb-nack-pli=(boolean)true, rtcp-fb-ccm-fir=(boolean)true, rtcp-fb-nack=(boolean)true"
    }

    /// Changes the simulated loss/delay on every subscriber's link, now and for later
    /// ones (e.g. 0 to stop the loss mid-stream). Needs `config.rtc.linkConditions` set
    /// (`.perfect` is enough): the netsim goes in when a peer is created.
    public func setLinkConditions(_ conditions: LinkConditions) throws(RTCError) {
        guard config.rtc.linkConditions != nil else {
            throw .invalidArgument("the publisher was created without link conditions (set config.rtc.linkConditions)")
        }
        try conditions.validate()
        let peers = state.withLock { s -> [WebRTCPeer] in
            s.linkConditions = conditions
            return s.peers.values.map(\.peer)
        }
        for peer in peers { try peer.link?.update(conditions) }
    }

    /// Closes a subscriber's peer and frees its branch, without blocking the caller: the
    /// tee pad is unlinked behind an IDLE probe (never while a buffer is passing through
    /// it), then the branch's webrtcbin and its queue go to NULL and leave the pipeline on the
    /// state worker (setting webrtcbin to NULL joins its threads).
    public func removePeer(_ peer: WebRTCPeer) {
        guard let entry = state.withLock({ s in
            s.controllers[ObjectIdentifier(peer)] = nil
            return s.peers.removeValue(forKey: ObjectIdentifier(peer))
        }) else { return }
        entry.peer.close()
        if let sei = fanout.sei, entry.tee.raw == sei.tee.raw { seiWriter.removeConsumer() }
        voice?.removeBranch(name: entry.peer.name)
        let (tee, pipeline) = (entry.tee, self.pipeline)
        let sinkPad = entry.queue.staticPad("sink")!
        entry.teePad.unlinkWhenIdle(from: sinkPad) {
            StateWorker.shared.submit {
                tee.releaseRequestPad(entry.teePad)
                // Downstream first, as a bin goes down: the queue's thread may be waiting
                // in a sink of webrtcbin's for preroll (a peer whose DTLS never finished),
                // holding its stream lock; webrtcbin to NULL wakes it, and only then can
                // the queue's task be stopped (the other order deadlocked the state worker).
                pipeline.remove(entry.peer.webrtc)
                pipeline.remove(entry.queue)
            }
        }
    }
}
