internal import CGStreamer
import Foundation
import Imaging
import PoseCastKit
import PoseMedia
import SyntheticCamera
import Synchronization
import VideoEffects

/// Sizes and limits of the effect chain, fixed for the pipeline's life.
public struct EffectChainConfiguration: Sendable {
    /// What the source delivers (a wider view when framing is wanted).
    public var captureWidth: Int, captureHeight: Int
    /// What the encoder gets.
    public var outputWidth: Int, outputHeight: Int
    public var assets: EffectAssets
    public var framingControl: FramingControl = .cooperative
    public var maxZoom = 4.0
    /// Person segmentation and face detection runs per second (the seed's 15).
    public var analysisFPS = 15.0
    /// The person background counts the matte only where a person detector finds someone it marks (`PersonGate`).
    public var personGate = true
    public init(captureWidth: Int, captureHeight: Int, outputWidth: Int, outputHeight: Int, assets: EffectAssets) {
        self.captureWidth = captureWidth; self.captureHeight = captureHeight
        self.outputWidth = outputWidth; self.outputHeight = outputHeight; self.assets = assets
    }
}

/// A source that knows each frame's depth at every pixel (the synthetic camera; a depth
/// camera or a tracker's depth feed could be one): what the depth background needs.
protocol EffectDepthSource: Sendable {
    /// Start or stop keeping depth maps (they cost a copy per frame).
    func setDepthWanted(_ wanted: Bool)
    /// The depth map of frame `frameID` (one value per pixel), while it is kept.
    func depthMap(forFrame frameID: UInt32) -> DepthMap?
}

/// One effect's state, as status and `sceneStatus` report it.
public struct EffectStatus: Sendable, Hashable {
    public var background: String = "off"
    /// "person" or "depth" while the background effect is on.
    public var backgroundSource: String?
    public var backgroundDepthMetres: Float?
    /// Segmentation runs in the last second.
    public var segmentationFPS = 0.0
    /// The person gate saw a face lately (the person background applies only then).
    public var personPresent = true
    /// Mean time of the background effect per frame (segmentation included), ms.
    public var backgroundMs = 0.0
    public var framing: String = FramingSubject.off.rawValue
    public var framingControl: String = FramingControl.cooperative.rawValue
    /// Mean time of the framing effect per frame (detection, crop and scale), ms.
    public var framingMs = 0.0
    public var zoom = 1.0
    /// "zoom" or "follow" while an expert's request holds the framing.
    public var expertRequest: String?
    public var crop: String = ""
    /// Frames the depth background skipped because the source gave no depth for them.
    public var framesWithoutDepth: UInt64 = 0
    /// The last effect error (a model that failed to run).
    public var lastError: String?
}

/// The publisher's video effects on raw frames, after the pose is attached and before
/// the annotation overlay: framing (a crop of a wider capture, each frame's intrinsics
/// recomputed for its crop), then — after metering has seen the camera's picture — the
/// virtual background (person segmentation or depth; blurred or replaced).
///
/// Settings change from any thread (`setBackground`, `setFraming`, `zoom`, `follow`), take
/// effect on the next frame, and never renegotiate: the output size is fixed. Models and
/// pictures are loaded by the caller's thread when an effect is switched on, so the
/// streaming thread never waits for a file. Everything the streaming thread keeps between
/// frames lives in `Worker`, which only it touches.
public final class EffectChain: Sendable {
    public let configuration: EffectChainConfiguration

    private struct Settings: @unchecked Sendable {
        var background = BackgroundSetting.off
        var backgroundImage: I420Image?
        var segmenter: PersonSegmenter?
        var framing = FramingSubject.off
        var faces: FaceDetector?
        var personGate: PersonGate?
        /// An expert's or the user's zoom: capture-normalised centre and factor.
        var zoom: (center: NormalizedPoint, factor: Double)?
        /// The 3D anchor to keep in view, with its annotation id.
        var follow: (id: String, anchor: Vector3, factor: Double)?
    }
    private let settings = Mutex(Settings())
    private let statistics = Mutex(EffectStatus())
    /// The crop each recent frame showed (for an expert's zoom on a frame he saw).
    private let crops = Mutex((order: [UInt32](), crop: [UInt32: CropWindow]()))
    private let worker: Worker

