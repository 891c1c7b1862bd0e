internal import CGStreamer
import CGstShim
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


public struct PublisherMediaConfig: Sendable {
    public enum Source: Sendable, Equatable {
        /// GStreamer's videotestsrc (live), with a pattern name ("ball", "smpte", …).
        case test(pattern: String = "ball")
        /// A V4L2 camera device.
        case v4l2(device: String = "/dev/video0")
        /// The synthetic AR camera: the standard scene rendered from each frame's pose.
        case synthetic
    }
    public var source: Source = .test()
    public var width = 640, height = 480, fps = 30
    public var codec: VideoCodec = .vp8
    /// The encoder's bitrate, and with `adaptBitrate` its ceiling (kbit/s).
    public var bitrateKbps = 2000
    /// Congestion control: what each subscriber NACKs of what it was sent drives a
    /// bandwidth estimate (`BitrateController`), and the encoder follows the lowest
    /// (`adaptBitrate(nowNanos:)`).
    public var adaptBitrate = false
    /// The lowest bitrate adaptation goes to (kbit/s).
    public var minimumBitrateKbps = 150
    /// Frames between forced keyframes.
    public var keyframeInterval = 30
    /// Write each frame id into the picture (see `FrameStamp`), for end-to-end checks.
    public var stampFrameIDs = false
    /// Room reserved in every packet for application bytes in the pose element.
    public var maxApplicationBytes = 0
    /// Path MTU the RTP packets must fit in (extension included).
    public var pathMTU = 1200
    public var rtc = RTCConfiguration()
    /// A `clocksync` on the raw frames before the encoder (the `baseline` latency profile).
    public var clockSync = false
    /// Each frame's encode timing, on the encoder's streaming thread (keep it quick).
    public var onEncoded: (@Sendable (EncodedFrameTiming) -> Void)?
    public init() {}
}

/// Drops a branch's frames until its peer has connected.
final class BranchGate: Sendable {
    private let flag = Atomic<Bool>(false)
    var isOpen: Bool { flag.load(ordering: .relaxed) }
    func open() { flag.store(true, ordering: .relaxed) }
}

/// Bytes counted on a streaming thread, read from anywhere.
final class ByteCounter: Sendable {
    private let value = Atomic<UInt64>(0)
    func add(_ n: UInt64) { value.add(n, ordering: .relaxed) }
    var total: UInt64 { value.load(ordering: .relaxed) }
}

/// source → convert → caps → **pose attach** → encoder → payloader (+ pose extension) → tee,
/// then one queue → webrtcbin branch per subscriber (one encode for all).
public final class PublisherMedia: @unchecked Sendable {
    public let pipeline: Pipeline
    public let config: PublisherMediaConfig
    private let tee: Element
    /// Source → … → encoder queue: what `restartSourcePath` cycles.
    private let sourcePath: [Element]
    private let payloaderSource: Pad
    private let encoder: Element
    private let poseExtension: PoseExtension
    private let tagger: PoseTagger
    private let synthetic: SyntheticSource?
    private let overlay: AnnotationOverlay
    /// The poses (and, from the synthetic camera, depth) of the frames sent lately.
    public let frameHistory = FrameHistory()
    /// The camera's metering routines (focus, exposure, white balance); nil when the
    /// source has no camera to control, `cameraControlUnavailable` says why.
    public let cameraMeter: CameraMeter?
    public let cameraControlUnavailable: String
    private let state = Mutex(State())
    private let bytes = ByteCounter()
    private let keyframeRequestCount = ByteCounter()

    private struct State {
        var peers: [ObjectIdentifier: (peer: WebRTCPeer, queue: Element, teePad: Pad)] = [:]
        /// One bandwidth estimate per subscriber (`adaptBitrate`).
        var controllers: [ObjectIdentifier: BitrateController] = [:]
        /// The encoder's current target (kbit/s).
        var bitrateKbps = 0
        /// Simulated loss on each subscriber's link (`config.rtc.linkConditions`, then `setLinkConditions`).
        var linkConditions: LinkConditions?
    }

