internal import CGStreamer
import CGstShim
import Synchronization

/// Options of one peer connection.
public struct RTCConfiguration: Sendable {
    /// `stun://host:port`, or nil for host candidates only (loopback).
    public var stunServer: String?
    /// `turn://user:password@host:port`, or nil.
    public var turnServer: String?
    /// Media only through the TURN relay (webrtcbin's `ice-transport-policy` relay): no
    /// host or server-reflexive candidate is used, so the peer never learns our
    /// addresses and media provably goes through the relay.
    public var relayOnly = false
    /// The local addresses ICE gathers host candidates on (no link-local by default).
    public var addresses = ICEAddressPolicy()
    /// Also gather ICE-TCP host candidates (RFC 6544), for a network that blocks UDP
    /// between the peers; off by default (see `WebRTCPeer.setICETCP`).
    public var iceTCP = false
    /// Receive jitter buffer latency in milliseconds (webrtcbin's default is 200).
    public var jitterBufferLatencyMs: Int
    /// Simulated loss/delay on the outgoing RTP (netsim after the retransmission
    /// store, see `LinkSimulator`); nil for none. Changeable later through `link`.
    public var linkConditions: LinkConditions?
    /// Pace the outgoing RTP at this rate (kbit/s; `Pacer`, changeable through `pacer`);
    /// nil: packets leave as they come.
    public var pacingKbps: Int?
    /// With `pacingKbps`: the media payload type sent (every other one is a
    /// retransmission, gated by `RetransmissionGate`; nil: none gated) and the rate
    /// retransmissions may take (kbit/s; changeable through `pacer`).
    public var pacedMediaPayloadType: Int?
    /// Payload types that pass the pacer at once, their bits counted against its rate (a
    /// voice: a few small packets every 10 ms, which must not queue behind a keyframe;
    /// nor is it a retransmission for the gate).
    public var unpacedPayloadTypes: Set<Int> = []
    /// The nice level of the thread that receives the bundle (libnice's source: SRTP,
    /// the RTP session and every stream's jitter-buffer input); nil: left as it is. A
    /// voice's packets reach their jitter buffer on that thread, so the nodes raise it
    /// with their voice threads: beside two busy loops, voice at nice −10 still lost
    /// speech while this thread, at nice 0, delivered its packets late.
    public var receiveThreadNice: Int32?
    public var retransmissionBudgetKbps: Int?
    /// The certificate presented in the DTLS handshake; nil: the process's ECDSA P-256
    /// one (`DTLSCertificate.shared()`), never GStreamer's RSA default.
    public var dtlsCertificate: DTLSCertificate?
    public init(stunServer: String? = nil, turnServer: String? = nil, jitterBufferLatencyMs: Int = 200,
                linkConditions: LinkConditions? = nil) {
        self.stunServer = stunServer
        self.turnServer = turnServer
        self.jitterBufferLatencyMs = jitterBufferLatencyMs
        self.linkConditions = linkConditions
    }
}

/// A `webrtcbin` inside a `Pipeline`: offer/answer/ICE as async functions, data
/// channels, stats, and every signal and bus error on one `events` stream.
/// Signal handlers hold the peer weakly; `close()` disconnects them.
public final class WebRTCPeer: @unchecked Sendable {
    public let name: String
    public let events: AsyncStream<RTCEvent>
    package let webrtc: Element
    package let pipeline: Pipeline
    /// The impaired outgoing link, when the configuration asked for one.
    public let link: LinkSimulator?
    /// The outgoing RTP's pacer, when the configuration asked for one.
    public let pacer: Pacer?
    /// Presented in the DTLS handshake; its fingerprint goes into our offers and answers.
    public let certificate: DTLSCertificate
    private let sink: AsyncStream<RTCEvent>.Continuation
    private let state = Mutex(State())
    /// `connection-state` as webrtcbin last notified it (GST_WEBRTC_PEER_CONNECTION_STATE_NEW is 0).
    private let cachedConnectionState = Atomic<Int32>(0)
    /// Set once the peer's DTLS certificate matched its SDP (`verifyRemoteFingerprint`):
    /// media and control wait for it, read from streaming threads without a lock.
    private let verified = Atomic<Bool>(false)
    /// Packets sent and NACKed, for congestion control (`takeFeedback`).
    let feedback = FeedbackCounter()
    /// Packets received, for our own reception reports (`receptionReports`).
    let reception = ReceptionCounter()

