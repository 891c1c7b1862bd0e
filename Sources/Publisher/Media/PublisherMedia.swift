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


/// source → caps → **pose attach** and the frame's stages (`FrameStages`) → queue →
/// scale → encoder → one payloader per pose transport (`EncodedFanout`), then one queue
/// → webrtcbin branch per subscriber from the tee of its pose transport (one encode for
/// all; PublisherMedia+Peers.swift), and congestion control over them
/// (PublisherMedia+Congestion.swift).
public final class PublisherMedia: @unchecked Sendable {
    public let pipeline: Pipeline
    public let config: PublisherMediaConfig
    /// The encoder's output per pose transport, each with the tee its branches hang from.
    let fanout: EncodedFanout
    let trailerWriter = PoseTrailerWriter()
    let seiWriter = PoseSEIWriter()
    /// Source → … → encoder queue: what `restartSourcePath` cycles.
    private let sourcePath: [Element]
    let encoder: Element
    let tagger: PoseTagger
    let synthetic: SyntheticSource?
    /// `--source video:PATH`: the file's decoder and the thread pushing its frames.
    let videoFile: VideoFileSource?
    let overlay: AnnotationOverlay
    /// Framing and the virtual background (`EffectChain`).
    public let effects: EffectChain
    /// The field's voice, the experts' voices and their mixes; nil without audio.
    public let voice: PublisherVoice?
    /// Why a configured audio device is not in use (said at start; the video goes on).
    public let voiceUnavailable: [String]
    /// The poses (and, from the synthetic camera, depth) of the frames sent lately.
    public let frameHistory = FrameHistory()
    /// The camera's metering routines (focus, exposure, white balance); nil when the
    /// source has no camera to control, `cameraControlUnavailable` says why.
    public let cameraMeter: CameraMeter?
    public let cameraControlUnavailable: String
    let state: Mutex<State>
    /// The size the encoder gets: the camera's, or a step down (`ResolutionLadder`).
    let encodeCaps: Element
    private let bytes = StreamCounter()
    private let keyframeRequestCount = StreamCounter()
    private let keyframeRequestsThrottled = StreamCounter()
    private let refusedFeedback = StreamCounter()
    let branchDrops = StreamCounter()
    /// The queue before the pose is read from the pixels (`--pose apriltag`), and the
    /// frames that entered and left it.
    private let tagQueue: Element?
    private let tagQueueIn = StreamCounter(), tagQueueOut = StreamCounter()

    struct State {
        var peers: [ObjectIdentifier: (peer: WebRTCPeer, queue: Element, teePad: Pad, tee: Element)] = [:]
        /// One bandwidth estimate per subscriber (`adaptBitrate`).
        var controllers: [ObjectIdentifier: BitrateController] = [:]
        /// The rate congestion control allows (kbit/s): the lowest estimate.
        var bitrateKbps = 0
        /// What the encoder is asked for: `bitrateKbps` times `overshootCorrection`.
        var encoderTargetKbps = 0
        /// The encoder's output over its target, learnt slowly (`adaptBitrate`): vp8enc
        /// in CBR sends 15 to 25 % over its target at these rates (keyframes, RTP
        /// headers and the pose element), which would keep a link just above its
        /// capacity. 1 when it sends what is asked; never raised above 1.
        var overshootCorrection = 1.0
        var produced: (bytes: UInt64, nanos: UInt64)?
        /// Simulated loss on each subscriber's link (`config.rtc.linkConditions`, then `setLinkConditions`).
        var linkConditions: LinkConditions?
        /// The encoded size (`adaptBitrate`).
        var ladder: ResolutionLadder
    }

