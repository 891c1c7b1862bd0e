import ArgumentParser

/// Camera calibration from pictures of an AprilTag board: the intrinsics and lens
/// distortion the publisher's `--intrinsics` reads (docs/POSE_SOURCES.md, Calibration).
@main
struct PoseCastCalibrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "posecast-calibrate",
        abstract: "Calibrate a camera (intrinsics and lens distortion) from pictures of an AprilTag board.",
        subcommands: [Board.self, Images.self, Synthetic.self])
}