    private let depthSource: (any EffectDepthSource)?

    public convenience init(configuration: EffectChainConfiguration) { self.init(configuration: configuration, depthSource: nil) }

    init(configuration: EffectChainConfiguration, depthSource: (any EffectDepthSource)?) {
        self.configuration = configuration
        self.depthSource = depthSource
        worker = Worker(configuration: configuration)
        statistics.withLock { $0.framingControl = configuration.framingControl.rawValue }
    }

    /// The capture is wider than the output, or framing may crop: frames are replaced by
    /// new buffers of the output size.
    public var changesSize: Bool {
        configuration.captureWidth != configuration.outputWidth || configuration.captureHeight != configuration.outputHeight
    }

    // MARK: settings (any thread but a streaming one: these load files)

    /// Switches the background effect. Loads the segmentation model (person) or the
    /// picture (image) first; on failure nothing changes and the error says what is
    /// missing and how to install it.
    public func setBackground(_ setting: BackgroundSetting) throws(EffectCommandError) {
        if setting.depthMetres != nil, depthSource == nil {
            throw EffectCommandError("a depth background needs a source that knows depth (the synthetic camera: --source synthetic); this one has none",
                                     kind: .unavailable)
        }
        var image: I420Image?
        if case .image(let path)? = setting.fill {
            do throws(StillImage.LoadError) {
                image = try StillImage.load(path, covering: configuration.outputWidth, height: configuration.outputHeight)
            } catch { throw EffectCommandError("\(error)", kind: .unavailable) }
        }
        var segmenter: PersonSegmenter?, gate: PersonGate?
        if setting.fill != nil, setting.depthMetres == nil {
            segmenter = try loadSegmenter()
            if configuration.personGate { gate = try loadPersonGate() }
        }
        depthSource?.setDepthWanted(setting.fill != nil && setting.depthMetres != nil)
        settings.withLock { s in
            s.background = setting; s.backgroundImage = image
            if let segmenter { s.segmenter = segmenter }
            if let gate { s.personGate = gate }
        }
        statistics.withLock { st in
            st.background = setting.mode; st.backgroundSource = setting.source; st.backgroundDepthMetres = setting.depthMetres
        }
    }

    /// Switches automatic framing (`by` says who asks: an expert only in `cooperative`).
    public func setFraming(_ subject: FramingSubject, byExpert: Bool = false) throws(EffectCommandError) {
        try checkControl(byExpert: byExpert, what: "framing")
        var faces: FaceDetector?, segmenter: PersonSegmenter?
        switch subject {
        case .face: faces = try loadFaces()
        case .person: segmenter = try loadSegmenter()
        case .off: break
        }
        settings.withLock { s in
            s.framing = subject
            if let faces { s.faces = faces }
            if let segmenter { s.segmenter = segmenter }
        }
        statistics.withLock { $0.framing = subject.rawValue }
    }

    /// Zooms ×`factor` (1…max) on `point`, normalised in the frame `frameID` as sent (the
    /// latest frame when nil or forgotten); factor 1 hands the view back to the framing.
    public func setZoom(at point: NormalizedPoint, factor: Double, frameID: UInt32?, byExpert: Bool = false) throws(EffectCommandError) {
        try checkControl(byExpert: byExpert, what: "zoom")
        guard point.isInImage else { throw EffectCommandError("zoom point (\(point.x), \(point.y)) is outside the picture") }
        guard factor.isFinite, factor >= 1, factor <= configuration.maxZoom else {
            throw EffectCommandError("zoom factor must be 1…\(configuration.maxZoom), got \(factor)")
        }
        let crop = crops.withLock { c in frameID.flatMap { c.crop[$0] } ?? c.order.last.flatMap { c.crop[$0] } }
            ?? CropWindow.full(width: configuration.captureWidth, height: configuration.captureHeight)
        let center = crop.capturePoint(point, captureWidth: configuration.captureWidth, captureHeight: configuration.captureHeight)
        settings.withLock { s in
            s.zoom = factor == 1 ? nil : (center, factor)
            if factor != 1 { s.follow = nil }
        }
        statistics.withLock { $0.expertRequest = factor == 1 ? nil : "zoom" }
    }