    public init(config: PublisherMediaConfig, poseSource: @escaping PoseSource,
                onPoseAttached: (@Sendable (FramePose) -> Void)? = nil) throws(RTCError) {
        try PoseHeaderExtension.register()
        guard config.width >= 64, config.height >= 64, (1...120).contains(config.fps) else {
            throw .invalidArgument("video \(config.width)x\(config.height)@\(config.fps) is out of range")
        }
        try config.rtc.linkConditions?.validate()
        let captureWidth = config.captureWidth ?? config.width, captureHeight = config.captureHeight ?? config.height
        guard captureWidth >= 64, captureHeight >= 64, captureWidth % 2 == 0, captureHeight % 2 == 0,
              config.width % 8 == 0, config.height % 8 == 0 else {
            throw .invalidArgument("capture \(captureWidth)x\(captureHeight) must be even and at least 64x64, and the size sent \(config.width)x\(config.height) a multiple of 8 each way")
        }
        self.config = config
        pipeline = try Pipeline(name: "publisher")
        if let options = config.voice {
            do throws(VoiceError) {
                (voice, voiceUnavailable) = try PublisherVoice.make(options, pipeline: pipeline, onTone: config.onTone)
            } catch {
                throw .invalidArgument("voice: \(error)")
            }
        } else {
            (voice, voiceUnavailable) = (nil, [])
        }
        state = Mutex(State(linkConditions: config.rtc.linkConditions, ladder: ResolutionLadder(configuration: .init(
            width: config.width, height: config.height, fps: config.fps, maxDownscale: config.adaptBitrate ? config.maxDownscale : 1))))

        let history = frameHistory
        if config.source == .synthetic {
            let source = try SyntheticSource(width: captureWidth, height: captureHeight, fps: config.fps,
                                             scene: .standard, poseSource: poseSource, history: history,
                                             renderAhead: config.renderAhead, flashEverySecond: config.flashEverySecond,
                                             tags: config.sceneTags)
            synthetic = source
        } else {
            synthetic = nil
        }
        let (meter, unavailable) = PublisherCamera.make(for: config.source, lens: synthetic?.lensControl)
        cameraMeter = meter
        cameraControlUnavailable = unavailable
        if case .video(let path) = config.source {
            videoFile = try VideoFileSource(path: path, width: captureWidth, height: captureHeight, fps: config.fps) { message in
                ProcessSupport.printError("posecast-publisher: error: \(message)")
            }
        } else {
            videoFile = nil
        }
        var chain: [Element]
        if let synthetic { chain = [synthetic.element] } else if let videoFile { chain = [videoFile.element] } else {
            chain = try Self.makeSource(config, width: captureWidth, height: captureHeight)
        }
        let caps = try ElementFactory.make("capsfilter", name: "rawcaps")
        caps.set("caps", "video/x-raw,format=I420,width=\(captureWidth),height=\(captureHeight),framerate=\(config.fps)/1,pixel-aspect-ratio=1/1")
        let queue = try ElementFactory.make("queue", name: "encqueue")
        queue.set("max-size-buffers", 2)
        // Passthrough (no copy) at the camera's size; a step down scales after the pose
        // is attached and the annotations drawn.
        let scale = try ElementFactory.make("videoscale", name: "encodescale")
        encodeCaps = try ElementFactory.make("capsfilter", name: "encodecaps")
        encodeCaps.set("caps", Self.encodeCapsText(width: config.width, height: config.height))
        let firstKbps = config.adaptBitrate
            ? min(max(config.startBitrateKbps, config.minimumBitrateKbps), config.bitrateKbps) : config.bitrateKbps
        let encoder = try config.codec.makeEncoder(bitrateKbps: firstKbps, keyframeInterval: config.keyframeInterval,
                                                   h264Encoder: config.h264Encoder,
                                                   level: VideoCodec.levelIDC(width: config.width, height: config.height,
                                                                              fps: config.fps, bitrateKbps: config.bitrateKbps))
        try config.codec.apply(config.encoderOptions, to: encoder)
        self.encoder = encoder
        state.withLock { $0.bitrateKbps = firstKbps; $0.encoderTargetKbps = firstKbps }
        let fanout = try EncodedFanout.build(config: config, into: pipeline, trailerWriter: trailerWriter, seiWriter: seiWriter)
        self.fanout = fanout
        chain.append(caps)
        if config.clockSync { chain.append(try ElementFactory.make("clocksync", name: "sendclocksync")) }
        // With a pose read from the pixels (`--pose apriltag`), the frame's own stages run
        // on a thread of their own, beside the encoder's: the capture thread is never held
        // up by the detection (a V4L2 device whose buffers are not given back drops frames),
        // and while the tracker is still busy the older waiting frame is dropped, the newest
        // kept, so a slow detection costs frames rather than a growing delay.
        if config.framePoseSource != nil {
            let q = try ElementFactory.make("queue", name: "tagqueue")
            q.set("max-size-buffers", 1)
            q.set("max-size-bytes", 0)
            q.set("max-size-time", 0)
            q.set("leaky", "downstream")
            chain.append(q)
            tagQueue = q
        } else {
            tagQueue = nil
        }
        sourcePath = chain + [queue]
        chain += [queue, scale, encodeCaps, encoder]
        for e in chain { pipeline.add(e) }
        try pipeline.link(chain + [fanout.encodedTee])

        // Pose attach at the capture's size, then the raw frame's stages (FrameStages).
        // Marks behind nearer things look hidden where the source knows its depth.
        let overlay = AnnotationOverlay(width: config.width, height: config.height, hiddenLook: synthetic != nil)
        self.overlay = overlay
        var effectConfig = EffectChainConfiguration(captureWidth: captureWidth, captureHeight: captureHeight,
                                                    outputWidth: config.width, outputHeight: config.height,
                                                    assets: EffectAssets.locate(explicit: config.effects.assetsDirectory))
        effectConfig.framingControl = config.effects.framingControl
        effectConfig.maxZoom = config.effects.maxZoom
        effectConfig.analysisFPS = config.effects.analysisFPS
        effectConfig.personGate = config.effects.personGate
        let effects = EffectChain(configuration: effectConfig, depthSource: synthetic)
        self.effects = effects
        let stages = FrameStages(width: config.width, height: config.height, captureWidth: captureWidth, captureHeight: captureHeight,
                                 stampFrameIDs: config.stampFrameIDs, effects: effects, history: history, synthetic: synthetic,
                                 meter: meter, overlay: overlay, onPoseAttached: onPoseAttached)
        tagger = PoseTagger(width: captureWidth, height: captureHeight, stampFrameIDs: false, poseSource: poseSource,
                            framePoseSource: config.framePoseSource, timestampsAreCaptures: tagQueue != nil,
                            prepare: config.preparePicture, replacing: stages.process)
        let framesPad = (tagQueue ?? caps).staticPad("src")!
        if effects.changesSize { Self.announceSentSize(on: framesPad, config: config) }
        tagger.install(on: framesPad)
        tagQueue?.staticPad("sink")?.watch(.media) { [tagQueueIn] _ in
            tagQueueIn.add(1)
            return .pass
        }
        tagQueue?.staticPad("src")?.watch(.media) { [tagQueueOut] _ in
            tagQueueOut.add(1)
            return .pass
        }
        if let onEncoded = config.onEncoded { EncodeTimer(report: onEncoded).install(on: encoder) }
        if let sampling = config.qualitySampling { QualityReferenceWriter(sampling: sampling).install(on: encoder.staticPad("sink")!) }
        KeyframeThrottle(spacingNanos: Self.keyframeRequestSpacingNanos)
            .install(on: encoder.staticPad("src")!, passed: keyframeRequestCount, merged: keyframeRequestsThrottled)
        let bytes = self.bytes
        fanout.payloaderSource.watch(.media) { item in
            bytes.add(UInt64(item.byteSize))
            return .pass
        }
    }