    private struct State {
        var handlerIDs: [UInt] = []
        var busToken: UInt?
        var channels: [DataChannel] = []
        var incomingStream: (@Sendable (Pad) -> Void)?
        var closed = false
        /// `RetransmissionRequests` is connected (once, at the first receive transceiver).
        var retransmissionRequests = false
        /// The SDP of the last remote description applied: its fingerprints are checked.
        var remoteSDP: String?
    }

    public init(name: String, pipeline: Pipeline, configuration: RTCConfiguration = .init()) throws(RTCError) {
        self.name = name
        self.pipeline = pipeline
        (events, sink) = AsyncStream.makeStream(of: RTCEvent.self, bufferingPolicy: .unbounded)
        webrtc = try ElementFactory.make("webrtcbin", name: name)
        // Probe the plugins webrtcbin loads lazily, so a missing one is named now, not mid-call.
        for factory in ["nicesrc", "dtlssrtpenc", "srtpenc", "sctpenc", "rtpbin"] where !ElementFactory.isAvailable(factory) {
            _ = try ElementFactory.make(factory)
        }
        webrtc.set("bundle-policy", "max-bundle")
        webrtc.set("latency", configuration.jitterBufferLatencyMs)
        if let stun = configuration.stunServer { webrtc.set("stun-server", stun) }
        if let turn = configuration.turnServer { webrtc.set("turn-server", turn) }
        if configuration.relayOnly { webrtc.set("ice-transport-policy", "relay") }
        if let conditions = configuration.linkConditions { link = try LinkSimulator(conditions) } else { link = nil }
        pacer = configuration.pacingKbps.map {
            Pacer(rateKbps: $0, mediaPayloadType: configuration.pacedMediaPayloadType,
                  retransmissionBudgetKbps: configuration.retransmissionBudgetKbps, unpacedPayloadTypes: configuration.unpacedPayloadTypes)
        }
        if let given = configuration.dtlsCertificate { certificate = given } else { certificate = try DTLSCertificate.shared() }
        let certificate = self.certificate
        let receiveNice = configuration.receiveThreadNice
        let peerName = name, events = sink
        disableUPnP()
        setICETCP(configuration.iceTCP)
        restrictLocalAddresses(configuration.addresses)
        pipeline.add(webrtc)
        connectSignals()
        // webrtcbin makes a DTLS transport's bins while creating the offer or answer and
        // reads the transport's certificate for the SDP fingerprint right after: setting
        // `pem` on its dtlssrtpdec as the bins are added puts our certificate in both.
        // The same bins hold the receiving nicesrc, whose thread is raised there.
        let certificateHandler = Signal.connect(webrtc.object, "element-added") { (element: UnsafeMutableRawPointer?) in
            guard let element else { return }
            let added = gcast(element, to: GstElement.self)
            func prepare(_ e: UnsafeMutablePointer<GstElement>) {
                let factory = Element.factoryName(of: e)
                if factory == "dtlssrtpdec" {
                    gst_util_set_object_arg(gcast(e, to: GObject.self), "pem", certificate.pem)
                } else if factory == "nicesrc", let nice = receiveNice, let pad = gst_element_get_static_pad(e, "src") {
                    let said = Atomic<Bool>(false)
                    StreamingThreadPriority.set(on: Pad(takingOwnership: pad), nice: nice) {
                        guard !said.exchange(true, ordering: .relaxed) else { return }
                        events.yield(.pipelineWarning("\(peerName): the receiving thread stays at its priority (nice \(nice) refused: "
                                                      + "no root, CAP_SYS_NICE or RLIMIT_NICE)"))
                    }
                }
            }
            prepare(added)
            Element.forEachDescendant(of: added, prepare)
        }
        state.withLock { $0.handlerIDs.append(certificateHandler) }
        // A stream the peer may not send on is dropped and named (a pipeline warning),
        // never left to stop everything the session receives (CGstShim.h says how).
        if pcg_webrtc_drop_stray_streams(webrtc.raw) == 0 {
            sink.yield(.pipelineWarning("\(name): webrtcbin has no rtpbin; a stream sent on an m-line that receives nothing would stop this session's receiving"))
        }
        if let id = SendPath.attach(to: webrtc, pacer: pacer, transport: feedback.transport, link: link) {
            state.withLock { $0.handlerIDs.append(id) }
        }
    }