    /// Keeps `anchor` (an annotation's world position) in view at ×`factor`; nil stops.
    public func setFollow(_ target: (id: String, anchor: Vector3)?, factor: Double = 2, byExpert: Bool = false) throws(EffectCommandError) {
        try checkControl(byExpert: byExpert, what: "follow")
        guard factor.isFinite, factor >= 1, factor <= configuration.maxZoom else {
            throw EffectCommandError("follow zoom must be 1…\(configuration.maxZoom), got \(factor)")
        }
        settings.withLock { s in
            s.follow = target.map { ($0.id, $0.anchor, factor) }
            if target != nil { s.zoom = nil }
        }
        statistics.withLock { $0.expertRequest = target == nil ? nil : "follow" }
    }

    /// The annotation followed, if any.
    public var followedAnnotation: String? { settings.withLock { $0.follow?.id } }

    public var status: EffectStatus { statistics.withLock { $0 } }

    /// The state experts get in `sceneStatus`.
    public var summary: EffectsSummary {
        let s = status
        return EffectsSummary(background: s.background, backgroundSource: s.backgroundSource, segmentationFPS: s.segmentationFPS,
                              backgroundMs: s.backgroundMs, framing: s.framing, framingControl: s.framingControl,
                              framingMs: s.framingMs, zoom: s.zoom, request: s.expertRequest)
    }

    private func checkControl(byExpert: Bool, what: String) throws(EffectCommandError) {
        switch configuration.framingControl {
        case .cooperative: return
        case .user where !byExpert: return
        case .user: throw EffectCommandError("\(what): framing is the field worker's (framing control \"user\"); an expert may not change it", kind: .notAllowed)
        case .app: throw EffectCommandError("\(what): this publisher keeps the framing it started with (framing control \"app\")", kind: .notAllowed)
        }
    }

    private func loadSegmenter() throws(EffectCommandError) -> PersonSegmenter {
        if let s = settings.withLock({ $0.segmenter }) { return s }
        do throws(EffectModelError) {
            return try PersonSegmenter(assets: configuration.assets,
                                       landscape: PersonSegmenter.prefersLandscape(width: configuration.captureWidth, height: configuration.captureHeight))
        } catch { throw EffectCommandError("person segmentation: \(error)", kind: .unavailable) }
    }

    private func loadPersonGate() throws(EffectCommandError) -> PersonGate {
        if let g = settings.withLock({ $0.personGate }) { return g }
        do throws(EffectModelError) { return try PersonGate(assets: configuration.assets) } catch {
            throw EffectCommandError("person gate: \(error) (or --disable-person-gate)", kind: .unavailable)
        }
    }

    private func loadFaces() throws(EffectCommandError) -> FaceDetector {
        if let f = settings.withLock({ $0.faces }) { return f }
        do throws(EffectModelError) { return try FaceDetector(assets: configuration.assets) } catch {
            throw EffectCommandError("face detection: \(error)", kind: .unavailable)
        }
    }

    // MARK: the streaming thread

