import ArgumentParser
import PoseCastKit
import SyntheticCamera

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tools for the synthetic AR camera: a renderer benchmark, snapshots, raw frames and
/// the scene's named features (ground truth for taps in benchmarks).
@main
struct PoseCastScene: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "posecast-scene",
        abstract: "Render the synthetic AR camera's scene: benchmark it, write one frame as a PPM, or raw frames; track tags in it.",
        subcommands: [Bench.self, Snapshot.self, Frames.self, Features.self, Tags.self])
}

/// The orbit every subcommand renders from: radius 3 m, 1.6 m up, looking at (0, 0.3, 0).
struct SceneOrbit {
    static let radius: Float = 3
    static let height: Float = 1.6
    static let target = Vector3(0, 0.3, 0)

    static func camera(angleDegrees: Float, width: Int, height: Int) -> CameraModel {
        let a = angleDegrees * .pi / 180
        let eye = Vector3(radius * sin(a), Self.height, radius * cos(a))
        return CameraModel(position: eye, orientation: .lookAt(eye: eye, target: target),
                           intrinsics: SyntheticRenderer.defaultIntrinsics(width: width, height: height))
    }
}