    deinit { close() }

    // MARK: Signals

    private func connectSignals() {
        let object = webrtc.object
        let sink = self.sink
        var ids: [UInt] = []
        ids.append(Signal.connect(object, "on-negotiation-needed") { sink.yield(.negotiationNeeded) })
        ids.append(Signal.connect(object, "on-ice-candidate") { (mline: UInt32, candidate: String) in
            sink.yield(.localCandidate(ICECandidate(mlineIndex: mline, candidate: candidate)))
        })
        ids.append(Signal.connect(object, "on-data-channel") { [weak self] (channel: UnsafeMutableRawPointer?) in
            guard let self, let channel else { return }
            g_object_ref(channel)   // the signal lends it; the wrapper owns a reference
            let wrapped = DataChannel(takingOwnership: channel, sink: sink)
            self.state.withLock { $0.channels.append(wrapped) }
            sink.yield(.dataChannel(wrapped))
        })
        ids.append(Signal.connect(object, "pad-added") { [weak self] (pad: UnsafeMutableRawPointer?) in
            guard let self, let pad else { return }
            let wrapped = Pad(retaining: gcast(pad, to: GstPad.self))
            guard wrapped.isSource else { return }
            let handler = self.state.withLock { $0.incomingStream }
            sink.yield(.incomingStream(pad: wrapped.name, caps: wrapped.capsDescription))
            handler?(wrapped)
        })
        // Each state property, read back on change and reported as its enum.
        func watch<S: RawRepresentable & Sendable>(_ property: String,
                                        _ event: @escaping @Sendable (S) -> RTCEvent) -> UInt where S.RawValue == Int32 {
            Signal.connect(object, "notify::\(property)") { [weak self] (_: UnsafeMutableRawPointer?) in
                guard let self, let value = S(rawValue: self.webrtc.int(property)) else { return }
                sink.yield(event(value))
            }
        }
        // The connection state is also kept here, so streaming threads can read it without
        // `g_object_get` on webrtcbin: its property getter takes the peer connection lock,
        // which webrtcbin holds while it waits on streaming threads (a deadlock, see
        // docs/THREADING.md).
        ids.append(Signal.connect(object, "notify::connection-state") { [weak self] (_: UnsafeMutableRawPointer?) in
            guard let self else { return }
            let raw = self.webrtc.int("connection-state")
            self.cachedConnectionState.store(raw, ordering: .releasing)
            if let value = PeerConnectionState(rawValue: raw) { sink.yield(.connectionState(value)) }
        })
        ids.append(watch("ice-connection-state", RTCEvent.iceConnectionState))
        ids.append(watch("ice-gathering-state", RTCEvent.iceGatheringState))
        ids.append(watch("signaling-state", RTCEvent.signalingState))
        // Only this session's elements: another peer's errors are not this session's.
        let token = pipeline.addObserver(.within(webrtc)) { message in
            switch message {
            case let .error(source, text, debug): sink.yield(.pipelineError(.pipeline(source: source, message: text, debug: debug)))
            case let .warning(source, text, _): sink.yield(.pipelineWarning("\(source): \(text)"))
            default: break
            }
        }
        state.withLock { $0.handlerIDs = ids; $0.busToken = token }
    }

    /// Called synchronously on the streaming thread for each receive pad; it must
    /// link the pad before returning (an unlinked pad stops the stream).
    package func onIncomingStream(_ body: @escaping @Sendable (Pad) -> Void) {
        state.withLock { $0.incomingStream = body }
    }

    /// Puts an error found by code built around this peer (e.g. a receive branch) on `events`.
    package func report(_ error: RTCError) { sink.yield(.pipelineError(error)) }

    // MARK: Offer / answer / ICE

    public func createOffer() async throws(RTCError) -> SessionDescription {
        try await createDescription("create-offer", field: "offer", kind: .offer)
    }

