#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A worker standing still and turning the camera from side to side: yaw sweeps
/// ±`amplitudeDegrees` around the direction of `target` at a constant
/// `degreesPerSecond`, reversing at each end. Unlike the orbit, which keeps the
/// target centred, a pan sweeps the whole scene across the picture: the hardest case
/// for annotations placed with a stale pose.
public struct PanTrajectory: CameraTrajectory {
    public var eye = Vector3(0, 1.6, 3)
    public var target = Vector3(0, 0.3, 0)
    public var amplitudeDegrees: Double = 35
    public var degreesPerSecond: Double = 30

    public init(eye: Vector3 = Vector3(0, 1.6, 3), target: Vector3 = Vector3(0, 0.3, 0),
                amplitudeDegrees: Double = 35, degreesPerSecond: Double = 30) {
        self.eye = eye; self.target = target
        self.amplitudeDegrees = amplitudeDegrees; self.degreesPerSecond = degreesPerSecond
    }

    /// The yaw (degrees, positive to the left) at a time: a triangle wave.
    public func yawDegrees(at seconds: Double) -> Double {
        guard amplitudeDegrees > 0, degreesPerSecond > 0 else { return 0 }
        let period = 4 * amplitudeDegrees / degreesPerSecond
        var phase = (seconds / period).truncatingRemainder(dividingBy: 1)
        if phase < 0 { phase += 1 }
        // 0 → +A → 0 → −A → 0 over one period.
        let a = amplitudeDegrees
        switch phase {
        case ..<0.25: return 4 * a * phase
        case ..<0.75: return a - 4 * a * (phase - 0.25)
        default: return -a + 4 * a * (phase - 0.75)
        }
    }

    public func pose(at seconds: Double) -> RigidPose? {
        guard seconds.isFinite else { return nil }
        let base = Quaternion.lookAt(eye: eye, target: target)
        let yaw = Quaternion(axis: Vector3(0, 1, 0), angleRadians: Float(yawDegrees(at: seconds) * .pi / 180))
        return RigidPose(position: eye, orientation: (yaw * base).normalized)
    }
}
