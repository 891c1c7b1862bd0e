import Foundation
import PoseCastKit

/// A 3×3 matrix in doubles, row-major: the rotations and the small normal equations
/// the tag pose is solved with (Float loses the last millimetre at a few metres).
struct Matrix3: Sendable, Hashable {
    var m: [Double]   // 9 values, row-major

    init(_ m: [Double]) { precondition(m.count == 9); self.m = m }
    static let identity = Matrix3([1, 0, 0, 0, 1, 0, 0, 0, 1])
    /// diag(1, −1, −1): flips y and z. It turns the library's tag frame (y down, z into
    /// the tag) into ours (y up, z out of its face), and a camera's optical frame (y down,
    /// z forward) into the project's (y up, looking down −Z); it is its own inverse.
    static let flipYZ = Matrix3([1, 0, 0, 0, -1, 0, 0, 0, -1])

    subscript(_ r: Int, _ c: Int) -> Double { m[r * 3 + c] }

    var trace: Double { m[0] + m[4] + m[8] }
    var transposed: Matrix3 { Matrix3([m[0], m[3], m[6], m[1], m[4], m[7], m[2], m[5], m[8]]) }

    static func * (a: Matrix3, b: Matrix3) -> Matrix3 {
        var out = [Double](repeating: 0, count: 9)
        for r in 0..<3 { for c in 0..<3 { out[r * 3 + c] = a[r, 0] * b[0, c] + a[r, 1] * b[1, c] + a[r, 2] * b[2, c] } }
        return Matrix3(out)
    }

    static func * (a: Matrix3, v: SIMD3<Double>) -> SIMD3<Double> {
        SIMD3(a[0, 0] * v.x + a[0, 1] * v.y + a[0, 2] * v.z,
              a[1, 0] * v.x + a[1, 1] * v.y + a[1, 2] * v.z,
              a[2, 0] * v.x + a[2, 1] * v.y + a[2, 2] * v.z)
    }

    /// The rotation of `angle` radians about `axis` (Rodrigues); identity for a zero vector.
    static func rotation(_ omega: SIMD3<Double>) -> Matrix3 {
        let angle = (omega * omega).sum().squareRoot()
        guard angle > 1e-15 else { return .identity }
        let k = omega / angle, c = cos(angle), s = sin(angle), t = 1 - c
        return Matrix3([t * k.x * k.x + c, t * k.x * k.y - s * k.z, t * k.x * k.z + s * k.y,
                        t * k.x * k.y + s * k.z, t * k.y * k.y + c, t * k.y * k.z - s * k.x,
                        t * k.x * k.z - s * k.y, t * k.y * k.z + s * k.x, t * k.z * k.z + c])
    }

    /// The rotation a unit quaternion stands for.
    init(_ q: Quaternion) {
        let (x, y, z, w) = (Double(q.x), Double(q.y), Double(q.z), Double(q.w))
        self.init([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                   2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                   2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)])
    }

    /// The quaternion of this rotation (its columns are the rotated frame's axes).
    var quaternion: Quaternion {
        func column(_ c: Int) -> Vector3 { Vector3(Float(self[0, c]), Float(self[1, c]), Float(self[2, c])) }
        return Quaternion.fromBasis(right: column(0), up: column(1), back: column(2))
    }
}

extension SIMD3 where Scalar == Double {
    init(_ v: Vector3) { self.init(Double(v.x), Double(v.y), Double(v.z)) }
    var vector3: Vector3 { Vector3(Float(x), Float(y), Float(z)) }
    /// The vector's Euclidean length.
    var length: Double { (self * self).sum().squareRoot() }
}
