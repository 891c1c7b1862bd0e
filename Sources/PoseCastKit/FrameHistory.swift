import Synchronization

/// Depth of the scene seen in one frame, as the publisher knows it (a depth camera,
/// a tracker's depth map, or the synthetic camera's renderer).
public protocol DepthSampler: Sendable {
    /// Depth along the optical axis (metres) at a normalised image point; nil where
    /// nothing is known or nothing is hit (sky).
    func depth(at point: NormalizedPoint) -> Float?
}

/// The publisher's memory of its recent frames: the pose each went out with and,
/// where the source knows it, its depth. Lets the publisher resolve a tap made on a
/// frame the expert saw a moment ago.
public final class FrameHistory: Sendable {
    public struct Entry: Sendable {
        public var pose: FramePose?
        public var depth: (any DepthSampler)?
    }

    public let capacity: Int
    private struct State {
        var entries: [UInt32: Entry] = [:]
        var order: [UInt32] = []
        var head = 0
        var newestPose: FramePose?
    }
    private let state = Mutex(State())

    /// Keeps the last `capacity` frames (150: five seconds at 30 fps).
    public init(capacity: Int = 150) { self.capacity = max(1, capacity) }

    public func record(pose: FramePose) {
        state.withLock { s in
            Self.update(&s, pose.frameID, capacity: capacity) { $0.pose = pose }
            if !pose.flags.contains(.missing) { s.newestPose = pose }
        }
    }

    public func record(depth: any DepthSampler, frameID: UInt32) {
        state.withLock { s in Self.update(&s, frameID, capacity: capacity) { $0.depth = depth } }
    }

    public func entry(_ frameID: UInt32) -> Entry? { state.withLock { $0.entries[frameID] } }

    /// The newest frame with a usable pose.
    public var newestPose: FramePose? { state.withLock { $0.newestPose } }

    private static func update(_ s: inout State, _ frameID: UInt32, capacity: Int, _ change: (inout Entry) -> Void) {
        if s.entries[frameID] == nil {
            // Ring of frame ids: the oldest is forgotten when a new one arrives.
            if s.order.count < capacity { s.order.append(frameID) } else {
                s.entries.removeValue(forKey: s.order[s.head])
                s.order[s.head] = frameID
                s.head = (s.head + 1) % capacity
            }
            s.entries[frameID] = Entry()
        }
        change(&s.entries[frameID]!)
    }
}
