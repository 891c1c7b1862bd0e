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
    public static func lookAt(eye: Vector3, target: Vector3) -> Quaternion {
        let f = normalize(Vector3(target.x - eye.x, target.y - eye.y, target.z - eye.z))
        let right = normalize(cross(f, Vector3(0, 1, 0)))
        let up = cross(right, f)
        let back = Vector3(-f.x, -f.y, -f.z)
        // Columns of the camera-to-world matrix: right, up, back.
        let (m00, m01, m02) = (right.x, up.x, back.x)
        let (m10, m11, m12) = (right.y, up.y, back.y)
        let (m20, m21, m22) = (right.z, up.z, back.z)
        let trace = m00 + m11 + m22
        var q: Quaternion
        if trace > 0 {
            let s = (trace + 1).squareRoot() * 2
            q = Quaternion(x: (m21 - m12) / s, y: (m02 - m20) / s, z: (m10 - m01) / s, w: s / 4)
        } else if m00 > m11 && m00 > m22 {
            let s = (1 + m00 - m11 - m22).squareRoot() * 2
            q = Quaternion(x: s / 4, y: (m01 + m10) / s, z: (m02 + m20) / s, w: (m21 - m12) / s)
        } else if m11 > m22 {
            let s = (1 + m11 - m00 - m22).squareRoot() * 2
            q = Quaternion(x: (m01 + m10) / s, y: s / 4, z: (m12 + m21) / s, w: (m02 - m20) / s)
        } else {
            let s = (1 + m22 - m00 - m11).squareRoot() * 2
            q = Quaternion(x: (m02 + m20) / s, y: (m12 + m21) / s, z: s / 4, w: (m10 - m01) / s)
        }
        let n = q.norm
        return Quaternion(x: q.x / n, y: q.y / n, z: q.z / n, w: q.w / n)
    }

    static func cross(_ a: Vector3, _ b: Vector3) -> Vector3 {
        Vector3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x)
    }

    static func normalize(_ v: Vector3) -> Vector3 {
        let n = (v.x * v.x + v.y * v.y + v.z * v.z).squareRoot()
        return Vector3(v.x / n, v.y / n, v.z / n)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
