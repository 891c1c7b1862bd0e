import Imaging
internal import CGStreamer
import CGstShim
import PoseCastKit
import RTCSession
import SyntheticCamera
import Synchronization
import TagTracking
#if canImport(Glibc)
import Glibc
import PoseMedia
#endif

/// The synthetic AR camera as a live GStreamer source: an `appsrc` fed by a render
/// thread that, once per frame interval, asks the pose source for the pose at the
/// capture time, renders the known scene from it through the simulated lens, attaches
/// that very pose (so the picture and its pose agree exactly) and pushes the frame.
/// Each frame's depth map goes to the frame history, for publisher-depth placement.
///
/// With `renderAhead` (pose sources that are functions of time: trajectories and
/// replays, not live feeds), rendering starts a render time *before* each capture
/// instant, with the pose of that instant, and the frame is pushed at it: the picture
/// exists when its camera "exposes", as a camera's frame does, instead of the render
/// counting as capture latency (11.6 ms a frame at 1280×720). The pose stays exact:
/// the frame is rendered from, and stamped with, its capture instant. A render that
/// overruns its lead is pushed at once, late by the overrun (the latency shows it).
final class SyntheticSource: @unchecked Sendable {
    let element: Element
    private let appsrc: UnsafeMutablePointer<GstAppSrc>
    private let width: Int, height: Int, fps: Int
    private let renderAhead: Bool
    /// Paint the first frame captured at or after each whole second of the wall clock
    /// white (the A/V tests' flash, paired with the test voice's tone bursts).
    private let flashEverySecond: Bool
    private let scene: SyntheticScene
    private let poseSource: PoseSource
    /// Tags painted on the scene, nil for none.
    private let tagPainter: TagRenderer?
    private let history: FrameHistory
    private let pool: UnsafeMutablePointer<GstBufferPool>
    private let control = Mutex(Control())
    private let statsBox = Mutex(SyntheticSourceStats())
    /// The lens each recent frame was rendered with (by frame id), so metering knows
    /// exactly which focus and exposure a measured frame had, however deep the queues.
    private let renderedLenses = Mutex((ids: [UInt32](), lenses: [UInt32: LensState]()))
    /// Full-resolution depth of the last frames, while the depth background wants it.
    private let effectDepth = Mutex((wanted: false, maps: [(UInt32, DepthMap)]()))

    /// The lens every frame renders with; camera control drives it.
    let lensControl = LensControl()

    private struct Control {
        var running = false
        var thread: pthread_t?
    }

    init(width: Int, height: Int, fps: Int, scene: SyntheticScene, poseSource: @escaping PoseSource,
         history: FrameHistory, renderAhead: Bool = false, flashEverySecond: Bool = false, tags: TagMap? = nil) throws(RTCError) {
        tagPainter = tags.map { map in
            var painter = TagRenderer(map: map)
            painter.samples = 2   // antialiased edges at a quarter of the default's cost
            return painter
        }
        self.renderAhead = renderAhead
        self.flashEverySecond = flashEverySecond
        guard width % 2 == 0, height % 2 == 0 else {
            throw .invalidArgument("the synthetic camera renders even sizes only, not \(width)x\(height)")
        }
        self.width = width; self.height = height; self.fps = fps
        self.scene = scene; self.poseSource = poseSource; self.history = history
        element = try LiveFrameSource.make(width: width, height: height, fps: fps)
        appsrc = gcast(element.raw, to: GstAppSrc.self)
        let capsText = "video/x-raw,format=I420,width=\(width),height=\(height),framerate=\(fps)/1"
        // Recycled frame memory (no 1.4 MB allocation per frame at 720p).
        pool = gst_buffer_pool_new()
        let caps = gst_caps_from_string(capsText)
        let config = gst_buffer_pool_get_config(pool)
        gst_buffer_pool_config_set_params(config, caps, guint(width * height * 3 / 2), 4, 0)
        gst_caps_unref(caps)
        _ = gst_buffer_pool_set_config(pool, config)
        _ = gst_buffer_pool_set_active(pool, 1)
    }

    deinit {
        stop()
        _ = gst_buffer_pool_set_active(pool, 0)
        gst_object_unref(UnsafeMutableRawPointer(pool))
    }


    var stats: SyntheticSourceStats { statsBox.withLock { $0 } }