    /// Framing: runs the analyses due on the capture frame, moves the crop, and returns
    /// the frame to send (a new buffer of the output size, with the capture's metas and
    /// this crop's pose, or `buffer` itself when it shows the whole capture) and its pose.
    func frame(_ buffer: UnsafeMutablePointer<GstBuffer>, pose: FramePose) -> (buffer: UnsafeMutablePointer<GstBuffer>, pose: FramePose, crop: CropWindow?) {
        let s = settings.withLock { $0 }
        let analysisStart = MonotonicClock.nanos()
        let c = configuration
        var info = GstVideoInfo()
        gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, guint(c.captureWidth), guint(c.captureHeight))
        let personBackground = s.background.fill != nil && s.background.depthMetres == nil
        let analysis = worker.analyse(buffer, info: &info, backgroundNeedsMatte: personBackground,
                                      segmenter: s.segmenter, framing: s.framing, faces: s.faces,
                                      personGate: personBackground && c.personGate ? s.personGate : nil, captureNanos: pose.captureTimeNanos)
        if let error = analysis.error { statistics.withLock { $0.lastError = error } }
        // Analysis time (the copy here, the models on their thread, counted once) counts
        // for the background when it needs the matte, else for framing.
        let start = MonotonicClock.nanos()
        let analysed = start - analysisStart + analysis.analysisNanos
        worker.analysisForBackground = personBackground ? analysed : 0
        let framingExtra = personBackground ? 0 : analysed
        let target: FramingTarget
        if let f = s.follow {
            let p = CameraModel(pose: pose)?.project(f.anchor)
            target = .point(p.flatMap { $0.point.x > -0.5 && $0.point.x < 1.5 ? $0.point : nil }, zoom: f.factor)
        } else if let z = s.zoom {
            target = .region(center: z.center, zoom: z.factor)
        } else {
            switch s.framing {
            case .off: target = .wide
            case .face, .person: target = .subject(analysis.subject, faceHeight: analysis.faceHeight)
            }
        }
        let crop = worker.step(toward: target, captureNanos: pose.captureTimeNanos)
        let full = CropWindow.full(width: c.captureWidth, height: c.captureHeight)
        remember(crop, frameID: pose.frameID)
        guard changesSize || crop != full else {
            worker.noteFraming(nanos: MonotonicClock.nanos() - start + framingExtra, statistics: statistics, crop: crop, zoom: 1)
            return (buffer, pose, nil)
        }
        var outInfo = GstVideoInfo()
        gst_video_info_set_format(&outInfo, GST_VIDEO_FORMAT_I420, guint(c.outputWidth), guint(c.outputHeight))
        guard let out = gst_buffer_new_allocate(nil, outInfo.size, nil) else { return (buffer, pose, nil) }
        _ = gst_buffer_copy_into(out, buffer, GstBufferCopyFlags(GST_BUFFER_COPY_FLAGS.rawValue | GST_BUFFER_COPY_TIMESTAMPS.rawValue | GST_BUFFER_COPY_META.rawValue), 0, gsize.max)
        _ = withMappedI420(buffer, info: &info) { source in
            withWritableI420(out, info: &outInfo) { target in I420Resampler.resample(source, crop: crop, into: target) }
        }
        var framed = pose
        framed.intrinsics = crop.intrinsics(of: pose.intrinsics, captureWidth: c.captureWidth, captureHeight: c.captureHeight)
        if let bytes = try? PoseWireFormat.encode(framed) { _ = PoseMeta.attach(bytes, to: out) }
        worker.noteFraming(nanos: MonotonicClock.nanos() - start + framingExtra, statistics: statistics, crop: crop,
                           zoom: crop.zoom(against: FramingConfiguration(captureWidth: c.captureWidth, captureHeight: c.captureHeight,
                                                                         outputWidth: c.outputWidth, outputHeight: c.outputHeight).widest))
        return (out, framed, crop)
    }

    /// The background effect on the output frame `frameID`, in place (after metering).
    func background(_ buffer: UnsafeMutablePointer<GstBuffer>, frameID: UInt32, crop: CropWindow?) {
        let s = settings.withLock { $0 }
        guard let fill = s.background.fill else { return }
        let start = MonotonicClock.nanos()
        let c = configuration
        let view = BlockAlpha.View(crop: crop ?? .full(width: c.captureWidth, height: c.captureHeight),
                                   captureWidth: c.captureWidth, captureHeight: c.captureHeight)
        let alpha: BlockAlpha
        if let metres = s.background.depthMetres {
            guard let map = depthSource?.depthMap(forFrame: frameID) else {
                statistics.withLock { $0.framesWithoutDepth += 1 }
                return
            }
            alpha = BlockAlpha(depth: map, maxDepth: metres, frameWidth: c.outputWidth, frameHeight: c.outputHeight, view: view)
        } else {
            guard let matte = worker.matte else { return }
            // The mask changes 15 times a second, the crop only while framing moves: reuse
            // the stretched mask until either changes.
            let generation = worker.current.matteGeneration
            if let cached = worker.alpha, cached.generation == generation, cached.crop == view.crop {
                alpha = cached.alpha
            } else {
                alpha = BlockAlpha(matte: matte, frameWidth: c.outputWidth, frameHeight: c.outputHeight, view: view)
                worker.alpha = (generation, view.crop, alpha)
            }
        }
        let effectFill: BackgroundFill
        switch fill {
        case .blur(let r): effectFill = .blur(radius: r)
        case .image:
            guard let image = s.backgroundImage else { return }
            effectFill = .image(image)
        }
        var info = GstVideoInfo()
        gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, guint(c.outputWidth), guint(c.outputHeight))
        _ = withWritableI420(buffer, info: &info) { planes in worker.compositor.apply(effectFill, alpha: alpha, to: planes) }
        worker.noteBackground(nanos: MonotonicClock.nanos() - start, statistics: statistics)
    }

    private func remember(_ crop: CropWindow, frameID: UInt32) {
        crops.withLock { c in
            c.crop[frameID] = crop
            c.order.append(frameID)
            if c.order.count > 150 { c.crop[c.order.removeFirst()] = nil }
        }
    }

    /// What only the streaming thread touches: the framing controller, the compositor's
    /// scratch planes, the analysis results this frame uses, timings.
    private final class Worker: @unchecked Sendable {
        var controller: FramingController
        let compositor = BackgroundCompositor()
        let analysis: AnalysisThread
        /// The analysis results as this frame took them.
        var current = AnalysisThread.Results()
        var matte: Matte? { current.matte }
        /// The mask stretched over the frame, for the matte generation and crop it was made for.
        var alpha: (generation: Int, crop: CropWindow, alpha: BlockAlpha)?
        var lastFrameNanos: UInt64?
        var framingNanos = 0.0, backgroundNanos = 0.0
        /// This frame's analysis time when the background effect needed it.
        var analysisForBackground: UInt64 = 0

        init(configuration c: EffectChainConfiguration) {
            var framing = FramingConfiguration(captureWidth: c.captureWidth, captureHeight: c.captureHeight,
                                               outputWidth: c.outputWidth, outputHeight: c.outputHeight)
            framing.maxZoom = c.maxZoom
            controller = FramingController(configuration: framing)
            analysis = AnalysisThread(fps: c.analysisFPS)
        }

        /// Hands the capture frame to the analysis thread when an analysis is due and it is
        /// free; returns the latest subject and error, and the cost of the analysis whose
        /// results this frame is the first to use (0 when none is new).
        func analyse(_ buffer: UnsafeMutablePointer<GstBuffer>, info: inout GstVideoInfo, backgroundNeedsMatte: Bool,
                     segmenter: PersonSegmenter?, framing: FramingSubject, faces: FaceDetector?, personGate: PersonGate?,
                     captureNanos: UInt64) -> (subject: NormalizedRect?, faceHeight: Float?, error: String?, analysisNanos: UInt64) {
            let kind: SceneAnalyzer.Subject = switch framing { case .off: .none; case .face: .face; case .person: .person }
            let latest = analysis.results
            let fresh = latest.sequence != current.sequence
            current = latest
            // Nothing to analyse (the usual case): the frame is not even copied. Once the
            // effects are off, one more analysis clears what the last ones found.
            guard backgroundNeedsMatte || kind != .none || latest.matte != nil || latest.subject != nil else { return (nil, nil, nil, 0) }
            var error = latest.error
            if analysis.isDue(captureNanos) {
                let frame = withMappedI420(buffer, info: &info) { view in try? I420Image(copying: view) } ?? nil
                if let frame {
                    analysis.submit(AnalysisThread.Job(frame: frame, captureNanos: captureNanos, segmenter: segmenter, kind: kind,
                                                       faces: faces, personGate: personGate, needsMatte: backgroundNeedsMatte))
                } else {
                    error = "cannot map the capture frame"
                }
            }
            return (latest.subject, latest.subjectFaceHeight, error, fresh ? latest.analysisNanos : 0)
        }

        func step(toward target: FramingTarget, captureNanos: UInt64) -> CropWindow {
            let seconds = lastFrameNanos.map { Double(captureNanos &- $0) / 1e9 } ?? 0
            lastFrameNanos = captureNanos
            return controller.step(toward: target, seconds: min(max(seconds, 0), 0.5))
        }

        func noteFraming(nanos: UInt64, statistics: borrowing Mutex<EffectStatus>, crop: CropWindow, zoom: Double) {
            framingNanos = framingNanos * 0.9 + Double(nanos) * 0.1
            let now = lastFrameNanos ?? 0
            let (ms, fps) = (framingNanos / 1e6, Double(current.segmentationTimes.filter { now &- $0 <= 1_000_000_000 }.count))
            let present = current.personPresent
            statistics.withLock { s in
                s.framingMs = ms; s.segmentationFPS = fps; s.zoom = zoom; s.crop = crop.description; s.personPresent = present
            }
        }

        func noteBackground(nanos: UInt64, statistics: borrowing Mutex<EffectStatus>) {
            backgroundNanos = backgroundNanos * 0.9 + Double(nanos + analysisForBackground) * 0.1
            let ms = backgroundNanos / 1e6
            statistics.withLock { $0.backgroundMs = ms }
        }
    }
}

