/// A plane-to-picture homography: where the point (x, y) of a flat board lands in the
/// picture, up to the lens's distortion. Row-major 3 × 3, scaled so that the third
/// coordinate of the board's points is positive (it is proportional to their depth).
struct Homography: Sendable, Hashable {
    var m: [Double]

    /// The board point's pixel; nil when it maps to infinity.
    func apply(_ p: SIMD2<Double>) -> SIMD2<Double>? {
        let w = m[6] * p.x + m[7] * p.y + m[8]
        guard abs(w) > 1e-15 else { return nil }
        return SIMD2((m[0] * p.x + m[1] * p.y + m[2]) / w, (m[3] * p.x + m[4] * p.y + m[5]) / w)
    }

    /// The third coordinate of a board point before the division: its depth, up to scale.
    func depth(_ p: SIMD2<Double>) -> Double { m[6] * p.x + m[7] * p.y + m[8] }

    /// Column `c` (0…2) of the matrix.
    func column(_ c: Int) -> SIMD3<Double> { SIMD3(m[c], m[3 + c], m[6 + c]) }

    /// The homography that takes `board` to `picture` with the least algebraic error
    /// (the direct linear transform), both point sets first moved to their centroid and
    /// scaled to a mean distance of √2 so the equations are well conditioned (Hartley's
    /// normalisation). Nil for fewer than 4 points or points nearly on one line.
    static func fit(board: [SIMD2<Double>], picture: [SIMD2<Double>]) -> Homography? {
        guard board.count == picture.count, board.count >= 4,
              let s = Similarity(normalizing: board), let t = Similarity(normalizing: picture) else { return nil }
        var rows: [[Double]] = []
        rows.reserveCapacity(board.count * 2)
        for (b, p) in zip(board, picture) {
            let (x, y) = (s.apply(b).x, s.apply(b).y), (u, v) = (t.apply(p).x, t.apply(p).y)
            rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y, -u])
            rows.append([0, 0, 0, x, y, 1, -v * x, -v * y, -v])
        }
        let null = SmallLinearAlgebra.nullVector(rows: rows, n: 9)
        // Points in general position leave one null vector; points on a line leave two
        // or more, seen as a second eigenvalue near zero (the normalised equations' other
        // eigenvalues grow with the number of points).
        guard null.next > 1e-9 * Double(board.count) else { return nil }
        // H = T⁻¹ H' S
        let h = Matrix3(null.vector)
        var full = (t.inverse * h * s.matrix).m
        let centre = board.reduce(SIMD2<Double>(0, 0), +) / Double(board.count)
        let w = full[6] * centre.x + full[7] * centre.y + full[8]
        guard abs(w) > 1e-300, full.allSatisfy(\.isFinite) else { return nil }
        full = full.map { $0 / w }
        return Homography(m: full)
    }

    /// A scale and shift of the plane: p ↦ scale · (p − centre).
    struct Similarity {
        var scale: Double, centre: SIMD2<Double>

        init?(normalizing points: [SIMD2<Double>]) {
            let centre = points.reduce(SIMD2<Double>(0, 0), +) / Double(points.count)
            let mean = points.reduce(0.0) { acc, p in acc + ((p - centre) * (p - centre)).sum().squareRoot() } / Double(points.count)
            self.centre = centre
            guard mean > 1e-12, mean.isFinite else { return nil }
            scale = 2.0.squareRoot() / mean
        }

        func apply(_ p: SIMD2<Double>) -> SIMD2<Double> { (p - centre) * scale }
        var matrix: Matrix3 { Matrix3([scale, 0, -scale * centre.x, 0, scale, -scale * centre.y, 0, 0, 1]) }
        var inverse: Matrix3 { Matrix3([1 / scale, 0, centre.x, 0, 1 / scale, centre.y, 0, 0, 1]) }
    }
}
