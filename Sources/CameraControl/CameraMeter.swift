import PoseCastKit
import Synchronization
import Imaging

/// Remote focus, exposure and white balance for a camera that meters nothing itself:
/// software metering on the raw frames drives a `CameraBackend`.
///
/// Two kinds of callers:
/// - the **streaming thread** calls `process(frame:frameId:timeNanos:)` once per raw
///   frame: it measures the frame, steps the routines, sets the camera (outside the lock)
///   and returns the frame's `SceneStatus`;
/// - the **control channel** calls the commands (`focus`, `meter`, `lock`, `unlock`,
///   `setMeteringMode`), which only change the plan; the camera moves on the next frame.
///   They return what they did, or refuse with a `CameraMeterError`.
///
/// Routines and their modes (as the 100ms and DeepMedia references name them):
/// - focus: contrast-detect autofocus (`FocusSearch`). `auto` focuses continuously on the
///   auto area (the metering mode at the auto point, the centre unless `focus(point:mode:
///   .auto)` moved it) and searches again when sharpness drops well below its value at the
///   peak; `tapToAutoFocus` focuses on a spot at the tap, holds, and goes back to `auto`
///   once the scene has changed (a frame thumbnail differing from the one at convergence
///   for `sceneChangeFrames` frames in a row); `tapToLockFocus` focuses on the spot and
///   locks until the next tap or `unlock`.
/// - exposure: mean luma of the region to `targetBrightness` ± `brightnessTolerance`
///   through exposure time, then gain.
/// - white balance: grey world over the region through the colour temperature.
///
/// `meter` runs routines once on a region and locks them (for `lockDuration` seconds of
/// frame time after they converge, or until `unlock`); `lock` freezes them where they
/// are; `unlock` returns them to continuous metering on the auto area.
///
/// States: `metering` while moving, `converged` on target (continuous routines stay
/// converged while they follow), `locked` while held (a one-shot reports `converged` on
/// the frame it converges and `locked` from the next), `diverged` when the target cannot
/// be reached (no contrast, range end, a device error), `unsupported` when the camera lacks
/// the control.
///
/// Latency: a setting changed while processing frame n shows from frame
/// n + `frameLatency` on (1: the next frame), unless frames come with the settings they
/// were captured with (`capturedWith`), which then decide. Every measurement is
/// attributed to the lens position that frame was taken at, and exposure and white
/// balance wait for a frame that shows their last change.
public final class CameraMeter: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// Frames between a setting change and the first frame `process` sees with it: 1
        /// when the next frame processed was captured after the change took effect.
        public var frameLatency: Int
        /// Metering mode of the auto area until `setMeteringMode`.
        public var meteringMode: MeteringMode
        /// Target mean luma (16–235 scale) of the exposure routine.
        public var targetBrightness: Double
        /// Exposure has converged within this fraction of the target.
        public var brightnessTolerance: Double
        /// White balance has converged within this |ln(B/R)| of grey.
        public var whiteBalanceTolerance: Double
        /// Thumbnail difference (mean absolute, relative to mean luma) that counts as a
        /// different scene, and for how many frames in a row it must last.
        public var sceneChangeThreshold: Double
        public var sceneChangeFrames: Int
        /// Continuous autofocus searches again after `refocusFrames` frames below
        /// `refocusDrop` × the sharpness it converged at.
        public var refocusDrop: Double
        public var refocusFrames: Int
        /// Most frames a focus search waits for a moving exposure to settle first.
        public var focusWaitFrames: Int
        /// Searches in a row a focus routine starts again because the view changed during
        /// the last one (`FocusSearch`'s scene-change check); after that it stays where it
        /// is and reports `diverged`.
        public var focusSearchRetries: Int

        public init(frameLatency: Int = 1, meteringMode: MeteringMode = .weighted, targetBrightness: Double = 118,
                    brightnessTolerance: Double = 0.10, whiteBalanceTolerance: Double = 0.03,
                    sceneChangeThreshold: Double = 0.06, sceneChangeFrames: Int = 3,
                    refocusDrop: Double = 0.6, refocusFrames: Int = 3, focusWaitFrames: Int = 3, focusSearchRetries: Int = 3) {
            self.frameLatency = frameLatency; self.meteringMode = meteringMode; self.targetBrightness = targetBrightness
            self.brightnessTolerance = brightnessTolerance; self.whiteBalanceTolerance = whiteBalanceTolerance
            self.sceneChangeThreshold = sceneChangeThreshold; self.sceneChangeFrames = sceneChangeFrames
            self.refocusDrop = refocusDrop; self.refocusFrames = refocusFrames; self.focusWaitFrames = focusWaitFrames
            self.focusSearchRetries = focusSearchRetries
        }
    }

    public let backend: any CameraBackend
    public let configuration: Configuration
    private let state: Mutex<MeterState>

    public init(backend: any CameraBackend, configuration: Configuration = Configuration()) {
        self.backend = backend
        self.configuration = configuration
        let capabilities = backend.capabilities
        var values: [CameraSetting: Double] = [:]
        for (setting, range) in capabilities { values[setting] = backend.value(of: setting) ?? range.defaultValue }
        state = Mutex(MeterState(configuration: configuration, capabilities: capabilities, values: values))
    }

    /// The routines this camera can run.
    public var supportedRoutines: [MeteringRoutine] {
        state.withLock { s in MeteringRoutine.allCases.filter { s[$0].supported } }
    }

    /// Where everything stands (as of the last frame and the commands since).
    public var status: SceneStatus { state.withLock { $0.status() } }

    /// The last error the camera reported when a setting was changed.
    public var lastError: CameraControlError? { state.withLock { $0.lastError } }

    // MARK: streaming thread

    /// Meters one raw frame, steps the routines and moves the camera. Call once per frame,
    /// from one thread at a time, with the frame's id and its capture time (any monotonic
    /// clock, nanoseconds; timed locks run on it).
    ///
    /// `capturedWith`: the settings the frame was really captured with, when the source
    /// knows them (the synthetic camera reads its lens once per render:
    /// `SimulatedCameraBackend.settings(of:)`). They take the place of the
    /// `frameLatency` guess, so frames queued for a variable time are still attributed
    /// to the right lens position and exposure.
    public func process(frame: FrameView, frameId: UInt32, timeNanos: UInt64,
                        capturedWith: [CameraSetting: Double]? = nil) -> SceneStatus {
        let changes = state.withLock { $0.process(frame, frameId: frameId, timeNanos: timeNanos, captured: capturedWith) }
        var results: [(setting: CameraSetting, value: Double?, error: CameraControlError?)] = []
        for (setting, value) in changes {
            do throws(CameraControlError) {
                try backend.set(setting, to: value)
                results.append((setting, backend.value(of: setting) ?? value, nil))
            } catch {
                results.append((setting, backend.value(of: setting), error))
            }
        }
        return state.withLock { s in
            s.record(results)
            return s.status()
        }
    }

    // MARK: control channel

    /// Focus on `point`: continuously (`auto`, which also moves the auto area there),
    /// once then until the scene changes (`tapToAutoFocus`), or once then locked
    /// (`tapToLockFocus`).
    @discardableResult
    public func focus(point: NormalizedPoint, mode: FocusMode) throws(CameraMeterError) -> MeterOutcome {
        guard point.isInImage else { throw .invalidPoint(point) }
        return try state.withLock { s throws(CameraMeterError) in
            guard s.focus.supported else { throw .unsupported(routines: [.focus], camera: backend.name) }
            let order = s.nextOrder()
            switch mode {
            case .auto:
                s.resume(.focus)
                s.autoPoint = point
            case .tapToAutoFocus:
                s.start(.focus, area: MeteringArea(mode: .spot, point: point), completion: .holdUntilSceneChange, order: order)
            case .tapToLockFocus:
                s.start(.focus, area: MeteringArea(mode: .spot, point: point), completion: .lock(durationNanos: nil), order: order)
            }
            s.focusMode = mode
            return MeterOutcome(applied: [.focus])
        }
    }

    /// Meters `request.routines` once on the request's area (its mode, or the current
    /// one, at its point, or the auto point), then locks them: for `lockDuration` seconds
    /// after they converge when that is finite and positive, else until `unlock`.
    @discardableResult
    public func meter(_ request: MeterRequest) throws(CameraMeterError) -> MeterOutcome {
        if let p = request.point, !p.isInImage { throw .invalidPoint(p) }
        return try state.withLock { s throws(CameraMeterError) in
            let (go, skipped) = try split(request.routines, s, throwIfUnsupported: request.throwIfUnsupported)
            let area = MeteringArea(mode: request.meteringMode ?? s.meteringMode, point: request.point ?? s.autoPoint)
            let duration: UInt64? = request.lockDuration.flatMap { d in
                d.isFinite && d > 0 ? UInt64(min(d, 1e9) * 1e9) : nil
            }
            let order = s.nextOrder()
            for routine in go { s.start(routine, area: area, completion: .lock(durationNanos: duration), order: order) }
            if go.contains(.focus) { s.focusMode = .tapToLockFocus }
            return MeterOutcome(applied: go, skipped: skipped)
        }
    }

    /// Freezes routines at their current values until `unlock` (a focus search under way
    /// stops at the sharpest position it has seen).
    @discardableResult
    public func lock(routines: [MeteringRoutine], throwIfUnsupported: Bool = false) throws(CameraMeterError) -> MeterOutcome {
        try state.withLock { s throws(CameraMeterError) in
            let (go, skipped) = try split(routines, s, throwIfUnsupported: throwIfUnsupported)
            for routine in go { s.freeze(routine) }
            return MeterOutcome(applied: go, skipped: skipped)
        }
    }

    /// Returns routines to continuous metering on the auto area (focus to `auto`).
    @discardableResult
    public func unlock(routines: [MeteringRoutine], throwIfUnsupported: Bool = false) throws(CameraMeterError) -> MeterOutcome {
        try state.withLock { s throws(CameraMeterError) in
            let (go, skipped) = try split(routines, s, throwIfUnsupported: throwIfUnsupported)
            for routine in go where s[routine].plan != .continuous || s[routine].area != nil { s.resume(routine) }
            return MeterOutcome(applied: go, skipped: skipped)
        }
    }

    /// Changes the metering mode of the auto area; routines metering it continuously
    /// follow (continuous focus searches again). Returns those routines.
    @discardableResult
    public func setMeteringMode(_ mode: MeteringMode) -> MeterOutcome {
        state.withLock { s in
            guard s.meteringMode != mode else {
                return MeterOutcome(applied: [])
            }
            s.meteringMode = mode
            let following = MeteringRoutine.allCases.filter { s[$0].supported && s[$0].plan == .continuous && s[$0].area == nil }
            if following.contains(.focus) { s.focus.restart = true }
            return MeterOutcome(applied: following)
        }
    }

    /// The requested routines (in order, without repeats) split into those the camera can
    /// run and those it cannot; throws for the latter when asked to.
    private func split(_ routines: [MeteringRoutine], _ s: MeterState, throwIfUnsupported: Bool)
        throws(CameraMeterError) -> (go: [MeteringRoutine], skipped: [MeteringRoutine]) {
        var unique: [MeteringRoutine] = []
        for r in routines where !unique.contains(r) { unique.append(r) }
        let skipped = unique.filter { !s[$0].supported }
        if throwIfUnsupported && !skipped.isEmpty { throw .unsupported(routines: skipped, camera: backend.name) }
        return (unique.filter { s[$0].supported }, skipped)
    }
}
