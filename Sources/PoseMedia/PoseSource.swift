import Imaging
import PoseCastKit

/// Produces the pose of a frame: called once per captured frame, on the streaming thread.
public typealias PoseSource = @Sendable (_ frameID: UInt32, _ captureTimeNanos: UInt64) -> FramePose

/// Produces the pose of a frame from its own pixels (a tag tracker): called once per
/// captured frame, on the streaming thread, with the frame's planes (valid during the
/// call only). When given, it is asked instead of the `PoseSource`.
public typealias FramePoseSource = @Sendable (_ frame: FrameView, _ frameID: UInt32, _ captureTimeNanos: UInt64) -> FramePose
