#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
/// A camera circling a target at constant height and angular speed, always looking at it:
/// the built-in pose source of the loopback demo and the default synthetic trajectory.
/// The defaults put the camera at a standing person's eye height, 3 m from a point just
/// above the floor, so the synthetic scene around the origin fills the view.
public struct OrbitTrajectory: CameraTrajectory {
    public var target = Vector3(0, 0.3, 0)
    /// Horizontal distance from the target (metres).
    public var radius: Float = 3
    /// Height of the camera above the ground, y = 0 (metres), not above the target.
    public var height: Float = 1.6
    /// Angular speed about the vertical axis through the target; negative orbits the other way.
    public var degreesPerSecond: Float = 30
    public var intrinsics: CameraIntrinsics

    public init(intrinsics: CameraIntrinsics) { self.intrinsics = intrinsics }

    public init(radius: Float = 3, height: Float = 1.6, target: Vector3 = Vector3(0, 0.3, 0),
                degreesPerSecond: Float = 30, intrinsics: CameraIntrinsics) {
        self.radius = radius; self.height = height; self.target = target
        self.degreesPerSecond = degreesPerSecond; self.intrinsics = intrinsics
    }

    /// Pose at `seconds` after the start (camera-to-world; camera looks down −Z, +Y up).
    public func pose(at seconds: Double) -> RigidPose? {
        // Reduce the angle to one turn in Double: a Float angle loses degrees after hours.
        let degrees = (seconds * Double(degreesPerSecond)).truncatingRemainder(dividingBy: 360)
        guard degrees.isFinite else { return nil }
        let angle = Float(degrees * .pi / 180)
        let eye = Vector3(target.x + radius * sin(angle), height, target.z + radius * cos(angle))
        return RigidPose(position: eye, orientation: Self.lookAt(eye: eye, target: target))
    }

    /// The frame pose at `seconds` after the start, with this orbit's intrinsics. A time the
    /// orbit cannot place (not finite) gives a pose flagged missing at the origin.
    public func pose(at seconds: Double, frameID: UInt32, captureTimeNanos: UInt64) -> FramePose {
        let rigid = pose(at: seconds)
        let placed = rigid ?? RigidPose(position: .zero, orientation: .identity)
        return FramePose(flags: rigid == nil ? .missing : [], frameID: frameID,
                         captureTimeNanos: captureTimeNanos, position: placed.position,
                         orientation: placed.orientation, intrinsics: intrinsics)
    }

    /// Rotation whose −Z axis points from `eye` to `target`, with +Y as close to world up as possible.
    public static func lookAt(eye: Vector3, target: Vector3) -> Quaternion { Quaternion.lookAt(eye: eye, target: target) }
}
