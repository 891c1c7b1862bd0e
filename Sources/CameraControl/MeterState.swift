import PoseCastKit
import Imaging

/// Everything `CameraMeter` keeps between frames, and the per-frame logic of its three
/// routines. A value type behind the meter's one mutex: the methods run under the lock
/// and never call the camera; the moves they decide come back to the meter as a list
/// to apply after the lock is released.
struct MeterState {
    /// What a one-shot routine does once it has converged (or given up).
    enum Completion: Sendable, Hashable {
        /// Hold the value for that many nanoseconds (nil: until unlocked or re-tapped).
        case lock(durationNanos: UInt64?)
        /// Hold the value until the scene changes, then go back to continuous auto.
        case holdUntilSceneChange
    }

    enum Plan: Sendable, Hashable {
        /// Keep following the region (auto).
        case continuous
        /// Meter the region once, then `Completion`.
        case oneShot(Completion)
        /// Frozen until the frame time given (nil: until unlocked).
        case locked(untilNanos: UInt64?)
        /// Focus held after a tap-to-autofocus, watching for a scene change.
        case holding
    }

    struct Slot: Sendable, Hashable {
        var supported: Bool
        var plan = Plan.continuous
        /// Where it measures; nil: the auto area (metering mode at the auto point).
        var area: MeteringArea?
        var state = RoutineState.metering
        var measure: Double?
        /// Command sequence number of the last command that gave it an area (status region).
        var order: UInt64 = 0
        /// A command asked for a fresh start.
        var restart = true
        /// Call at which this routine last changed a setting.
        var lastChange: UInt64?
        /// After a device error, no new attempt before this call.
        var blockedUntil: UInt64 = 0
    }

    let configuration: CameraMeter.Configuration
    let capabilities: [CameraSetting: SettingRange]
    var focus: Slot
    var exposure: Slot
    var whiteBalance: Slot
    var focusMode = FocusMode.auto
    var meteringMode: MeteringMode
    /// Centre of the auto area.
    var autoPoint = MeteringArea.center
    /// Current camera values (nil: unsupported).
    var values: [CameraSetting: Double]
    /// Process calls so far (the current one while a frame is being processed).
    var call: UInt64 = 0
    /// Lens position after each recent call (call 0: at start).
    var lensLog: [(call: UInt64, value: Double)] = []
    var search: FocusSearch?
    /// Continuous focus: sharpness at the last convergence, and frames since below it.
    var focusReference: Double?
    /// Focus searches in a row that ended because the view changed under them.
    var sceneChangedSearches = 0
    var offReferenceFrames = 0
    /// Tap-to-autofocus: the scene at convergence, and frames it has looked different.
    var sceneReference: SceneThumbnail?
    var changedFrames = 0
    /// Frames a focus search has waited for exposure to settle.
    var focusWaitFrames = 0
    /// A lens move a command asked for (lock during a search), made on the next frame.
    var pendingLens: Double?
    var sequence: UInt64 = 0
    var frameWidth = 1280, frameHeight = 720
    var frameId: UInt32 = 0
    var now: UInt64 = 0
    /// The settings the current frame was captured with, when its source knows them.
    var captured: [CameraSetting: Double]?
    var lastError: CameraControlError?

    init(configuration: CameraMeter.Configuration, capabilities: [CameraSetting: SettingRange], values: [CameraSetting: Double]) {
        self.configuration = configuration
        self.capabilities = capabilities
        self.values = values
        meteringMode = configuration.meteringMode
        focus = Slot(supported: capabilities[.lensPosition] != nil)
        exposure = Slot(supported: capabilities[.exposureMs] != nil || capabilities[.gain] != nil)
        whiteBalance = Slot(supported: capabilities[.whiteBalanceKelvin] != nil)
        if let lens = values[.lensPosition] { lensLog = [(0, lens)] }
    }

    var latency: Int { max(configuration.frameLatency, 1) }
    var autoArea: MeteringArea { MeteringArea(mode: meteringMode, point: autoPoint) }

    subscript(routine: MeteringRoutine) -> Slot {
        get {
            switch routine {
            case .focus: focus
            case .exposure: exposure
            case .whiteBalance: whiteBalance
            }
        }
        set {
            switch routine {
            case .focus: focus = newValue
            case .exposure: exposure = newValue
            case .whiteBalance: whiteBalance = newValue
            }
        }
    }