    /// Downstream of the effects, frames have the size sent, not the capture's: the caps
    /// event leaving the capture's filter is replaced by one saying so (the elements
    /// upstream keep negotiating the capture's size, which downstream accepts as well).
    private static func announceSentSize(on pad: Pad, config: PublisherMediaConfig) {
        let sent = "video/x-raw,format=I420,width=\(config.width),height=\(config.height),framerate=\(config.fps)/1,pixel-aspect-ratio=1/1"
        pad.watch(.downstreamEvents) { item in
            item.replaceCaps(with: sent)
            return .pass
        }
    }

    /// Errors and warnings of the camera pipeline (the source, converter, encoder …), also
    /// before any subscriber joined, as text naming the element; not those of a session's
    /// webrtcbin, which its session reports as its own.
    public func onPipelineProblem(_ body: @escaping @Sendable (_ text: String, _ isError: Bool) -> Void) {
        pipeline.addObserver(.outside(factory: "webrtcbin")) { [voice] message in
            switch message {
            // A lost sound device is the voice's to report, once (`PublisherVoice.watchDevices`).
            case let .error(source, _, _) where voice?.claimsErrors(from: source) == true: break
            case let .error(source, text, debug): body("\(source): \(text)" + (debug.isEmpty ? "" : " (\(debug))"), true)
            case let .warning(source, text, _): body("\(source): \(text)", false)
            default: break
            }
        }
    }

