import PoseCastKit
import RTCSession
import Synchronization
import PoseMedia
import Voice

public struct SubscriberMediaConfig: Sendable {
    public enum Sink: Sendable, Equatable {
        /// Decode and drop (headless, tests, benchmarks).
        case discard
        /// Show in a window that scales the picture (`VideoWindow`).
        case display
    }
    public var sink: Sink = .discard
    /// Read the frame id written into the picture by a publisher with `stampFrameIDs`.
    public var readFrameStamps = false
    public var codecs: Set<VideoCodec> = Set(VideoCodec.allCases)
    public var rtc = RTCConfiguration()
    /// Presses, keys and the close of the window (`.display` only), on GStreamer's threads.
    public var onWindowInput: (@Sendable (WindowInput) -> Void)?
    /// The window each session's picture is drawn into (`.display`; the app's one
    /// `ExpertWindow`, which also draws the HUD): nil, and the sink opens a window of its
    /// own per session with the HUD drawn into the picture.
    var window: ExpertWindow?
    /// A copy of every decoded picture with its frame (costly: tests and measurements).
    public var onPicture: (@Sendable (DecodedPicture) -> Void)?
    /// The sink renders each frame at its running time plus the pipeline latency (a video
    /// sink's default; the `baseline` latency profile) instead of as soon as it is decoded.
    public var syncToClock = false
    /// Each frame's decode timing and the moment the sink rendered it (the window: the
    /// moment it reached the window's sink), on the streaming thread (keep it quick).
    public var onShown: (@Sendable (ShownFrameTiming) -> Void)?
    /// How the frames should carry their pose: asked for in our signaling meta
    /// (`PoseTransport.metaKey`). With `.trailer` or `.sei` (or through an SFU, which
    /// carries whichever the publisher writes) the pose is read from the frame itself
    /// after the depayloader: a trailer is stripped (`PoseTrailerReader`), an H.264 SEI
    /// read (`PoseSEIReader`), and either attached as pose meta.
    public var poseTransport: PoseTransport = .headerExtension
    /// Compare sampled decoded frames with the publisher's references (benchmarks:
    /// `QualitySampling`); each comparison goes to `onQuality`, off the streaming thread.
    public var qualitySampling: QualitySampling?
    public var onQuality: (@Sendable (QualityResult) -> Void)?
    /// Two-way voice (`SubscriberVoice`); nil: no audio (an offered audio m-line is then
    /// answered by webrtcbin alone and its stream dropped).
    public var voice: VoiceOptions?
    /// The tones of `voice.detectTones` starting and stopping where the expert hears them.
    public var onTone: (@Sendable (ToneChange) -> Void)?
    /// Each white frame (the publisher's `--flash`): its capture and decode instants (wall clock).
    public var onFlash: (@Sendable (_ captureNanos: UInt64, _ shownNanos: UInt64) -> Void)?
    public init() {}
}

public struct SubscriberMediaStats: Sendable {
    public var framesDecoded: UInt64 = 0
    public var framesWithPose: UInt64 = 0
    public var framesWithoutPose: UInt64 = 0
    public var posesRejected: [String: Int] = [:]
    /// With an in-band `poseTransport`: frames whose trailer was read, and problems.
    public var trailer: InBandPoseStats?
    /// With an in-band `poseTransport` and H.264: frames whose pose SEI was read, and problems.
    public var sei: InBandPoseStats?

    /// What carried the poses read: `sei`, `trailer`, `headerExtension`, or nil before any.
    public var poseCarrier: String? {
        if let sei, sei.frames > 0 { return PoseTransport.sei.rawValue }
        if let trailer, trailer.frames > 0 { return PoseTransport.trailer.rawValue }
        return framesWithPose > 0 ? PoseTransport.headerExtension.rawValue : nil
    }
}

/// webrtcbin → depayloader (pose extension from the negotiated extmap) → decoder →
/// **pose read** → sink. The publisher offers; `answer(_:)` applies it.
public final class SubscriberMedia: @unchecked Sendable {
    public let pipeline: Pipeline
    public let peer: WebRTCPeer
    public let config: SubscriberMediaConfig
    public let rejections = PoseRejectionCounter()
    /// The expert's voice; nil without `config.voice`.
    public let voice: SubscriberVoice?
    private let state = Mutex(State())

    private struct State {
        var readers: [PoseReader] = []
        var trailerReaders: [PoseTrailerReader] = []
        var seiReaders: [PoseSEIReader] = []
        var branches: [Element] = []
        /// Each video stream's decoder: where a keyframe request starts upstream.
        var decoders: [Element] = []
        var windows: [VideoWindow] = []
        /// The window made with the pipeline, waiting for the first stream.
        var readyWindow: VideoWindow?
    }