    // MARK: commands

    mutating func nextOrder() -> UInt64 { sequence += 1; return sequence }

    /// Back to continuous metering over the auto area.
    mutating func resume(_ routine: MeteringRoutine) {
        self[routine].plan = .continuous
        self[routine].area = nil
        self[routine].restart = true
        self[routine].state = .metering
        if routine == .focus {
            focusMode = .auto
            search = nil
            sceneReference = nil
        }
    }

    /// Freezes a routine where it is (a focus search in progress stops at its best sample).
    mutating func freeze(_ routine: MeteringRoutine) {
        self[routine].plan = .locked(untilNanos: nil)
        self[routine].state = .locked
        if routine == .focus {
            if let best = search?.best?.position, best != values[.lensPosition] { pendingLens = best }
            search = nil
            sceneReference = nil
        }
    }

    /// Starts a one-shot metering of `area`.
    mutating func start(_ routine: MeteringRoutine, area: MeteringArea, completion: Completion, order: UInt64) {
        self[routine].plan = .oneShot(completion)
        self[routine].area = area
        self[routine].order = order
        self[routine].restart = true
        self[routine].state = .metering
        if routine == .focus { pendingLens = nil; sceneReference = nil }
    }

    // MARK: one frame

    /// Measures `frame`, steps every routine and returns the setting changes to make.
    mutating func process(_ frame: FrameView, frameId: UInt32, timeNanos: UInt64,
                          captured: [CameraSetting: Double]?) -> [(CameraSetting, Double)] {
        call += 1
        frameWidth = frame.width; frameHeight = frame.height
        self.frameId = frameId
        now = timeNanos
        self.captured = captured
        for routine in MeteringRoutine.allCases {
            if case .locked(let until?) = self[routine].plan, until <= now { resume(routine) }
        }
        var cache: [MeteringArea: RegionMeasurement] = [:]
        var changes: [CameraSetting: Double] = [:]
        // Exposure first: focus looks at whether it is still moving.
        if exposure.supported { stepExposure(frame, &cache, &changes) }
        if whiteBalance.supported { stepWhiteBalance(frame, &cache, &changes) }
        if focus.supported { stepFocus(frame, &cache, &changes) }
        return CameraSetting.allCases.compactMap { s in changes[s].map { (s, $0) } }
    }

    /// Records what the camera took (the value it reports after the call, or the error).
    mutating func record(_ results: [(setting: CameraSetting, value: Double?, error: CameraControlError?)]) {
        for r in results {
            if let v = r.value { values[r.setting] = v }
            guard let error = r.error else { continue }
            lastError = error
            let routine: MeteringRoutine = switch r.setting {
            case .lensPosition: .focus
            case .exposureMs, .gain: .exposure
            case .whiteBalanceKelvin: .whiteBalance
            }
            self[routine].state = .diverged
            self[routine].blockedUntil = call + 30
            if routine == .focus { search = nil; focusReference = focus.measure }
        }
        if let lens = values[.lensPosition] {
            lensLog.append((call, lens))
            if lensLog.count > 64 { lensLog.removeFirst(lensLog.count - 64) }
        }
    }

    private func measurement(_ area: MeteringArea, _ frame: FrameView,
                             _ cache: inout [MeteringArea: RegionMeasurement]) -> RegionMeasurement {
        if let m = cache[area] { return m }
        let m = RegionMeter.measure(frame, area: area)
        cache[area] = m
        return m
    }

    /// The lens position the current frame was taken at: as its source reported it, else
    /// the value after call `call − latency` (nil when that is older than the log).
    var lensOfCurrentFrame: Double? {
        if let lens = captured?[.lensPosition] { return lens }
        let target = call >= UInt64(latency) ? call - UInt64(latency) : 0
        return lensLog.last { $0.call <= target }?.value
    }