    public func createAnswer() async throws(RTCError) -> SessionDescription {
        try await createDescription("create-answer", field: "answer", kind: .answer)
    }

    public func setLocalDescription(_ description: SessionDescription) async throws(RTCError) {
        try await applyDescription("set-local-description", description)
    }

    public func setRemoteDescription(_ description: SessionDescription) async throws(RTCError) {
        try await applyDescription("set-remote-description", description)
        state.withLock { $0.remoteSDP = description.sdp }
        // Transport-wide feedback only from a receiver whose answer kept the extension
        // our offer named (a browser); with a pacer only, where packets are numbered.
        if description.kind == .answer, pacer != nil, let id = description.transportWideCCExtensionID {
            feedback.transport.enable(id: id)
        }
    }

    /// The SDP of the remote description last applied, nil before one.
    public var remoteDescriptionSDP: String? { state.withLock { $0.remoteSDP } }

    /// True once the peer's DTLS certificate matched a fingerprint of its SDP.
    public var isVerified: Bool { verified.load(ordering: .acquiring) }

    func markVerified() { verified.store(true, ordering: .releasing) }

    /// Adds a remote candidate; one `ICECandidateCheck` refuses throws `.candidateRefused`.
    public func addICECandidate(_ candidate: ICECandidate) throws(RTCError) {
        try ensureOpen()
        // webrtcbin would drop a bad one with only a GStreamer warning: refuse it here, saying why.
        let mediaCount = remoteDescriptionSDP.map(ICECandidateCheck.mediaCount(ofSDP:))
        if let refusal = ICECandidateCheck.refusal(candidate, mediaCount: mediaCount) { throw .candidateRefused(refusal) }
        pcg_webrtc_add_ice_candidate(webrtc.raw, guint(candidate.mlineIndex), candidate.candidate)
    }

    private func createDescription(_ signal: String, field: String,
                                   kind: SessionDescription.Kind) async throws(RTCError) -> SessionDescription {
        try ensureOpen()
        let webrtc = self.webrtc
        guard let reply = try await awaitPromise("\(name) \(signal)", { promise in
            pcg_emit_with_promise(webrtc.object, signal, nil, promise)
        }), let value = reply.value(field),
            let boxed = g_value_get_boxed(value)?.assumingMemoryBound(to: GstWebRTCSessionDescription.self),
            let text = gst_sdp_message_as_text(boxed.pointee.sdp) else {
            throw .negotiation(peer: name, reason: "\(signal) replied without an \(field)")
        }
        defer { g_free(text) }
        // webrtcbin's own fingerprint is wrong for a certificate it did not generate (see DTLSCertificate).
        return SessionDescription(kind: kind, sdp: certificate.withFingerprint(in: String(cString: text)))
    }

    private func applyDescription(_ signal: String, _ description: SessionDescription) async throws(RTCError) {
        try ensureOpen()
        let gstDescription = try SDPMessage(parsing: description.sdp).takeDescription(description.kind)
        defer { gst_webrtc_session_description_free(gstDescription) }
        let webrtc = self.webrtc
        _ = try await awaitPromise("\(name) \(signal)", { promise in
            pcg_emit_with_promise(webrtc.object, signal, UnsafeMutableRawPointer(gstDescription), promise)
        })
    }

    // MARK: Transceivers