    public init(config: SubscriberMediaConfig, name: String = "subscriber",
                onFrame: (@Sendable (DecodedFrame) -> Void)? = nil) throws(RTCError) {
        try PoseHeaderExtension.register()
        self.config = config
        pipeline = try Pipeline(name: name)
        var rtc = config.rtc
        // The field's voice reaches its jitter buffer on the receiving thread.
        if config.voice != nil { rtc.receiveThreadNice = VoiceThreadPriority.nice }
        peer = try WebRTCPeer(name: "\(name)-webrtc", pipeline: pipeline, configuration: rtc)
        let pipeline = self.pipeline
        do throws(VoiceError) {
            if let options = config.voice {
                voice = try SubscriberVoice(options: options, pipeline: pipeline, onTone: config.onTone)
            } else {
                voice = nil
            }
        } catch { throw .invalidArgument("voice: \(error)") }
        // Fail now, not mid-call, if a decoder we would negotiate is missing.
        for codec in config.codecs { _ = try codec.makeDecodeChain() }
        // The window goes up with the pipeline, not when the first frame arrives: the GL
        // sink's set-up (some 100 ms) then no longer holds up the first frames, which used
        // to be shown 150 ms late, one after the other.
        if config.sink == .display {
            let window = try makeWindow()
            state.withLock { $0.readyWindow = window }
        }
        peer.onIncomingStream { [weak self] pad in
            guard let self else { return }
            do throws(RTCError) { try self.attachDecodeBranch(to: pad, onFrame: onFrame) } catch {
                self.peer.report(error)
            }
        }
    }

    deinit { pipeline.stop() }

    public func start() throws(RTCError) { try pipeline.play() }

    /// Blocks (≤ 2 s) until the pipeline has reached PLAYING: webrtcbin must be fully
    /// up before a transceiver is added and an offer applied, or its transports can
    /// come out with different DTLS fingerprints ("Fingerprint in media 1 differs").
    /// Starts the pipeline and waits (on the state worker, driven by the bus, at most 2 s)
    /// until it is PLAYING; returns whether it got there.
    @discardableResult
    public func startAndWaitUntilPlaying() async throws(RTCError) -> Bool { try await pipeline.start(timeout: .seconds(2)) }
    /// Blocks the calling thread while the pipeline goes to NULL: use `shutDown()` from async code.
    public func stop() { peer.close(); pipeline.stop() }
    /// `stop()` on the state worker.
    public func shutDown() async { peer.close(); await pipeline.shutDown() }

    /// Incoming video streams webrtcbin announced and a decode branch was linked to
    /// (0 while no RTP has arrived: a stalled session's first diagnostic).
    public var decodeBranchCount: Int { state.withLock { $0.readers.count } }

    /// Asks the publisher for a keyframe on every video stream: an upstream force-key-unit
    /// event from each decoder, which the RTP session turns into an RTCP PLI (as the
    /// depayloader does by itself once per loss it sees). A PLI, not a FIR: Janus 1.1.2
    /// forwards a subscriber's PLI to the publisher but not its FIR (four subscribers
    /// joining at once: with FIR, 8 of 20 decoded nothing for 3.3-3.6 s although they
    /// asked twice; with PLI, each late one started about 1 s after it asked), and every
    /// sender honours a PLI. Runs the elements' event handlers: call it off the
    /// cooperative pool. Returns how many streams took it.
    @discardableResult
    public func requestKeyframe() -> Int {
        let pads = state.withLock { $0.decoders }.compactMap { $0.staticPad("src") }
        return pads.filter { $0.requestKeyframeUpstream(allHeaders: false) }.count
    }

    public var stats: SubscriberMediaStats {
        let (readers, trailerReaders, seiReaders) = state.withLock { ($0.readers, $0.trailerReaders, $0.seiReaders) }
        let decoded = readers.reduce(0) { $0 + $1.framesDecoded }, withPose = readers.reduce(0) { $0 + $1.framesWithPose }
        var trailer: InBandPoseStats?
        var sei: InBandPoseStats?
        if config.poseTransport.isInBand {
            trailer = trailerReaders.map(\.stats).reduce(InBandPoseStats(), +)
            if !seiReaders.isEmpty { sei = seiReaders.map(\.stats).reduce(InBandPoseStats(), +) }
        }
        return SubscriberMediaStats(framesDecoded: decoded, framesWithPose: withPose,
                                    framesWithoutPose: decoded - withPose, posesRejected: rejections.byReason, trailer: trailer, sei: sei)
    }