/// The depth of a framed frame: the capture's depth, looked up through the frame's crop
/// (a crop leaves depth along the optical axis unchanged).
struct CroppedDepth: DepthSampler {
    let capture: any DepthSampler
    let crop: CropWindow
    let captureWidth: Int, captureHeight: Int
    func depth(at point: NormalizedPoint) -> Float? {
        capture.depth(at: crop.capturePoint(point, captureWidth: captureWidth, captureHeight: captureHeight))
    }
}

/// The expert's framing requests (`PublisherControl`), with the chain's refusals as replies.
extension EffectChain: EffectCommands {
    private func reply<T>(_ body: () throws(EffectCommandError) -> T) throws(ControlError) -> T {
        do throws(EffectCommandError) { return try body() } catch {
            let code: ControlErrorCode = switch error.kind {
            case .invalid: .invalidValue
            case .notAllowed: .notAllowed
            case .unavailable: .unsupported
            }
            throw ControlError(id: nil, code: code, message: error.message)
        }
    }

    public func zoom(at point: NormalizedPoint, factor: Double, frameID: UInt32?) throws(ControlError) {
        try reply { () throws(EffectCommandError) in try setZoom(at: point, factor: factor, frameID: frameID, byExpert: true) }
    }

    public func follow(annotationId: String, anchor: Vector3?, factor: Double) throws(ControlError) {
        try reply { () throws(EffectCommandError) in
            try setFollow(anchor.map { (annotationId, $0) }, factor: factor, byExpert: true)
        }
    }

    public func framing(_ subject: String) throws(ControlError) {
        guard let s = FramingSubject(rawValue: subject) else {
            throw ControlError(id: nil, code: .invalidValue, message: "framing subject must be off, face or person, got \(subject)")
        }
        try reply { () throws(EffectCommandError) in try setFraming(s, byExpert: true) }
    }
}