    /// Adds a receive-only transceiver whose codec preferences are the offer's own
    /// payload types (with their `extmap` attributes), keeping only `encodings` and
    /// the RTX types that repair them (`apt`), with NACK on: the jitter buffer asks for
    /// lost packets again. webrtcbin 1.22 answers a header extension only when its
    /// transceiver's caps carry it, so this must run before `setRemoteDescription(offer)`.
    public func addReceiveTransceiver(matching offer: SessionDescription, media: String = "video",
                                      encodings: Set<String>) throws(RTCError) {
        try ensureOpen()
        let sdp = try SDPMessage(parsing: offer.sdp)
        guard let message = sdp.raw else { throw .invalidDescription("empty offer") }
        let preferences = gst_caps_new_empty()!
        defer { gst_caps_unref(preferences) }
        // RTX entries wait until the payload types they repair are known.
        var rtx: [(apt: String, caps: UnsafeMutablePointer<GstCaps>)] = []
        var kept: Set<String> = []
        for m in 0..<gst_sdp_message_medias_len(message) {
            guard let sdpMedia = gst_sdp_message_get_media(message, m),
                  String(cString: gst_sdp_media_get_media(sdpMedia)) == media else { continue }
            for f in 0..<gst_sdp_media_formats_len(sdpMedia) {
                guard let pt = Int32(String(cString: gst_sdp_media_get_format(sdpMedia, f))),
                      let caps = gst_sdp_media_get_caps_from_media(sdpMedia, pt) else { continue }
                _ = gst_sdp_media_attributes_to_caps(sdpMedia, caps)
                let s = gst_caps_get_structure(caps, 0)!
                gst_structure_set_name(s, "application/x-rtp")
                // attributes_to_caps also turns session attributes into `a-*` fields
                // (a-ice-ufrag, a-fingerprint, a-setup …) and ssrc lines into `ssrc-*`;
                // webrtcbin would copy them into our answer as if they were ours.
                var foreign: [String] = []
                for i in 0..<gst_structure_n_fields(s) {
                    let field = String(cString: gst_structure_nth_field_name(s, UInt32(i)))
                    if field.hasPrefix("a-") || field.hasPrefix("ssrc-") { foreign.append(field) }
                }
                for field in foreign { gst_structure_remove_field(s, field) }
                let encoding = gst_structure_get_string(s, "encoding-name").map { String(cString: $0) } ?? ""
                if encodings.contains(encoding.uppercased()) {
                    kept.insert(String(pt))
                    gst_caps_append(preferences, caps)   // takes ownership of caps
                } else if encoding.uppercased() == "RTX", let apt = gst_structure_get_string(s, "apt") {
                    rtx.append((String(cString: apt), caps))
                } else {
                    gst_caps_unref(caps)
                }
            }
        }
        for (apt, caps) in rtx {
            if kept.contains(apt) { gst_caps_append(preferences, caps) } else { gst_caps_unref(caps) }
        }
        guard gst_caps_is_empty(preferences) == 0 else {
            throw .negotiation(peer: name, reason: "offer has no \(media) payload among \(encodings.sorted())")
        }
        guard let transceiver = pcg_webrtc_add_transceiver(webrtc.raw, GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY,
                                                           preferences) else {
            throw .negotiation(peer: name, reason: "add-transceiver refused")
        }
        // NACK: the transceiver's jitter buffer gets do-retransmission.
        gst_util_set_object_arg(gcast(UnsafeMutableRawPointer(transceiver), to: GObject.self), "do-nack", "true")
        gst_object_unref(UnsafeMutableRawPointer(transceiver))
        let first = state.withLock { s in defer { s.retransmissionRequests = true }; return !s.retransmissionRequests }
        if first, !RetransmissionRequests.enable(on: webrtc) {
            throw .negotiation(peer: name, reason: "webrtcbin has no internal rtpbin to turn NACKs on in")
        }
    }

    /// Requests a send pad (`sink_%u`) and makes its transceiver send-only. With
    /// `codecPreferences` (caps text) the offer is built from them at once, instead of
    /// waiting for caps to reach the pad.
    /// `direction`: the transceiver's (`sendrecv` for a voice both ways). `isVideo`: an
    /// RTX payload type with answers to NACKs, and its packets counted for congestion
    /// control (the receiver's reports are matched to the video's SSRC); a voice has
    /// neither (Opus conceals a loss and carries FEC).
    package func requestSendPad(codecPreferences: String? = nil, direction: String = "sendonly",
                                isVideo: Bool = true) throws(RTCError) -> Pad {
        try ensureOpen()
        guard let pad = webrtc.requestPad("sink_%u") else {
            throw .negotiation(peer: name, reason: "webrtcbin refused a sink pad")
        }
        guard let transceiver = pcg_object_get_pointer(UnsafeMutableRawPointer(pad.raw), "transceiver") else {
            throw .negotiation(peer: name, reason: "sink pad has no transceiver")
        }
        defer { g_object_unref(transceiver) }
        gst_util_set_object_arg(gcast(UnsafeMutableRawPointer(transceiver), to: GObject.self), "direction", direction)
        // NACK: the offer carries an RTX payload type and rtprtxsend answers the receiver's NACKs.
        if isVideo { gst_util_set_object_arg(gcast(UnsafeMutableRawPointer(transceiver), to: GObject.self), "do-nack", "true") }
        if let codecPreferences {
            guard let caps = gst_caps_from_string(codecPreferences) else {
                throw .invalidArgument("codec preferences do not parse: \(codecPreferences)")
            }
            pcg_object_set_pointer(transceiver, "codec-preferences", UnsafeMutableRawPointer(caps))
            gst_caps_unref(caps)
        }
        if isVideo { countSentPackets(on: pad) }
        return pad
    }