    private mutating func stepFocus(_ frame: FrameView, _ cache: inout [MeteringArea: RegionMeasurement],
                                    _ changes: inout [CameraSetting: Double]) {
        if let p = pendingLens { changes[.lensPosition] = p; pendingLens = nil }
        let m = measurement(focus.area ?? autoArea, frame, &cache)
        focus.measure = m.sharpness
        switch focus.plan {
        case .locked:
            focus.state = .locked
            search = nil
            return
        case .holding:
            let thumbnail = SceneThumbnail(frame)
            if let reference = sceneReference, thumbnail.difference(from: reference) > configuration.sceneChangeThreshold {
                changedFrames += 1
            } else {
                changedFrames = 0
            }
            guard changedFrames >= configuration.sceneChangeFrames else { return }
            // The scene is a different one: back to continuous auto, searching from this frame.
            resume(.focus)
            focus.order = nextOrder()
        case .continuous, .oneShot:
            break
        }
        guard call >= focus.blockedUntil, let lens = values[.lensPosition] else { return }
        if focus.restart {
            focus.restart = false
            search = nil
            focusReference = nil
        }
        if search == nil, focus.plan == .continuous {
            if let reference = focusReference {
                // Watching: search again when sharpness falls well below what it was at the
                // peak (or, after a flat scene, rises well above it).
                let drop = configuration.refocusDrop
                let off = m.sharpness < drop * reference || (focus.state == .diverged && m.sharpness * drop > reference)
                offReferenceFrames = off ? offReferenceFrames + 1 : 0
                if offReferenceFrames < configuration.refocusFrames { return }
            }
            offReferenceFrames = 0
        }
        if search == nil {
            // Exposure first: sharpness samples taken at different exposures do not compare
            // (sensor noise does not scale with the signal), so a search waits a few frames
            // for a moving exposure to settle.
            if exposure.supported, exposure.state == .metering, focusWaitFrames < configuration.focusWaitFrames {
                focusWaitFrames += 1
                focus.state = .metering
                return
            }
            focusWaitFrames = 0
            var c = FocusSearch.Configuration()
            c.latency = latency
            let range = capabilities[.lensPosition] ?? SettingRange(minimum: 0, maximum: 1, defaultValue: 0)
            c.positionEpsilon = max(1e-5, range.step / 2)
            search = FocusSearch(start: lens, range: range.minimum...max(range.maximum, range.minimum + 1e-6), configuration: c)
        }
        guard var s = search else { return }
        let step = s.step(position: lensOfCurrentFrame, sharpness: m.sharpness)
        search = s
        switch step {
        case .move(let p):
            changes[.lensPosition] = p
            focus.state = .metering
        case .hold:
            focus.state = .metering
        case .converged:
            finishFocus(.converged, frame, sharpness: m.sharpness)
        case .diverged(let p):
            if p != lens { changes[.lensPosition] = p }
            finishFocus(.diverged, frame, sharpness: m.sharpness)
        case .sceneChanged:
            // Search again from here, on the view as it is now; after a few in a row (a
            // view that never holds still) leave the lens where it is, saying no peak was
            // found (continuous focus searches again once sharpness moves well away).
            search = nil
            sceneChangedSearches += 1
            if sceneChangedSearches > configuration.focusSearchRetries {
                finishFocus(.diverged, frame, sharpness: m.sharpness)
            } else {
                focus.state = .metering
                focusReference = nil
            }
        }
    }

    private mutating func finishFocus(_ result: RoutineState, _ frame: FrameView, sharpness: Double) {
        search = nil
        sceneChangedSearches = 0
        focus.state = result
        switch focus.plan {
        case .continuous:
            focusReference = sharpness
            offReferenceFrames = 0
        case .oneShot(.lock(let duration)):
            focus.plan = .locked(untilNanos: duration.map { now &+ $0 })
        case .oneShot(.holdUntilSceneChange):
            focus.plan = .holding
            sceneReference = SceneThumbnail(frame)
            changedFrames = 0
        case .locked, .holding:
            break
        }
    }

    /// True when this frame shows the routine's last change to `settings`: it was captured
    /// with the current values (when its source says), else `latency` frames after it.
    private func settled(_ slot: Slot, _ settings: [CameraSetting]) -> Bool {
        if let captured {
            let known = settings.filter { captured[$0] != nil && values[$0] != nil }
            if !known.isEmpty {
                return known.allSatisfy { abs(captured[$0]! - values[$0]!) <= 1e-6 * max(abs(values[$0]!), 1) }
            }
        }
        guard let last = slot.lastChange else { return true }
        return call >= last + UInt64(latency)
    }