    public init(config: PublisherMediaConfig, poseSource: @escaping PoseSource,
                onPoseAttached: (@Sendable (FramePose) -> Void)? = nil) throws(RTCError) {
        try PoseHeaderExtension.register()
        guard config.width >= 64, config.height >= 64, (1...120).contains(config.fps) else {
            throw .invalidArgument("video \(config.width)x\(config.height)@\(config.fps) is out of range")
        }
        try config.rtc.linkConditions?.validate()
        self.config = config
        pipeline = try Pipeline(name: "publisher")
        state.withLock { $0.linkConditions = config.rtc.linkConditions }

        let history = frameHistory
        if config.source == .synthetic {
            let source = try SyntheticSource(width: config.width, height: config.height, fps: config.fps,
                                             scene: .standard, poseSource: poseSource, history: history)
            synthetic = source
        } else {
            synthetic = nil
        }
        let (meter, unavailable) = PublisherCamera.make(for: config.source, lens: synthetic?.lensControl)
        cameraMeter = meter
        cameraControlUnavailable = unavailable
        var chain: [Element]
        if let synthetic { chain = [synthetic.element] } else { chain = try Self.makeSource(config) }
        let caps = try ElementFactory.make("capsfilter", name: "rawcaps")
        caps.set("caps", "video/x-raw,format=I420,width=\(config.width),height=\(config.height),framerate=\(config.fps)/1")
        let queue = try ElementFactory.make("queue", name: "encqueue")
        queue.set("max-size-buffers", 2)
        let encoder = try config.codec.makeEncoder(bitrateKbps: config.bitrateKbps, keyframeInterval: config.keyframeInterval)
        self.encoder = encoder
        state.withLock { $0.bitrateKbps = config.bitrateKbps }
        let overhead = 4 + 2 + PoseWireFormat.fixedSize + config.maxApplicationBytes
        let payloader = try config.codec.makePayloader(mtu: config.pathMTU - ((overhead + 3) / 4 * 4))
        poseExtension = try PoseHeaderExtension.make(id: PoseHeaderExtension.defaultID)
        poseExtension.add(to: payloader)
        payloaderSource = payloader.staticPad("src")!
        tee = try ElementFactory.make("tee", name: "fanout")
        tee.set("allow-not-linked", true)
        chain.append(caps)
        if config.clockSync { chain.append(try ElementFactory.make("clocksync", name: "sendclocksync")) }
        sourcePath = chain + [queue]
        chain += [queue, encoder, payloader, tee]
        for e in chain { pipeline.add(e) }
        try pipeline.link(chain)

        // Pose attach, then the annotation overlay drawn with that pose: on the raw frame,
        // after conversion, before the encoder.
        let overlay = AnnotationOverlay(width: config.width, height: config.height)
        self.overlay = overlay
        tagger = PoseTagger(width: config.width, height: config.height, stampFrameIDs: config.stampFrameIDs,
                            poseSource: poseSource) { [width = config.width, height = config.height, synthetic] buffer, pose in
            history.record(pose: pose)
            // Metering sees the camera's picture, before any annotation is drawn into it.
            if let meter {
                let lens = synthetic?.lens(forFrame: pose.frameID)
                let settings = lens.flatMap { l in (meter.backend as? SimulatedCameraBackend)?.settings(of: l) }
                PublisherCamera.process(meter, buffer: buffer, width: width, height: height, frameId: pose.frameID,
                                        capturedWith: settings)
            }
            _ = overlay.draw(on: buffer, pose: pose)
            onPoseAttached?(pose)
        }
        tagger.install(on: caps.staticPad("src")!)
        if let onEncoded = config.onEncoded { EncodeTimer(report: onEncoded).install(on: encoder) }
        // Keyframe requests reaching the encoder (a subscriber's PLI/FIR turned into an
        // upstream force-key-unit by its branch's webrtcbin, or a branch opening).
        let keyframeRequests = keyframeRequestCount
        _ = payloader.staticPad("sink")!.addProbe(GST_PAD_PROBE_TYPE_EVENT_UPSTREAM) { info in
            if let event = gst_pad_probe_info_get_event(info), gst_video_event_is_force_key_unit(event) != 0 {
                keyframeRequests.add(1)
            }
            return GST_PAD_PROBE_OK
        }
        let bytes = self.bytes
        let data = GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
        _ = payloaderSource.addProbe(data) { info in
            bytes.add(UInt64(ProbeInfo.dataSize(info)))
            return GST_PAD_PROBE_OK
        }
    }

    /// Errors and warnings of the camera pipeline (the source, converter, encoder …), also
    /// before any subscriber joined, as text naming the element; not those of a session's
    /// webrtcbin, which its session reports as its own.
    public func onPipelineProblem(_ body: @escaping @Sendable (_ text: String, _ isError: Bool) -> Void) {
        pipeline.addObserver(.outside(factory: "webrtcbin")) { message in
            switch message {
            case let .error(source, text, debug): body("\(source): \(text)" + (debug.isEmpty ? "" : " (\(debug))"), true)
            case let .warning(source, text, _): body("\(source): \(text)", false)
            default: break
            }
        }
    }

