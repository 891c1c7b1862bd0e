import PoseCastKit

/// Produces the pose of a frame: called once per captured frame, on the streaming thread.
public typealias PoseSource = @Sendable (_ frameID: UInt32, _ captureTimeNanos: UInt64) -> FramePose