    /// Keyframe requests that reached the encoder from the branches (PLI/FIR, new subscribers).
    public var keyframeRequests: UInt64 { keyframeRequestCount.total }

    /// Keyframe requests merged into a later keyframe because one was made less than
    /// `keyframeRequestSpacingNanos` before.
    public var keyframeRequestsDropped: UInt64 { keyframeRequestsThrottled.total }

    /// Items (RTP packets or lists of them) a subscriber's branch queue dropped because
    /// its webrtcbin did not take them in time: lost before the retransmission store.
    public var branchQueueDrops: UInt64 { branchDrops.total }

    /// Messages on a subscriber's `feedback` channel that were not reception reports (or
    /// came before its certificate was checked): dropped.
    public var feedbackMessagesRefused: UInt64 { refusedFeedback.total }
    func feedbackRefused() { refusedFeedback.add(1) }

    /// The shortest time between two keyframes made on request (0.5 s).
    public static let keyframeRequestSpacingNanos: UInt64 = 500_000_000

    /// RTP bytes the payloader has produced (the encoded stream, once for all subscribers).
    public var rtpBytesProduced: UInt64 { bytes.total }

    deinit {
        synthetic?.stop()
        videoFile?.stop()
        if case .frames(let feed) = config.source { feed.detach() }
        pipeline.stop()
    }

    private static func makeSource(_ config: PublisherMediaConfig, width: Int, height: Int) throws(RTCError) -> [Element] {
        switch config.source {
        case .frames(let feed):
            guard feed.width == width, feed.height == height, feed.fps == config.fps else {
                throw .invalidArgument("the frame feed is \(feed.width)x\(feed.height) at \(feed.fps) fps; the publisher captures \(width)x\(height) at \(config.fps) fps")
            }
            return [try feed.makeElement()]
        case .test(let pattern):
            let src = try ElementFactory.make("videotestsrc", name: "source")
            src.set("is-live", true)
            src.set("pattern", pattern)
            return [src, try ElementFactory.make("videoconvert")]
        case .v4l2(let device):
            guard access(device, F_OK) == 0 else {
                throw .deviceMissing(path: device, hint: "no camera there: use `--source test` (videotestsrc) instead")
            }
            // The camera's own mode for the size and rate asked (MJPEG where raw is too
            // slow); a device that cannot be probed negotiates on its own.
            var choice: CaptureFormatChoice?
            do {
                let modes = try CameraFormats.probe(device: device)
                choice = CaptureFormatChoice.choose(from: modes, width: width, height: height, fps: config.fps)
                if let choice {
                    ProcessSupport.printError("posecast-publisher: camera \(device): \(choice)")
                } else {
                    ProcessSupport.printError("posecast-publisher: warning: camera \(device) lists no raw or MJPEG mode (\(modes.count) modes); letting v4l2src choose")
                }
            } catch {
                ProcessSupport.printError("posecast-publisher: warning: could not list the modes of \(device) (\(error)); letting v4l2src choose")
            }
            return try CameraFormats.captureChain(device: device, choice: choice)
                + [try ElementFactory.make("videoconvert"), try ElementFactory.make("videoscale"), try ElementFactory.make("videorate")]
        case .image(let path):
            guard access(path, R_OK) == 0 else {
                throw .deviceMissing(path: path, hint: "no readable picture there (PNG or JPEG)")
            }
            let lower = path.lowercased()
            guard lower.hasSuffix(".png") || lower.hasSuffix(".jpg") || lower.hasSuffix(".jpeg") else {
                throw .invalidArgument("--source image: \(path) must be a .png, .jpg or .jpeg file")
            }
            let src = try ElementFactory.make("filesrc", name: "source")
            src.set("location", path)
            let decoder = try ElementFactory.make(lower.hasSuffix(".png") ? "pngdec" : "jpegdec")
            let freeze = try ElementFactory.make("imagefreeze")
            freeze.set("is-live", true)
            // Letterboxed into the capture's size (the whole picture, aspect kept).
            let scale = try ElementFactory.make("videoscale")
            scale.set("add-borders", true)
            return [src, decoder, try ElementFactory.make("videoconvert"), scale, freeze]
        case .synthetic:
            preconditionFailure("the synthetic camera is built by SyntheticSource, not here")
        case .video:
            preconditionFailure("a video file is played by VideoFileSource, not here")
        }
    }