    /// Keyframe requests that reached the encoder from the branches (PLI/FIR, new subscribers).
    public var keyframeRequests: UInt64 { keyframeRequestCount.total }

    /// RTP bytes the payloader has produced (the encoded stream, once for all subscribers).
    public var rtpBytesProduced: UInt64 { bytes.total }

    deinit {
        synthetic?.stop()
        pipeline.stop()
    }

    private static func makeSource(_ config: PublisherMediaConfig) throws(RTCError) -> [Element] {
        switch config.source {
        case .test(let pattern):
            let src = try ElementFactory.make("videotestsrc", name: "source")
            src.set("is-live", true)
            src.set("pattern", pattern)
            return [src, try ElementFactory.make("videoconvert")]
        case .v4l2(let device):
            guard access(device, F_OK) == 0 else {
                throw .deviceMissing(path: device, hint: "no camera there: use `--source test` (videotestsrc) instead")
            }
            let src = try ElementFactory.make("v4l2src", name: "source")
            src.set("device", device)
            return [src, try ElementFactory.make("videoconvert"), try ElementFactory.make("videoscale"),
                    try ElementFactory.make("videorate")]
        case .synthetic:
            preconditionFailure("the synthetic camera is built by SyntheticSource, not here")
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
            for element in path { _ = gst_element_set_state(element.raw, GST_STATE_NULL) }
            // Downstream first, so each element pushes into one that already runs.
            for element in path.reversed() { element.syncStateWithParent() }
            return path.map(\.name)
        }
    }

    /// Stops the render thread and the pipeline, blocking the calling thread (not for the
    /// cooperative pool: use `shutDown()` there).
    public func stop() {
        synthetic?.stop()
        StateWorker.shared.drain()   // branch teardowns queued before, then the pipeline
        pipeline.stop()
    }

    /// `stop()` on the state worker, after every branch teardown queued before it.
    public func shutDown() async {
        await StateWorker.shared.run { [self] in stop() }
    }

    /// The annotations drawn into every outgoing frame (world coordinates).
    public func setAnnotations(_ list: [Annotation]) { overlay.setAnnotations(list) }

    /// The synthetic camera's render counters; nil for other sources.
    public var syntheticStats: SyntheticSourceStats? { synthetic?.stats }

    /// The synthetic camera's lens (focus, exposure, gain, white balance); nil for other sources.
    public var lensControl: LensControl? { synthetic?.lensControl }

    public var stats: PoseTaggerStats { tagger.stats }

    /// Pose extension counters: RTP packets that carried a pose element.
    public var packetsWithPose: UInt64 {
        poseExtension.counters.written
    }

    /// Adds a subscriber branch (tee → queue → new webrtcbin) and returns its peer; the
    /// caller drives the offer. Call after `start()`: the branch's codec preferences are
    /// the payloader's negotiated caps (with the pose `extmap`), so the offer is exact.
    public func addPeer(name: String) async throws(RTCError) -> WebRTCPeer {
        let preferences = try await sendCaps()
        var rtc = config.rtc
        rtc.linkConditions = state.withLock { $0.linkConditions }
        let peer = try WebRTCPeer(name: name, pipeline: pipeline, configuration: rtc)
        let queue = try ElementFactory.make("queue", name: "\(name)-queue")
        queue.set("leaky", "downstream")          // a stalled subscriber never blocks the encoder
        queue.set("max-size-buffers", 60)
        pipeline.add(queue)
        let sendPad = try peer.requestSendPad(codecPreferences: preferences)
        try queue.staticPad("src")!.link(to: sendPad)
        guard let teePad = tee.requestPad("src_%u") else { throw .linkFailed(from: "tee", to: name) }
        // Until the peer connects its frames would only pile up and arrive late: drop
        // them at the tee. The first frame after the connection opens the gate and asks
        // the encoder for a keyframe, so a subscriber joining mid-stream sees a picture
        // at once.
        let gate = BranchGate()
        let data = GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
        // Weak: the pad owns this closure; the branch entry below owns the wrappers.
        _ = teePad.addProbe(data) { [weak peer, weak teePad] _ in
            if gate.isOpen { return GST_PAD_PROBE_OK }
            // Connected and its DTLS certificate checked against its answer (an atomic).
            guard let peer, peer.isVerified else { return GST_PAD_PROBE_DROP }
            gate.open()
            // Not from this streaming thread: the event travels back up through it.
            if let pad = teePad { DispatchQueue.global().async { Self.requestKeyframe(via: pad) } }
            return GST_PAD_PROBE_OK
        }
        // The branch must be running before the tee can push into it: a pad linked to a
        // queue still in NULL is flushing, the tee's next push (its sticky events go
        // before the gate probe sees the buffer) returns FLUSHING, and tee hands that up
        // to the encoder queue and the source, whose tasks pause for good: the start-up
        // stall (docs/THREADING.md). So: states first, link last.
        queue.syncStateWithParent()
        peer.webrtc.syncStateWithParent()
        try teePad.link(to: queue.staticPad("sink")!)
        state.withLock { $0.peers[ObjectIdentifier(peer)] = (peer, queue, teePad) }
        return peer
    }

