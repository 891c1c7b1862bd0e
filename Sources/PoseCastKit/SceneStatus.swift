/// Where a metering routine stands (as the DeepMedia CameraMeter reference names it).
public enum RoutineState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Searching: the value is still moving towards its target.
    case metering
    /// On target, still following the scene (continuous modes).
    case converged
    /// Gave up: the target cannot be reached (range end, no contrast, too dark).
    case diverged
    /// Held: the value does not move until unlocked, re-tapped or the lock expires.
    case locked
    /// The camera cannot do this routine (no such control).
    case unsupported
}

/// A normalised rectangle of the image (origin top-left).
public struct NormalizedRect: Sendable, Hashable, Codable {
    public var x: Float, y: Float, width: Float, height: Float
    public init(x: Float, y: Float, width: Float, height: Float) { self.x = x; self.y = y; self.width = width; self.height = height }
    public static let full = NormalizedRect(x: 0, y: 0, width: 1, height: 1)
}

/// One routine's state and the value it drives.
public struct RoutineStatus: Sendable, Hashable, Codable {
    public var state: RoutineState
    /// The measurement the routine steers on: sharpness (focus), mean luma 0–255
    /// (exposure), or the grey-world colour error (white balance).
    public var measure: Double?
    public init(state: RoutineState, measure: Double? = nil) { self.state = state; self.measure = measure }
}

/// What the publisher's camera is doing, streamed to experts (`sceneStatus`).
public struct SceneStatus: Sendable, Hashable {
    public var focus: RoutineStatus
    public var exposure: RoutineStatus
    public var whiteBalance: RoutineStatus
    public var focusMode: FocusMode
    public var meteringMode: MeteringMode
    /// The region the routines measure.
    public var region: NormalizedRect
    /// Current camera values (nil: the camera has no such control).
    public var lensPosition: Double?
    public var exposureMs: Double?
    public var gain: Double?
    public var whiteBalanceKelvin: Double?
    /// Seconds until a timed lock ends (nil: no timed lock).
    public var lockRemaining: Double?
    /// The raw frame the status was measured on.
    public var frameId: UInt32
    /// The video effects' state (nil from a publisher that reports none).
    public var effects: EffectsSummary?

    public init(focus: RoutineStatus, exposure: RoutineStatus, whiteBalance: RoutineStatus, focusMode: FocusMode,
                meteringMode: MeteringMode, region: NormalizedRect, lensPosition: Double? = nil, exposureMs: Double? = nil,
                gain: Double? = nil, whiteBalanceKelvin: Double? = nil, lockRemaining: Double? = nil, frameId: UInt32 = 0) {
        self.focus = focus; self.exposure = exposure; self.whiteBalance = whiteBalance
        self.focusMode = focusMode; self.meteringMode = meteringMode; self.region = region
        self.lensPosition = lensPosition; self.exposureMs = exposureMs; self.gain = gain
        self.whiteBalanceKelvin = whiteBalanceKelvin; self.lockRemaining = lockRemaining; self.frameId = frameId
    }

    public func routine(_ r: MeteringRoutine) -> RoutineStatus {
        switch r {
        case .focus: focus
        case .exposure: exposure
        case .whiteBalance: whiteBalance
        }
    }
}

/// The publisher's video effects as experts see them in `sceneStatus`.
public struct EffectsSummary: Sendable, Hashable {
    /// "off", "blur" or "image".
    public var background: String
    /// "person" or "depth" while on.
    public var backgroundSource: String?
    /// Segmentation runs in the last second.
    public var segmentationFPS: Double
    /// Mean cost of the background effect per frame (ms).
    public var backgroundMs: Double
    /// "off", "face" or "person".
    public var framing: String
    /// Who may change the framing: "user", "cooperative" or "app".
    public var framingControl: String
    /// Mean cost of the framing effect per frame (ms).
    public var framingMs: Double
    /// Digital zoom of the frame, against the widest view.
    public var zoom: Double
    /// "zoom" or "follow" while an expert's request holds the framing.
    public var request: String?

    public init(background: String, backgroundSource: String?, segmentationFPS: Double, backgroundMs: Double, framing: String,
                framingControl: String, framingMs: Double, zoom: Double, request: String?) {
        self.background = background; self.backgroundSource = backgroundSource; self.segmentationFPS = segmentationFPS
        self.backgroundMs = backgroundMs; self.framing = framing; self.framingControl = framingControl
        self.framingMs = framingMs; self.zoom = zoom; self.request = request
    }
}