    /// Starts the render thread (idempotent).
    func start() {
        let already = control.withLock { c -> Bool in
            defer { c.running = true }
            return c.running
        }
        guard !already else { return }
        let box = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            let source = Unmanaged<SyntheticSource>.fromOpaque(raw!).takeRetainedValue()
            source.renderLoop()
            return nil
        }, box.toOpaque())
        if rc != 0 {
            box.release()
            control.withLock { $0.running = false }
            statsBox.withLock { $0.lastError = "render thread could not start (error \(rc))" }
        } else {
            control.withLock { $0.thread = thread }
        }
    }

    /// Stops the render thread and waits for it.
    func stop() {
        let thread = control.withLock { c -> pthread_t? in
            c.running = false
            defer { c.thread = nil }
            return c.thread
        }
        if let thread, !pthread_equal(thread, pthread_self()).isTrue { pthread_join(thread, nil) }
    }

    private var isRunning: Bool { control.withLock { $0.running } }

    private func renderLoop() {
        // Named so per-thread CPU (top -H, /proc/PID/task/*/comm, scripts/bench-loopback) shows the render.
        pcg_set_current_thread_name("synthetic-render")
        let renderer: SyntheticRenderer
        do { renderer = try SyntheticRenderer(scene: scene, width: width, height: height) } catch {
            statsBox.withLock { $0.lastError = "renderer: \(error)" }
            return
        }
        let interval = UInt64(1_000_000_000 / fps)
        var next = MonotonicClock.nanos() + interval
        var frameID: UInt32 = 0
        var lastCamera: CameraModel?
        // Render (with depth copy and pose attach) time, smoothed: the lead a frame's
        // rendering starts with before its capture instant (`renderAhead`).
        var renderEstimate: UInt64 = 0
        var lastSecond: UInt64 = 0
        while isRunning {
            // With render-ahead the work starts `lead` before the capture instant `next`.
            let lead = renderAhead ? min(renderEstimate + renderEstimate / 4 + 500_000, interval * 3 / 4) : 0
            let now = MonotonicClock.nanos()
            if now + lead < next {
                Self.sleep(until: next - lead)
            } else if now > next + 3 * interval {
                // Fell behind (machine busy): skip ahead instead of bursting frames.
                statsBox.withLock { $0.framesSkipped += (now - next) / interval }
                next = now + lead
            }
            let captureInstant = renderAhead ? next : MonotonicClock.nanos()
            next += interval
            // The capture instant on the wall clock (the pose's time base); wrapping
            // arithmetic gives the signed offset from now either way.
            let captured = WallClock.nowNanos() &+ (captureInstant &- MonotonicClock.nanos())
            var pose = poseSource(frameID, captured)
            pose.frameID = frameID
            pose.captureTimeNanos = captured
            // A flagged-missing pose still needs a picture: render the last known view
            // (the flag tells every reader the pose is not to be used).
            let camera = CameraModel(pose: pose) ?? lastCamera
                ?? CameraModel(position: Vector3(0, 1.6, 3), orientation: .lookAt(eye: Vector3(0, 1.6, 3), target: Vector3(0, 0.3, 0)),
                               intrinsics: pose.intrinsics)
            lastCamera = camera
            let started = MonotonicClock.nanos()
            let buffer: UnsafeMutablePointer<GstBuffer>
            do throws(SyntheticCameraError) {
                guard let rendered = try render(renderer, camera: camera, frameIndex: UInt64(frameID)) else { continue }
                buffer = rendered
            } catch {
                statsBox.withLock { $0.renderErrors += 1; $0.lastError = "render: \(error)" }
                continue
            }
            let renderNanos = MonotonicClock.nanos() - started
            if flashEverySecond {
                let second = captured / 1_000_000_000
                if second != lastSecond, lastSecond != 0 { Self.paintFlash(buffer, lumaBytes: width * height) }
                lastSecond = second
            }
            if let bytes = try? PoseWireFormat.encode(pose) { _ = PoseMeta.attach(bytes, to: buffer) }
            if let depth = try? renderer.copyDepthMap(scale: 4) { history.record(depth: depth, frameID: frameID) }
            // Every pixel's depth for the depth background, only while it is on, and only
            // for the last few frames (a 1280×720 map is 3.7 MB).
            if effectDepth.withLock({ $0.wanted }), let full = try? renderer.copyDepthMap(scale: 1) {
                effectDepth.withLock { d in
                    d.maps.append((frameID, full))
                    if d.maps.count > 4 { d.maps.removeFirst() }
                }
            }
            // A full queue makes appsrc drop its oldest frame for this one: count it, so the
            // status tells frames dropped before encoding from frames sent without a pose.
            let queueFull = LiveFrameSource.isFull(UnsafeMutableRawPointer(appsrc), frameBytes: width * height * 3 / 2)
            let spent = MonotonicClock.nanos() - started
            renderEstimate = renderEstimate == 0 ? spent : (renderEstimate * 7 + spent) / 8
            // Ready early: wait for the capture instant, so the frame is stamped with it.
            if renderAhead { Self.sleep(until: captureInstant) }
            // appsrc takes the buffer (full transfer).
            let flow = gst_app_src_push_buffer(appsrc, buffer)
            statsBox.withLock { s in
                s.framesRendered += 1
                if queueFull { s.framesDropped += 1 }
                s.lastRenderNanos = renderNanos
                s.maxRenderNanos = max(s.maxRenderNanos, renderNanos)
                if flow != GST_FLOW_OK && flow != GST_FLOW_FLUSHING { s.lastError = "push: flow \(flow.rawValue)" }
            }
            frameID &+= 1
        }
    }

    /// A white frame (luma 235, chroma neutral).
    private static func paintFlash(_ buffer: UnsafeMutablePointer<GstBuffer>, lumaBytes: Int) {
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_WRITE) != 0, let data = map.data else { return }
        memset(data, 235, lumaBytes)
        memset(data + lumaBytes, 128, Int(map.size) - lumaBytes)
        gst_buffer_unmap(buffer, &map)
    }

    /// Sleeps until the monotonic clock reads `instant` (at once when it has passed).
    private static func sleep(until instant: UInt64) {
        let now = MonotonicClock.nanos()
        guard now < instant else { return }
        let wait = instant - now
        var ts = timespec(tv_sec: Int(wait / 1_000_000_000), tv_nsec: Int(wait % 1_000_000_000))
        nanosleep(&ts, nil)
    }

    /// Renders one frame into a pool buffer (full reference), or nil when the pool is
    /// inactive (shutting down).
    private func render(_ renderer: SyntheticRenderer, camera: CameraModel,
                        frameIndex: UInt64) throws(SyntheticCameraError) -> UnsafeMutablePointer<GstBuffer>? {
        var buffer: UnsafeMutablePointer<GstBuffer>?
        guard gst_buffer_pool_acquire_buffer(pool, &buffer, nil) == GST_FLOW_OK, let buffer else { return nil }
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_WRITE) != 0 else {
            gst_buffer_unref(buffer)
            return nil
        }
        let ySize = width * height, cSize = ySize / 4
        var failure: SyntheticCameraError?
        do throws(SyntheticCameraError) {
            let planes: I420Planes
            do throws(ImagingError) {
                planes = try I420Planes(y: map.data, yStride: width, u: map.data + ySize, uStride: width / 2,
                                        v: map.data + ySize + cSize, vStride: width / 2, width: width, height: height)
            } catch { throw .image(error) }
            let lens = lensControl.current
            try renderer.render(camera: camera, lens: lens, frameIndex: frameIndex, into: planes)
            tagPainter?.paint(into: planes, camera: camera) { x, y in renderer.depthAt(x: x, y: y) }
            remember(lens, frameID: UInt32(truncatingIfNeeded: frameIndex))
        } catch {
            failure = error
        }
        gst_buffer_unmap(buffer, &map)
        if let failure {
            gst_buffer_unref(buffer)
            throw failure
        }
        return buffer
    }
}

