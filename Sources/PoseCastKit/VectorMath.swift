#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Small vector and quaternion algebra for the camera model, trajectories and the
// synthetic camera. Float, because the wire format carries f32.

extension Vector3 {
    public static func + (a: Vector3, b: Vector3) -> Vector3 { Vector3(a.x + b.x, a.y + b.y, a.z + b.z) }
    public static func - (a: Vector3, b: Vector3) -> Vector3 { Vector3(a.x - b.x, a.y - b.y, a.z - b.z) }
    public static func * (a: Vector3, s: Float) -> Vector3 { Vector3(a.x * s, a.y * s, a.z * s) }
    public static func * (s: Float, a: Vector3) -> Vector3 { a * s }
    public static prefix func - (a: Vector3) -> Vector3 { Vector3(-a.x, -a.y, -a.z) }
    public func dot(_ b: Vector3) -> Float { x * b.x + y * b.y + z * b.z }
    public func cross(_ b: Vector3) -> Vector3 {
        Vector3(y * b.z - z * b.y, z * b.x - x * b.z, x * b.y - y * b.x)
    }
    public var length: Float { dot(self).squareRoot() }
    /// Unit vector in the same direction (zero stays zero).
    public var normalized: Vector3 { let n = length; return n > 0 ? self * (1 / n) : self }
    public var isFinite: Bool { x.isFinite && y.isFinite && z.isFinite }
    public func distance(to b: Vector3) -> Float { (self - b).length }
}

extension Quaternion {
    public init(axis: Vector3, angleRadians: Float) {
        let a = axis.normalized, s = sin(angleRadians / 2)
        self.init(x: a.x * s, y: a.y * s, z: a.z * s, w: cos(angleRadians / 2))
    }

    /// Hamilton product: `(a * b).rotate(v) == a.rotate(b.rotate(v))`.
    public static func * (a: Quaternion, b: Quaternion) -> Quaternion {
        Quaternion(x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                   y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
                   z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
                   w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z)
    }

    public var conjugate: Quaternion { Quaternion(x: -x, y: -y, z: -z, w: w) }
    public var normalized: Quaternion {
        let n = norm
        return n > 0 ? Quaternion(x: x / n, y: y / n, z: z / n, w: w / n) : .identity
    }
    public var isFinite: Bool { x.isFinite && y.isFinite && z.isFinite && w.isFinite }

    /// Rotates `v` by the inverse rotation (world → camera for a camera-to-world quaternion).
    public func inverseRotate(_ v: Vector3) -> Vector3 { conjugate.rotate(v) }

    /// Spherical interpolation along the shorter arc; `t` in [0, 1].
    public static func slerp(_ a: Quaternion, _ b: Quaternion, _ t: Float) -> Quaternion {
        var b = b
        var d = a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w
        if d < 0 { b = Quaternion(x: -b.x, y: -b.y, z: -b.z, w: -b.w); d = -d }
        if d > 0.9995 {
            return Quaternion(x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t,
                              z: a.z + (b.z - a.z) * t, w: a.w + (b.w - a.w) * t).normalized
        }
        let theta = acos(d), s = sin(theta)
        let wa = sin((1 - t) * theta) / s, wb = sin(t * theta) / s
        return Quaternion(x: a.x * wa + b.x * wb, y: a.y * wa + b.y * wb,
                          z: a.z * wa + b.z * wb, w: a.w * wa + b.w * wb)
    }

    /// Camera-to-world rotation whose −Z axis points from `eye` to `target`, with +Y as
    /// close to world up as possible (`up` when looking straight up or down is world −Z).
    public static func lookAt(eye: Vector3, target: Vector3) -> Quaternion {
        let f = (target - eye).normalized
        var right = f.cross(Vector3(0, 1, 0))
        if right.length < 1e-6 { right = Vector3(1, 0, 0) }
        right = right.normalized
        let up = right.cross(f)
        return fromBasis(right: right, up: up, back: -f)
    }

    /// The rotation whose columns (camera axes in world coordinates) are the given
    /// orthonormal vectors.
    public static func fromBasis(right: Vector3, up: Vector3, back: Vector3) -> Quaternion {
        let (m00, m01, m02) = (right.x, up.x, back.x)
        let (m10, m11, m12) = (right.y, up.y, back.y)
        let (m20, m21, m22) = (right.z, up.z, back.z)
        let trace = m00 + m11 + m22
        let q: Quaternion
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
        return q.normalized
    }
}