    /// Adds the receive transceiver (with the offer's extmap), applies the offer and
    /// returns the local answer to send back.
    /// `dtlsServer`: answer `a=setup:passive`, so the offerer starts the DTLS handshake
    /// (webrtcbin's own answer is `active`).
    public func answer(_ offer: SessionDescription, dtlsServer: Bool = false) async throws(RTCError) -> SessionDescription {
        guard offer.kind == .offer else { throw .invalidDescription("expected an offer, got \(offer.kind.rawValue)") }
        try peer.addReceiveTransceiver(matching: offer, encodings: Set(config.codecs.map(\.encodingName)))
        // Janus (the DTLS client) offers the field's voice send-only to every subscriber; an
        // expert's own voice goes by a feed of its own, once the publisher routes it.
        try voice?.prepare(for: offer, peer: peer,
                           listenOnlyBecause: dtlsServer ? "through the SFU our voice goes by a feed of its own, once the publisher routes it" : nil)
        try await peer.setRemoteDescription(offer)
        var answer = try await peer.createAnswer()
        if dtlsServer { answer = answer.settingDTLSRole(.passive) }
        try await peer.setLocalDescription(answer)
        return answer
    }

    /// Shows `text` over the picture of every window (the HUD); empty hides it.
    public func setHUD(_ text: String) {
        for window in state.withLock({ $0.windows }) { window.setHUD(text) }
    }

    /// A window's elements, added to the pipeline and linked (its input, the queue, left
    /// free); `running`: brought to the pipeline's state now (else they start with it).
    private func makeWindow(running: Bool = false) throws(RTCError) -> VideoWindow {
        let window = try VideoWindow(onInput: config.onWindowInput, window: config.window)
        if let onInput = config.onWindowInput {
            window.watchClose(in: pipeline, onInput: onInput) { [peer] error in peer.report(error) }
        }
        for e in window.elements { pipeline.add(e) }
        try pipeline.link(window.elements)
        if running { for e in window.elements { e.syncStateWithParent() } }
        state.withLock { $0.windows.append(window); $0.branches += window.elements }
        return window
    }

    private func attachDecodeBranch(to pad: Pad, onFrame: (@Sendable (DecodedFrame) -> Void)?) throws(RTCError) {
        if pad.capsField("media") == "audio" {
            if let voice { return try voice.attach(pad) }
            // Audio we did not ask for: decoded into nothing, so the stream does not stall.
            let sink = try ElementFactory.make("fakesink")
            sink.set("sync", false)
            pipeline.add(sink)
            sink.syncStateWithParent()
            return try pad.link(to: sink.staticPad("sink")!)
        }
        guard let encoding = pad.capsField("encoding-name"), let codec = VideoCodec(encodingName: encoding),
              config.codecs.contains(codec) else {
            throw .negotiation(peer: peer.name, reason: "incoming stream has unsupported caps \(pad.capsDescription)")
        }
        var chain = try codec.makeDecodeChain()
        let decoder = chain.last!
        switch config.sink {
        case .discard:
            let sink = try ElementFactory.make("fakesink")
            sink.set("sync", config.syncToClock)
            if config.syncToClock {
                // As a video sink does by default (xvimagesink in 1.22): drop frames later
                // than 5 ms, send QoS upstream.
                sink.set("max-lateness", 5_000_000)
                sink.set("qos", true)
            }
            chain.append(sink)
            if let onShown = config.onShown { DecodeTimer(report: onShown).install(decoder: decoder, sink: sink) }
        case .display:
            break
        }
        for e in chain { pipeline.add(e) }
        try pipeline.link(chain)
        if config.sink == .display {
            // The window made with the pipeline; another stream gets a window of its own.
            let ready = state.withLock { s in defer { s.readyWindow = nil }; return s.readyWindow }
            let window: VideoWindow
            if let ready { window = ready } else { window = try makeWindow(running: true) }
            if let onShown = config.onShown, let sink = window.elements.last {
                DecodeTimer(report: onShown).install(decoder: decoder, shownAt: sink.staticPad("sink")!)
            }
            try pipeline.link([decoder, window.elements[0]])
        }

        state.withLock { $0.decoders.append(decoder) }
        let reader = PoseReader(codec: codec, readStamps: config.readFrameStamps, rejections: rejections,
                                onFrame: onFrame, onPicture: config.onPicture)
        reader.install(on: decoder.staticPad("src")!)
        if let onFlash = config.onFlash { FlashProbe.install(on: decoder.staticPad("src")!, report: onFlash) }
        if let sampling = config.qualitySampling, let onQuality = config.onQuality {
            QualityProbe(sampling: sampling, onResult: onQuality).install(on: decoder.staticPad("src")!)
        }
        if config.poseTransport.isInBand {
            let trailerReader = PoseTrailerReader(rejections: rejections)
            trailerReader.install(on: chain[0].staticPad("src")!)
            state.withLock { $0.trailerReaders.append(trailerReader) }
            if codec == .h264 {
                let seiReader = PoseSEIReader(rejections: rejections)
                seiReader.install(on: chain[0].staticPad("src")!)
                state.withLock { $0.seiReaders.append(seiReader) }
            }
        }
        for e in chain { e.syncStateWithParent() }
        try pad.link(to: chain[0].staticPad("sink")!)
        state.withLock { $0.branches += chain; $0.readers.append(reader) }
    }
}