extension SyntheticSource {
    /// The lens frame `frameID` was rendered with (the last 64 frames).
    func lens(forFrame frameID: UInt32) -> LensState? { renderedLenses.withLock { $0.lenses[frameID] } }

    fileprivate func remember(_ lens: LensState, frameID: UInt32) {
        renderedLenses.withLock { r in
            r.ids.append(frameID)
            r.lenses[frameID] = lens
            if r.ids.count > 64 { r.lenses.removeValue(forKey: r.ids.removeFirst()) }
        }
    }
}

/// What the render thread has done.
public struct SyntheticSourceStats: Sendable {
    public var framesRendered: UInt64 = 0
    /// Frame slots skipped because rendering fell behind real time.
    public var framesSkipped: UInt64 = 0
    /// Frames rendered but dropped by the source's two-frame queue before encoding (the
    /// pipeline behind it was held up): never sent, so neither with nor without a pose.
    public var framesDropped: UInt64 = 0
    /// Frames the renderer refused (an invalid lens or camera): not sent.
    public var renderErrors: UInt64 = 0
    public var lastRenderNanos: UInt64 = 0
    public var maxRenderNanos: UInt64 = 0
    public var lastError: String?
}

extension DepthMap: DepthSampler {}

private extension Int32 {
    var isTrue: Bool { self != 0 }
}

/// The synthetic camera knows every pixel's depth: the depth background's source.
extension SyntheticSource: EffectDepthSource {
    func setDepthWanted(_ wanted: Bool) {
        effectDepth.withLock { d in
            d.wanted = wanted
            if !wanted { d.maps.removeAll() }
        }
    }

    func depthMap(forFrame frameID: UInt32) -> DepthMap? {
        effectDepth.withLock { d in d.maps.last { $0.0 == frameID }?.1 }
    }
}