    /// Ends a one-shot routine that has converged or given up.
    private mutating func complete(_ routine: MeteringRoutine) {
        guard case .oneShot(.lock(let duration)) = self[routine].plan else { return }
        self[routine].plan = .locked(untilNanos: duration.map { now &+ $0 })
    }

    private mutating func stepExposure(_ frame: FrameView, _ cache: inout [MeteringArea: RegionMeasurement],
                                       _ changes: inout [CameraSetting: Double]) {
        let m = measurement(exposure.area ?? autoArea, frame, &cache)
        exposure.measure = m.brightness
        if case .locked = exposure.plan { exposure.state = .locked; return }
        if exposure.restart { exposure.restart = false; exposure.state = .metering }
        // Continuous exposure holds while focus searches, so the search compares like with like.
        if exposure.plan == .continuous, search != nil { return }
        guard settled(exposure, [.exposureMs, .gain]), call >= exposure.blockedUntil else { return }
        let control = ExposureControl(target: configuration.targetBrightness, tolerance: configuration.brightnessTolerance,
                                      deadband: configuration.brightnessTolerance * 0.3)
        let current = ExposureControl.Settings(exposureMs: values[.exposureMs], gain: values[.gain])
        let (state, next) = control.step(brightness: m.brightness, current: current, exposureRange: capabilities[.exposureMs],
                                         gainRange: capabilities[.gain], continuous: exposure.plan == .continuous)
        exposure.state = state
        if let next {
            if let ms = next.exposureMs, ms != values[.exposureMs] { changes[.exposureMs] = ms }
            if let g = next.gain, g != values[.gain] { changes[.gain] = g }
            exposure.lastChange = call
        }
        if state == .converged || state == .diverged { complete(.exposure) }
    }

    private mutating func stepWhiteBalance(_ frame: FrameView, _ cache: inout [MeteringArea: RegionMeasurement],
                                           _ changes: inout [CameraSetting: Double]) {
        let m = measurement(whiteBalance.area ?? autoArea, frame, &cache)
        whiteBalance.measure = m.colorCast
        if case .locked = whiteBalance.plan { whiteBalance.state = .locked; return }
        if whiteBalance.restart { whiteBalance.restart = false; whiteBalance.state = .metering }
        guard settled(whiteBalance, [.whiteBalanceKelvin]), call >= whiteBalance.blockedUntil,
              let kelvin = values[.whiteBalanceKelvin], let range = capabilities[.whiteBalanceKelvin] else { return }
        let control = WhiteBalanceControl(tolerance: configuration.whiteBalanceTolerance)
        let (state, next) = control.step(cast: m.colorCast, brightness: m.brightness, kelvin: kelvin, range: range,
                                         continuous: whiteBalance.plan == .continuous)
        whiteBalance.state = state
        if let next {
            changes[.whiteBalanceKelvin] = next
            whiteBalance.lastChange = call
        }
        if state == .converged || state == .diverged { complete(.whiteBalance) }
    }

    // MARK: status

    func status() -> SceneStatus {
        func routine(_ slot: Slot) -> RoutineStatus {
            slot.supported ? RoutineStatus(state: slot.state, measure: slot.measure) : RoutineStatus(state: .unsupported)
        }
        let targeted = [focus, exposure, whiteBalance].filter { $0.supported && $0.area != nil }.max { $0.order < $1.order }
        let area = targeted?.area ?? autoArea
        var remaining: Double?
        for slot in [focus, exposure, whiteBalance] where slot.supported {
            guard case .locked(let until?) = slot.plan else { continue }
            let r = until > now ? Double(until - now) / 1e9 : 0
            remaining = min(remaining ?? r, r)
        }
        return SceneStatus(focus: routine(focus), exposure: routine(exposure), whiteBalance: routine(whiteBalance),
                           focusMode: focusMode, meteringMode: meteringMode,
                           region: area.normalizedRect(width: frameWidth, height: frameHeight),
                           lensPosition: values[.lensPosition], exposureMs: values[.exposureMs], gain: values[.gain],
                           whiteBalanceKelvin: values[.whiteBalanceKelvin], lockRemaining: remaining, frameId: frameId)
    }
}
