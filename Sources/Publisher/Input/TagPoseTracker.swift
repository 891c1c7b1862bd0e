import Foundation
import Imaging
import PoseCastKit
import PoseMedia
import Synchronization
import TagTracking

/// `--pose apriltag`: each captured frame's pose from the AprilTags in its own pixels,
/// placed by the tag map (`TagTrack`). A frame whose tags give no pose goes out flagged
/// `.missing`; for up to 100 ms after the last measured pose it goes out predicted from
/// the last two and flagged `.late`. A pose is never made up.
///
/// Runs on the thread that attaches each frame's pose (the frame's own pose must be on
/// it before the overlay draws and the encoder takes it): a thread of its own behind a
/// one-frame leaky queue (`PublisherMedia`'s `tagqueue`), beside the capture's and the
/// encoder's, the capture time read from the frame's timestamp. Its cost per frame and
/// the frames it had no time for are in the status line (`tag_ms`, `tag_frames_dropped`).
/// Quads are searched at half size (the library's usual speed-up; the corners are still
/// refined at full size); each tag's first pose comes from its corners' homography.
///
/// Ownership: the tracker owns its detector (which takes one picture at a time) and its
/// track; both and the counts are behind one lock, held only for the pure track update
/// and the counts, never for the detection.
public final class TagPoseTracker: Sendable {
    public struct Stats: Sendable, Hashable {
        public var frames = 0
        /// Frames whose own tags gave their pose.
        public var framesWithPose = 0
        /// Frames sent with a predicted pose (flagged late).
        public var framesPredicted = 0
        /// Frames whose tags fitted two poses about equally, with nothing to choose.
        public var framesAmbiguous = 0
        /// Ids of the tags the last frame's pose rested on.
        public var lastTags: [Int] = []
        /// The last frame's corners' reprojection error (pixels), when it had a pose.
        public var lastErrorPx: Double?
        /// Detection and solving time of the last frame, and its running mean (ms).
        public var lastMs = 0.0, meanMs = 0.0
    }

    private let intrinsics: CameraIntrinsics
    private let detector: TagDetector
    private let state: Mutex<(track: TagTrack?, stats: Stats)>
    private let map: TagMap
    private let lens: LensDistortion?

    /// `lens`: the camera's measured distortion (`posecast-calibrate`), taken out of the
    /// tags' corners before their pose is solved; nil for a lens taken as a pinhole.
    public init(map: TagMap, intrinsics: CameraIntrinsics, lens: LensDistortion? = nil) throws(TagTrackingError) {
        self.map = map; self.intrinsics = intrinsics; self.lens = lens
        detector = try TagDetector(threads: 1, decimate: 2)
        state = Mutex((nil, Stats()))
    }

    public var stats: Stats { state.withLock { $0.stats } }

    /// The pose of one frame (its planes valid during the call).
    public func pose(_ frame: FrameView, frameID: UInt32, captureTimeNanos: UInt64) -> FramePose {
        let started = DispatchTime.now().uptimeNanoseconds
        let track = state.withLock { $0.track } ?? TagTrack(map: map, intrinsics: intrinsics, width: frame.width, height: frame.height)
        var sightings = track.sightings(at: captureTimeNanos) { search in
            (try? detector.detect(grey: frame.y, width: frame.width, height: frame.height, stride: frame.yStride,
                                  intrinsics: intrinsics, region: search.region, coarser: search.coarser)) ?? []
        }
        if let lens {
            sightings = lens.undistorted(sightings, intrinsics: PixelIntrinsics(intrinsics, width: frame.width, height: frame.height))
        }
        let result = state.withLock { s in
            var track = s.track ?? TagTrack(map: map, intrinsics: intrinsics, width: frame.width, height: frame.height)
            defer { s.track = track }
            return track.update(sightings, nanos: captureTimeNanos)
        }
        let ms = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
        state.withLock { s in
            s.stats.frames += 1
            s.stats.lastMs = ms
            s.stats.meanMs += (ms - s.stats.meanMs) / Double(min(s.stats.frames, 30))
            s.stats.lastTags = []; s.stats.lastErrorPx = nil
            switch result {
            case .measured(let fix):
                s.stats.framesWithPose += 1
                s.stats.lastTags = fix.tags; s.stats.lastErrorPx = fix.reprojectionErrorPx
            case .predicted: s.stats.framesPredicted += 1
            case .lost(.ambiguous): s.stats.framesAmbiguous += 1
            case .lost: break
            }
        }
        switch result {
        case .measured(let fix):
            return FramePose(flags: [], frameID: frameID, captureTimeNanos: captureTimeNanos, position: fix.camera.position,
                             orientation: fix.camera.orientation, intrinsics: intrinsics)
        case .predicted(let camera, _):
            return FramePose(flags: .late, frameID: frameID, captureTimeNanos: captureTimeNanos, position: camera.position,
                             orientation: camera.orientation, intrinsics: intrinsics)
        case .lost:
            return .missing(frameID: frameID, captureTimeNanos: captureTimeNanos, intrinsics: intrinsics)
        }
    }
}
