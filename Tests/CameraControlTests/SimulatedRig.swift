import Imaging
import CameraControl
import PoseCastKit
import SyntheticCamera

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The simulated camera in a loop with a `CameraMeter`, as the publisher runs it: each
/// `step()` renders the next frame with the lens as it is at render time, hands it to
/// `process`, and the meter's changes show from the next render on (or `renderDelay`
/// frames later, to simulate a longer pipeline). Frame times advance by
/// `frameIntervalNanos`, so timed locks run on frame time, never on the wall clock.
final class SimulatedRig {
    static let scene = SyntheticScene.standard
    static let eye = Vector3(0, 1.6, 3)
    static let target = Vector3(0, 0.3, 0)

    let renderer: SyntheticRenderer
    let lens: LensControl
    let backend: SimulatedCameraBackend
    let meter: CameraMeter
    var camera: CameraModel
    let width: Int
    let height: Int
    /// Frames between a lens change and the first render that uses it (1: the next frame).
    let renderDelay: Int
    /// Hand the meter the settings each frame was rendered with (instead of leaving it
    /// to its latency parameter).
    var reportsCapturedSettings = false
    var frameIndex: UInt64 = 0
    var timeNanos: UInt64 = 1_000_000_000
    let frameIntervalNanos: UInt64 = 33_333_333
    /// Capture time of the last frame processed.
    private(set) var lastFrameTime: UInt64 = 0
    /// The last frame rendered and the lens it was rendered with.
    private(set) var image: I420Image
    private(set) var renderedLens: LensState
    private var lensQueue: [LensState] = []

    init(width: Int = 640, height: Int = 480, lens initial: LensState = LensState(), camera: CameraModel? = nil,
         scene: SyntheticScene = SimulatedRig.scene, configuration: CameraMeter.Configuration = CameraMeter.Configuration(),
         renderDelay: Int = 1, backend makeBackend: ((SimulatedCameraBackend) -> any CameraBackend)? = nil) throws {
        self.width = width; self.height = height; self.renderDelay = renderDelay
        renderer = try SyntheticRenderer(scene: scene, width: width, height: height)
        lens = LensControl(initial)
        backend = SimulatedCameraBackend(lens: lens)
        meter = CameraMeter(backend: makeBackend?(backend) ?? backend, configuration: configuration)
        self.camera = camera ?? Self.camera(eye: Self.eye, target: Self.target, width: width, height: height)
        image = try I420Image(width: width, height: height)
        renderedLens = initial
    }

    static func camera(eye: Vector3, target: Vector3, width: Int = 640, height: Int = 480) -> CameraModel {
        CameraModel(position: eye, orientation: .lookAt(eye: eye, target: target),
                    intrinsics: SyntheticRenderer.defaultIntrinsics(width: width, height: height))
    }

    /// Camera on the demo orbit (radius 3 m, 1.6 m up, looking at the ball).
    static func orbitCamera(degrees: Float, radius: Float = 3, width: Int = 640, height: Int = 480) -> CameraModel {
        let a = degrees * .pi / 180
        return camera(eye: Vector3(radius * sin(a), 1.6, radius * cos(a)), target: target, width: width, height: height)
    }

    /// Renders the next frame and lets the meter process it.
    @discardableResult
    func step() throws -> SceneStatus {
        // The lens of this render: as set `renderDelay` process calls ago.
        lensQueue.append(lens.current)
        while lensQueue.count > renderDelay { lensQueue.removeFirst() }
        renderedLens = lensQueue[0]
        image = try renderer.render(camera: camera, lens: renderedLens, frameIndex: frameIndex)
        let captured = reportsCapturedSettings ? backend.settings(of: renderedLens) : nil
        let status = image.withFrameView {
            meter.process(frame: $0, frameId: UInt32(truncatingIfNeeded: frameIndex), timeNanos: timeNanos, capturedWith: captured)
        }
        lastFrameTime = timeNanos
        frameIndex += 1
        timeNanos += frameIntervalNanos
        return status
    }

    /// `count` frames; their statuses.
    func run(_ count: Int) throws -> [SceneStatus] { try (0..<count).map { _ in try step() } }

    /// Steps until `condition` holds (at most `limit` frames); the statuses seen, the
    /// last one the first that satisfied it (or the limit's).
    func run(until condition: (SceneStatus) -> Bool, limit: Int) throws -> [SceneStatus] {
        var seen: [SceneStatus] = []
        for _ in 0..<limit {
            let s = try step()
            seen.append(s)
            if condition(s) { break }
        }
        return seen
    }

    /// Measures `area` in the last frame rendered.
    func measureLast(_ area: MeteringArea) -> RegionMeasurement {
        image.withFrameView { RegionMeter.measure($0, area: area) }
    }

    /// Sharpness of `area` with the lens at `lensPosition` (everything else as the lens
    /// is now), averaged over `frames` noise patterns. Renders aside: the loop is untouched.
    func sharpness(lensPosition: Double, area: MeteringArea, frames: Int = 3) throws -> Double {
        var lensState = lens.current
        lensState.focusDistance = Float(SimulatedCameraBackend.focusDistance(lensPosition: min(max(lensPosition, 0), 1)))
        var total = 0.0
        for k in 0..<frames {
            let img = try renderer.render(camera: camera, lens: lensState, frameIndex: 10_000 + UInt64(k) * 7)
            total += img.withFrameView { RegionMeter.measure($0, area: area) }.sharpness
        }
        return total / Double(frames)
    }

    /// The region's peak sharpness, found by sweeping focus: coarse over the whole range,
    /// then finely around the best coarse position and the true depth (if given).
    func peakSharpness(area: MeteringArea, near truth: Double? = nil) throws -> (position: Double, sharpness: Double) {
        var best = (position: 0.0, sharpness: -1.0)
        func probe(_ p: Double, frames: Int) throws {
            let s = try sharpness(lensPosition: p, area: area, frames: frames)
            if s > best.sharpness { best = (p, s) }
        }
        for k in 0...40 { try probe(Double(k) / 40, frames: 1) }
        var centres = [best.position]
        if let truth { centres.append(truth) }
        best.sharpness = -1
        for c in centres {
            for k in -25...25 { try probe(min(max(c + Double(k) * 0.001, 0), 1), frames: 3) }
        }
        return best
    }

    /// Exact depth (metres along the optical axis) of what the camera sees at `point`.
    func trueDepth(at point: NormalizedPoint) -> (depth: Double, name: String)? {
        guard let hit = renderer.scene.intersect(camera.ray(through: point)) else { return nil }
        return (Double(-camera.toCamera(hit.point).z), hit.name)
    }
}

/// A simulated camera missing some controls (for the unsupported-routine paths).
final class PartialBackend: CameraBackend {
    let base: SimulatedCameraBackend
    let capabilities: [CameraSetting: SettingRange]
    var name: String { "partial simulated" }

    init(_ base: SimulatedCameraBackend, without missing: Set<CameraSetting>) {
        self.base = base
        capabilities = base.capabilities.filter { !missing.contains($0.key) }
    }

    func value(of setting: CameraSetting) -> Double? { capabilities[setting] == nil ? nil : base.value(of: setting) }

    func set(_ setting: CameraSetting, to value: Double) throws(CameraControlError) {
        guard capabilities[setting] != nil else { throw .unsupported(setting, reason: "not in this test camera") }
        try base.set(setting, to: value)
    }
}
