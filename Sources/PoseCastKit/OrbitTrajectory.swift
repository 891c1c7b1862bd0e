#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
/// A camera circling a target at constant height and speed, always looking at it:
/// the built-in pose source of the loopback demo.
public struct OrbitTrajectory: Sendable {
    public var target = Vector3(0, 0, 0)
    public var radius: Float = 2
    public var height: Float = 1.5
    public var degreesPerSecond: Float = 30
    public var intrinsics: CameraIntrinsics

    public init(intrinsics: CameraIntrinsics) { self.intrinsics = intrinsics }

    /// Pose at `seconds` after the start (camera-to-world; camera looks down −Z, +Y up).
    public func pose(at seconds: Double, frameID: UInt32, captureTimeNanos: UInt64) -> FramePose {
        let angle = Float(seconds) * degreesPerSecond * .pi / 180
        let eye = Vector3(target.x + radius * sin(angle), target.y + height, target.z + radius * cos(angle))
        return FramePose(frameID: frameID, captureTimeNanos: captureTimeNanos, position: eye,
                         orientation: Self.lookAt(eye: eye, target: target), intrinsics: intrinsics)
    }

    /// Rotation whose −Z axis points from `eye` to `target`, with +Y as close to world up as possible.
    public static func lookAt(eye: Vector3, target: Vector3) -> Quaternion { Quaternion.lookAt(eye: eye, target: target) }
}
