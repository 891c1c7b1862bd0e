import Synchronization

/// The simulated camera's lens, shared between the render thread (reads it once per
/// frame) and whoever drives it (the camera-control routines, from another thread).
public final class LensControl: Sendable {
    private let state: Mutex<LensState>

    public init(_ initial: LensState = LensState()) { state = Mutex(initial) }

    /// The lens the next frame renders with.
    public var current: LensState { state.withLock { $0 } }

    /// Changes the lens (validated: an invalid result is refused and nothing changes).
    public func update(_ change: (inout LensState) -> Void) throws(SyntheticCameraError) {
        try state.withLock { lens throws(SyntheticCameraError) in
            var next = lens
            change(&next)
            try next.validate()
            lens = next
        }
    }
}