    /// Starts the camera pipeline and waits (on the state worker, driven by the bus) until
    /// it is PLAYING; then the synthetic camera's render thread starts pushing.
    public func start() async throws(RTCError) {
        let playing = try await pipeline.start(timeout: .seconds(2))
        if let synthetic {
            // The render thread pushes from outside GStreamer: let appsrc reach PLAYING
            // (it is live, so this does not wait for a preroll) before the first push,
            // rather than racing the state change.
            if !playing {
                ProcessSupport.printError("posecast-publisher: warning: the camera pipeline is \(pipeline.stateDescription) after 2 s; rendering anyway")
            }
            synthetic.start()
        }
        videoFile?.start()
    }

    /// Takes the source path (source → converter → caps → encoder queue) down to NULL and
    /// back up with the pipeline, on the state worker: whatever paused its tasks (a
    /// FLUSHING handed up from downstream, a device that stopped) is reset, the device
    /// reopened, and the encoder, payloader and every subscriber branch stay as they are.
    /// The source watchdog's remedy for frames that stop while the pipeline is PLAYING.
    /// Returns the elements' names, upstream first.
    @discardableResult
    public func restartSourcePath() async -> [String] {
        let path = sourcePath
        return await StateWorker.shared.run {
            for element in path { element.stopOnThisThread() }
            // Downstream first, so each element pushes into one that already runs.
            for element in path.reversed() { element.syncStateWithParent() }
            return path.map(\.name)
        }
    }

    /// Stops the render thread and the pipeline, blocking the calling thread (not for the
    /// cooperative pool: use `shutDown()` there).
    public func stop() {
        synthetic?.stop()
        videoFile?.stop()
        if case .frames(let feed) = config.source { feed.detach() }
        StateWorker.shared.drain()   // branch teardowns queued before, then the pipeline
        pipeline.stop()
    }

    /// `stop()` on the state worker, after every branch teardown queued before it.
    public func shutDown() async {
        await StateWorker.shared.run { [self] in stop() }
    }

    /// The annotations drawn into every outgoing frame (world coordinates).
    public func setAnnotations(_ list: [Annotation]) { overlay.setAnnotations(list) }

    /// The annotations the last frame drew hidden (behind something nearer, by the
    /// source's depth; always none without depth).
    public var hiddenAnnotationIDs: Set<String> { overlay.hiddenIDs }

    /// The synthetic camera's render counters; nil for other sources.
    public var syntheticStats: SyntheticSourceStats? { synthetic?.stats }

    /// The synthetic camera's lens (focus, exposure, gain, white balance); nil for other sources.
    public var lensControl: LensControl? { synthetic?.lensControl }

    public var stats: PoseTaggerStats { tagger.stats }

    /// Frames dropped while the pose of an earlier one was still being read from its
    /// pixels (the newest waiting frame is kept); nil without `--pose apriltag`.
    public var framesDroppedBeforeTags: UInt64? {
        guard let tagQueue else { return nil }
        let waiting = UInt64(max(0, tagQueue.int("current-level-buffers")))
        let (entered, left) = (tagQueueIn.total, tagQueueOut.total)
        return entered > left + waiting ? entered - left - waiting : 0
    }

    /// Pose extension counters: RTP packets that carried a pose element.
    public var packetsWithPose: UInt64 {
        fanout.poseExtension.counters.written
    }

    /// Trailer counters: encoded frames given a pose trailer (for `trailer` sessions).
    public var trailerStats: InBandPoseStats { trailerWriter.stats }

    /// The SSRC the payloader of `transport`'s branch sends with (from its caps), once
    /// it has produced a packet.
    public func sentSSRC(_ transport: PoseTransport) -> UInt32? {
        fanout.output(for: transport)?.source.capsUInt("ssrc")
    }

    /// SEI counters: access units given a pose SEI (for `sei` sessions).
    public var seiStats: InBandPoseStats { seiWriter.stats }

}