    /// Sends an upstream force-key-unit event from a branch pad to the encoder.
    private static func requestKeyframe(via pad: Pad) {
        guard let event = gst_video_event_new_upstream_force_key_unit(GstClockTime.max, 1, 0) else { return }
        _ = gst_pad_send_event(pad.raw, event)
    }


    /// The payloader's output caps without per-stream fields, plus the RTCP feedback we
    /// answer (PLI/FIR for keyframes, NACK). Waits up to 5 s for the first frame's caps
    /// (`notify::caps` on the payloader's source pad, no polling).
    private func sendCaps() async throws(RTCError) -> String {
        guard await payloaderSource.waitForCaps(timeout: .seconds(5)),
              // Per-stream and per-keyframe fields would pin the branch to one caps
              // instance (sprop-parameter-sets changes with H.264 parameter sets).
              let caps = payloaderSource.negotiatedCaps(removing: [
                  "ssrc", "timestamp-offset", "seqnum-offset", "sprop-parameter-sets"]) else {
            throw .negotiation(peer: "publisher", reason: "no frame reached the payloader within 5 s (is the source producing?)")
        }
        let level = config.codec.profileLevelID(width: config.width, height: config.height, fps: config.fps)
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
    /// it), then the branch's queue and webrtcbin go to NULL and leave the pipeline on the
    /// state worker (setting webrtcbin to NULL joins its threads).
    public func removePeer(_ peer: WebRTCPeer) {
        guard let entry = state.withLock({ s in
            s.controllers[ObjectIdentifier(peer)] = nil
            return s.peers.removeValue(forKey: ObjectIdentifier(peer))
        }) else { return }
        entry.peer.close()
        let (tee, pipeline) = (self.tee, self.pipeline)
        let sinkPad = entry.queue.staticPad("sink")!
        entry.teePad.unlinkWhenIdle(from: sinkPad) {
            StateWorker.shared.submit {
                gst_element_release_request_pad(tee.raw, entry.teePad.raw)
                pipeline.remove(entry.queue)
                pipeline.remove(entry.peer.webrtc)
            }
        }
    }

    /// The encoder's current target bitrate (kbit/s).
    public var bitrateKbps: Int { state.withLock { $0.bitrateKbps } }

    /// One step of congestion control (`config.adaptBitrate`; call a few times a second):
    /// reads what each connected subscriber NACKed of what it was sent, steps its estimate, and sets
    /// the encoder to the lowest estimate (the weakest link decides: one encoder serves
    /// all; docs/NETWORK.md). GStreamer calls here are short property reads and sets,
    /// outside the state lock.
    public func adaptBitrate(nowNanos: UInt64) {
        guard config.adaptBitrate else { return }
        let peers = state.withLock { s in s.peers.values.map(\.peer).filter(\.isVerified) }
        let reports = peers.map { ($0, $0.takeFeedback()) }
        let change = state.withLock { s -> Int? in
            let estimates = reports.map { peer, interval in
                let key = ObjectIdentifier(peer)
                var controller = s.controllers[key] ?? BitrateController(configuration: .init(
                    ceilingKbps: config.bitrateKbps, floorKbps: config.minimumBitrateKbps), startKbps: s.bitrateKbps)
                defer { s.controllers[key] = controller }
                return controller.update(interval, nowNanos: nowNanos)
            }
            // No subscriber: keep the rate (the next one starts from it and climbs if its
            // link allows). Small changes are not worth an encoder reconfiguration.
            guard let target = estimates.min(), abs(target - s.bitrateKbps) * 50 > s.bitrateKbps else { return nil }
            s.bitrateKbps = target
            return target
        }
        if let change { config.codec.setBitrate(change, on: encoder) }
    }
}