    /// Stops rtpbin's lip sync (RTCP sender reports shifting one stream's timestamps to
    /// line up with another's): it aligns the streams for sinks that all play on the
    /// clock, and would hold a voice back by the video's pipeline delay here, where the
    /// video is shown as soon as it is decoded and the voice keeps in step with it by
    /// its own short playout (`AudioProbes.playSoon`). rtpbin ignores an offset
    /// larger than `max-ts-offset`: 1 ns ignores every one.
    package func disableLipSync() {
        guard let rtpbin = gst_bin_get_by_name(gcast(webrtc.object, to: GstBin.self), "rtpbin") else { return }
        defer { gst_object_unref(UnsafeMutableRawPointer(rtpbin)) }
        gst_util_set_object_arg(gcast(UnsafeMutableRawPointer(rtpbin), to: GObject.self), "max-ts-offset", "1")
    }

    // MARK: Data channels

    /// Opens a data channel (reliable and ordered unless told otherwise).
    public func createDataChannel(_ label: String, ordered: Bool = true,
                                  maxRetransmits: Int? = nil) throws(RTCError) -> DataChannel {
        try ensureOpen()
        var options = "application/data-channel, ordered=(boolean)\(ordered)"
        if let maxRetransmits { options += ", max-retransmits=(int)\(maxRetransmits)" }
        let structure = gst_structure_from_string(options, nil)
        defer { if let structure { gst_structure_free(structure) } }
        guard let raw = pcg_webrtc_create_data_channel(webrtc.raw, label, structure) else {
            throw .dataChannel(label: label, reason: "webrtcbin refused to create it (is the pipeline playing?)")
        }
        let channel = DataChannel(takingOwnership: UnsafeMutableRawPointer(raw), sink: sink)
        state.withLock { $0.channels.append(channel) }
        return channel
    }

    // MARK: Stats and state

    public func stats() async throws(RTCError) -> RTCStats {
        try ensureOpen()
        let webrtc = self.webrtc
        guard let reply = try await awaitPromise("\(name) get-stats", { promise in
            pcg_emit_with_promise(webrtc.object, "get-stats", nil, promise)
        }) else { throw .negotiation(peer: name, reason: "get-stats replied nothing") }
        return RTCStats(reply)
    }

    /// The connection state as last announced by webrtcbin (never reads the property:
    /// safe from streaming threads and pad probes).
    public var connectionState: PeerConnectionState {
        PeerConnectionState(rawValue: cachedConnectionState.load(ordering: .acquiring)) ?? .closed
    }

    public var iceConnectionState: ICEConnectionState {
        ICEConnectionState(rawValue: webrtc.int("ice-connection-state")) ?? .closed
    }

    /// Disconnects every handler, closes the data channels and ends `events`. Idempotent.
    public func close() {
        let (ids, token, channels) = state.withLock { s -> ([UInt], UInt?, [DataChannel]) in
            if s.closed { return ([], nil, []) }
            s.closed = true
            defer { s.handlerIDs = []; s.channels = []; s.incomingStream = nil }
            return (s.handlerIDs, s.busToken, s.channels)
        }
        for id in ids { Signal.disconnect(webrtc.object, id) }
        if let token { pipeline.removeObserver(token) }
        for channel in channels { channel.close() }
        pacer?.stop()
        sink.finish()
    }

    private func ensureOpen() throws(RTCError) {
        if state.withLock({ $0.closed }) { throw .closed("peer \(name)") }
    }
}
