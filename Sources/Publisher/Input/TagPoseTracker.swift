import Foundation
import Imaging
import PoseCastKit
import PoseMedia
import Synchronization
import TagTracking

/// `--pose apriltag`: each captured frame's pose from the AprilTags in its own pixels,
/// placed by the tag map. A frame with no known tag in view, or whose tags do not agree
/// on a pose, goes out flagged `.missing`: a pose is never made up.
///
/// Runs on the capture's streaming thread, inside the pose attach step (the frame's own
/// pose must be on it before the overlay draws and the encoder takes it); its cost per
/// frame is in the status line (`tag_ms`). Quads are searched at half size (the
/// library's usual speed-up; the corners are still refined at full size).
///
/// Ownership: the tracker owns its detector (which takes one picture at a time); its
/// counts are behind one lock, held only to read or update them.
public final class TagPoseTracker: Sendable {
    public struct Stats: Sendable, Hashable {
        public var frames = 0
        public var framesWithPose = 0
        /// Ids of the tags the last frame's pose rested on.
        public var lastTags: [Int] = []
        /// The last frame's corners' reprojection error (pixels), when it had a pose.
        public var lastErrorPx: Double?
        /// Detection and solving time of the last frame, and its running mean (ms).
        public var lastMs = 0.0, meanMs = 0.0
    }

    private let map: TagMap
    private let intrinsics: CameraIntrinsics
    private let detector: TagDetector
    private let state = Mutex(Stats())

    public init(map: TagMap, intrinsics: CameraIntrinsics) throws(TagTrackingError) {
        self.map = map; self.intrinsics = intrinsics
        detector = try TagDetector(threads: 1, decimate: 2)
    }

    public var stats: Stats { state.withLock { $0 } }

    /// The pose of one frame (its planes valid during the call).
    public func pose(_ frame: FrameView, frameID: UInt32, captureTimeNanos: UInt64) -> FramePose {
        let started = DispatchTime.now().uptimeNanoseconds
        let sightings = (try? detector.detect(grey: frame.y, width: frame.width, height: frame.height, stride: frame.yStride,
                                              intrinsics: intrinsics)) ?? []
        let fix = TagPoseSolver.solve(sightings, map: map, intrinsics: intrinsics, width: frame.width, height: frame.height)
        let ms = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
        state.withLock { s in
            s.frames += 1
            s.lastMs = ms
            s.meanMs += (ms - s.meanMs) / Double(min(s.frames, 30))
            s.lastTags = fix?.tags ?? []
            s.lastErrorPx = fix?.reprojectionErrorPx
            if fix != nil { s.framesWithPose += 1 }
        }
        guard let camera = fix?.camera else {
            return .missing(frameID: frameID, captureTimeNanos: captureTimeNanos, intrinsics: intrinsics)
        }
        return FramePose(flags: [], frameID: frameID, captureTimeNanos: captureTimeNanos, position: camera.position,
                         orientation: camera.orientation, intrinsics: intrinsics)
    }
}
