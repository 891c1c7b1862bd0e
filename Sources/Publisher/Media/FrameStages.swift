internal import CGStreamer
import CameraControl
import PoseCastKit
import PoseMedia
import VideoEffects

/// What every raw frame goes through once its pose is attached, before the encoder, in
/// order (`PoseTagger`'s body, on the streaming thread): framing (a new frame of the size
/// sent, its pose's intrinsics those of its crop), the pose and depth recorded, metering
/// on the camera's own picture, the virtual background, the frame stamp, and the
/// annotations drawn with the frame's final pose.
struct FrameStages: Sendable {
    let width: Int, height: Int
    let captureWidth: Int, captureHeight: Int
    let stampFrameIDs: Bool
    let effects: EffectChain
    let history: FrameHistory
    /// The synthetic camera, for its depth and its lens (nil for a real source).
    let synthetic: SyntheticSource?
    let meter: CameraMeter?
    let overlay: AnnotationOverlay
    let onPoseAttached: (@Sendable (FramePose) -> Void)?

    /// The frame to send for `buffer` (captured with `pose`): nil for the same buffer,
    /// else a new one (owned; `PoseTagger` puts it in the buffer's place).
    func process(_ buffer: UnsafeMutablePointer<GstBuffer>, pose: FramePose) -> UnsafeMutablePointer<GstBuffer>? {
        let framed = effects.frame(buffer, pose: pose)
        let frame = framed.buffer, sent = framed.pose
        history.record(pose: sent)
        let depth = synthetic == nil ? nil : history.entry(pose.frameID)?.depth
        if let crop = framed.crop, let depth {
            history.record(depth: CroppedDepth(capture: depth, crop: crop, captureWidth: captureWidth, captureHeight: captureHeight),
                           frameID: pose.frameID)
        }
        // Metering sees the camera's picture, before any effect or annotation.
        if let meter {
            let lens = synthetic?.lens(forFrame: pose.frameID)
            let settings = lens.flatMap { l in (meter.backend as? SimulatedCameraBackend)?.settings(of: l) }
            PublisherCamera.process(meter, buffer: frame, width: width, height: height, frameId: pose.frameID,
                                    capturedWith: settings)
        }
        effects.background(frame, frameID: pose.frameID, crop: framed.crop)
        if stampFrameIDs {
            var info = GstVideoInfo()
            gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, guint(width), guint(height))
            _ = FrameStamp.write(sent.frameID, into: frame, info: &info)
        }
        // The sent frame's depth (its crop's, when framed), so marks behind nearer things are drawn hidden.
        _ = overlay.draw(on: frame, pose: sent, depth: depth == nil ? nil : history.entry(pose.frameID)?.depth)
        onPoseAttached?(sent)
        return frame == buffer ? nil : frame
    }
}
