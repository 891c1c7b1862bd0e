import Foundation

/// The dense linear algebra calibration needs, on matrices of a few dozen to a few
/// hundred unknowns, in Double and row-major `[Double]`: an eigen solver for symmetric
/// matrices (null vectors of the DLT and of Zhang's constraints, the nearest rotation)
/// and a Cholesky solve for the damped normal equations of Levenberg–Marquardt.
enum SmallLinearAlgebra {
    /// Eigenvalues (ascending) and unit eigenvectors (`vectors[i]` belongs to
    /// `values[i]`) of the symmetric `n` × `n` matrix `a`, by cyclic Jacobi rotations:
    /// slow for big matrices, but exact to rounding and never fails on the small ones
    /// used here (9 × 9 at most).
    static func symmetricEigen(_ a: [Double], n: Int) -> (values: [Double], vectors: [[Double]]) {
        precondition(a.count == n * n)
        var m = a
        var v = [Double](repeating: 0, count: n * n)
        for i in 0..<n { v[i * n + i] = 1 }
        let scale = max(m.reduce(0) { max($0, abs($1)) }, .leastNormalMagnitude)
        for _ in 0..<100 {
            var off = 0.0
            for p in 0..<n { for q in (p + 1)..<n { off += m[p * n + q] * m[p * n + q] } }
            if off.squareRoot() <= 1e-17 * scale { break }
            for p in 0..<n {
                for q in (p + 1)..<n {
                    let apq = m[p * n + q]
                    guard abs(apq) > 1e-300 else { continue }
                    // The rotation in the (p, q) plane that zeroes m[p][q].
                    let theta = (m[q * n + q] - m[p * n + p]) / (2 * apq)
                    let t = (theta >= 0 ? 1.0 : -1.0) / (abs(theta) + (theta * theta + 1).squareRoot())
                    let c = 1 / (t * t + 1).squareRoot(), s = t * c
                    for k in 0..<n {
                        let mkp = m[k * n + p], mkq = m[k * n + q]
                        m[k * n + p] = c * mkp - s * mkq
                        m[k * n + q] = s * mkp + c * mkq
                    }
                    for k in 0..<n {
                        let mpk = m[p * n + k], mqk = m[q * n + k]
                        m[p * n + k] = c * mpk - s * mqk
                        m[q * n + k] = s * mpk + c * mqk
                    }
                    for k in 0..<n {
                        let vkp = v[k * n + p], vkq = v[k * n + q]
                        v[k * n + p] = c * vkp - s * vkq
                        v[k * n + q] = s * vkp + c * vkq
                    }
                }
            }
        }
        let order = (0..<n).sorted { m[$0 * n + $0] < m[$1 * n + $1] }
        return (order.map { m[$0 * n + $0] }, order.map { j in (0..<n).map { v[$0 * n + j] } })
    }

    /// The unit vector `x` that minimises |A x| for the rows `a` (each `n` long):
    /// the eigenvector of AᵀA with the smallest eigenvalue, with the two smallest
    /// eigenvalues (their ratio tells how well the null vector is pinned down).
    static func nullVector(rows a: [[Double]], n: Int) -> (vector: [Double], smallest: Double, next: Double) {
        var ata = [Double](repeating: 0, count: n * n)
        for row in a {
            for i in 0..<n where row[i] != 0 {
                for j in 0..<n { ata[i * n + j] += row[i] * row[j] }
            }
        }
        let eigen = symmetricEigen(ata, n: n)
        return (eigen.vectors[0], eigen.values[0], eigen.values[1])
    }

    /// The solution of `a` x = `b` for a symmetric positive definite `n` × `n` matrix;
    /// nil when it is not positive definite (to rounding).
    static func choleskySolve(_ a: [Double], _ b: [Double], n: Int) -> [Double]? {
        var l = [Double](repeating: 0, count: n * n)
        for i in 0..<n {
            for j in 0...i {
                var s = a[i * n + j]
                for k in 0..<j { s -= l[i * n + k] * l[j * n + k] }
                if i == j {
                    guard s > 1e-300, s.isFinite else { return nil }
                    l[i * n + i] = s.squareRoot()
                } else {
                    l[i * n + j] = s / l[j * n + j]
                }
            }
        }
        var y = [Double](repeating: 0, count: n)
        for i in 0..<n {
            var s = b[i]
            for k in 0..<i { s -= l[i * n + k] * y[k] }
            y[i] = s / l[i * n + i]
        }
        var x = [Double](repeating: 0, count: n)
        for i in stride(from: n - 1, through: 0, by: -1) {
            var s = y[i]
            for k in (i + 1)..<n { s -= l[k * n + i] * x[k] }
            x[i] = s / l[i * n + i]
        }
        return x
    }

    /// The rotation nearest to `m` (its orthogonal polar factor, m (mᵀm)^−½), with a
    /// determinant of +1; nil when `m` is singular.
    static func nearestRotation(_ m: Matrix3) -> Matrix3? {
        let mtm = m.transposed * m
        let eigen = symmetricEigen(mtm.m, n: 3)
        guard eigen.values[0] > 1e-24 else { return nil }
        // (mᵀm)^−½ = V diag(1/√λ) Vᵀ
        var inv = [Double](repeating: 0, count: 9)
        for k in 0..<3 {
            let e = eigen.vectors[k], s = 1 / eigen.values[k].squareRoot()
            for i in 0..<3 { for j in 0..<3 { inv[i * 3 + j] += s * e[i] * e[j] } }
        }
        let r = m * Matrix3(inv)
        return r.determinant > 0 ? r : nil
    }
}

extension Matrix3 {
    var determinant: Double {
        m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6])
    }
}
