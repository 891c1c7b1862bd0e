import PoseCastKit

/// A camera pose found from the tags in one picture.
public struct TagPoseFix: Sendable, Hashable {
    /// The camera in the tag map's world.
    public var camera: CameraModel
    /// The ids of the tags the pose rests on, widest margin first.
    public var tags: [Int]
    /// Root-mean-square distance, in pixels, between the tags' corners as seen and as the
    /// pose projects them.
    public var reprojectionErrorPx: Double
}

/// The camera's pose from the tags it sees and where the map says they are: each tag's
/// own pose (the library's, which settles a single tag's two-way ambiguity) gives a
/// candidate; the one that best explains every tag seen is refined over all their corners
/// at once (Levenberg–Marquardt on the reprojection error, six unknowns).
public enum TagPoseSolver {
    /// A tag's corners in its own frame for a side of 1 m (x right, y up, z out of its
    /// face), in the order of `TagSighting.corners`.
    static let corners: [SIMD3<Double>] = [SIMD3(-0.5, -0.5, 0), SIMD3(0.5, -0.5, 0), SIMD3(0.5, 0.5, 0), SIMD3(-0.5, 0.5, 0)]

    /// Sightings a pose may rest on: in the map, read with at most `maxHamming` corrected
    /// bits and a margin of at least `minMargin`.
    public static func usable(_ sightings: [TagSighting], map: TagMap, maxHamming: Int = 1, minMargin: Float = 15) -> [TagSighting] {
        sightings.filter { map.tags[$0.id] != nil && $0.hamming <= maxHamming && $0.decisionMargin >= minMargin && $0.poseError >= 0 }
    }

    /// A pose whose corners are on average farther than this (pixels) from where it puts
    /// them is not believed: a misread tag, or tags that disagree with the map.
    public static let maxErrorPx = 3.0

    /// The camera's pose, or nil when no usable tag is in view or the best pose found
    /// misses the corners by over `maxErrorPx`.
    public static func solve(_ sightings: [TagSighting], map: TagMap, intrinsics: CameraIntrinsics,
                             width: Int, height: Int) -> TagPoseFix? {
        let seen = usable(sightings, map: map)
        guard !seen.isEmpty else { return nil }
        let lens = Lens(intrinsics, width: width, height: height)
        var points: [(world: SIMD3<Double>, pixel: SIMD2<Double>)] = []
        for s in seen {
            let tag = map.tags[s.id]!
            for (corner, pixel) in zip(corners, s.corners) {
                points.append((SIMD3(tag.world((corner * Double(tag.size)).vector3)), pixel))
            }
        }
        let candidates = seen.map { candidate(from: $0, tag: map.tags[$0.id]!) }
        guard var best = candidates.min(by: { lens.squaredError($0, points) < lens.squaredError($1, points) }) else { return nil }
        best = refine(best, points: points, lens: lens)
        let rms = (lens.squaredError(best, points) / Double(points.count)).squareRoot()
        guard rms.isFinite, rms <= maxErrorPx else { return nil }
        let camera = CameraModel(position: best.position.vector3, orientation: best.rotation.quaternion, intrinsics: intrinsics)
        return TagPoseFix(camera: camera, tags: seen.map(\.id), reprojectionErrorPx: rms)
    }

    /// Camera-to-world rotation and the camera's position.
    struct Pose { var rotation: Matrix3; var position: SIMD3<Double> }

    /// The camera's pose that the library's pose of one tag implies.
    static func candidate(from s: TagSighting, tag: TagMap.Tag) -> Pose {
        // Library: optical = R · tagLib + t, with tagLib = F · tagOurs and project = F · optical.
        let a = Matrix3.flipYZ * s.rotation * Matrix3.flipYZ          // our tag frame → our camera frame
        let b = Matrix3.flipYZ * (s.translation * Double(tag.size))
        let tagToWorld = Matrix3(tag.orientation)
        let rotation = tagToWorld * a.transposed
        return Pose(rotation: rotation, position: SIMD3(tag.position) - rotation * b)
    }

    /// Levenberg–Marquardt on the corners' reprojection error, from `start`.
    static func refine(_ start: Pose, points: [(world: SIMD3<Double>, pixel: SIMD2<Double>)], lens: Lens) -> Pose {
        var pose = start
        var error = lens.squaredError(pose, points)
        var lambda = 1e-3
        func moved(_ p: Pose, _ d: [Double]) -> Pose {
            Pose(rotation: Matrix3.rotation(SIMD3(d[0], d[1], d[2])) * p.rotation, position: p.position + SIMD3(d[3], d[4], d[5]))
        }
        for _ in 0..<20 {
            let r = lens.residuals(pose, points)
            let step = 1e-7
            let columns: [[Double]] = (0..<6).map { k in
                var d = [Double](repeating: 0, count: 6); d[k] = step
                let shifted = lens.residuals(moved(pose, d), points)
                return zip(shifted, r).map { ($0 - $1) / step }
            }
            var normal = [Double](repeating: 0, count: 36), gradient = [Double](repeating: 0, count: 6)
            for i in 0..<6 {
                gradient[i] = zip(columns[i], r).reduce(0) { $0 + $1.0 * $1.1 }
                for j in 0..<6 { normal[i * 6 + j] = zip(columns[i], columns[j]).reduce(0) { $0 + $1.0 * $1.1 } }
            }
            var improved = false
            for _ in 0..<8 {
                var damped = normal
                for i in 0..<6 { damped[i * 6 + i] *= 1 + lambda }
                guard let delta = solve6(damped, gradient.map { -$0 }) else { lambda *= 10; continue }
                let next = moved(pose, delta)
                let nextError = lens.squaredError(next, points)
                if nextError < error {
                    let gain = error - nextError
                    pose = next; error = nextError; lambda = max(lambda / 10, 1e-9); improved = true
                    if gain < 1e-12 { return pose }
                    break
                }
                lambda *= 10
            }
            if !improved { break }
        }
        return pose
    }

    /// A 6×6 linear system by Gaussian elimination with partial pivoting; nil when singular.
    static func solve6(_ a: [Double], _ b: [Double]) -> [Double]? {
        var m = a, v = b
        let n = 6
        for col in 0..<n {
            let pivot = (col..<n).max { abs(m[$0 * n + col]) < abs(m[$1 * n + col]) }!
            guard abs(m[pivot * n + col]) > 1e-18 else { return nil }
            if pivot != col {
                for k in 0..<n { m.swapAt(col * n + k, pivot * n + k) }
                v.swapAt(col, pivot)
            }
            for row in (col + 1)..<n {
                let f = m[row * n + col] / m[col * n + col]
                for k in col..<n { m[row * n + k] -= f * m[col * n + k] }
                v[row] -= f * v[col]
            }
        }
        var x = [Double](repeating: 0, count: n)
        for row in stride(from: n - 1, through: 0, by: -1) {
            var s = v[row]
            for k in (row + 1)..<n { s -= m[row * n + k] * x[k] }
            x[row] = s / m[row * n + row]
        }
        return x
    }

    /// The pinhole in pixels (the project's camera: looking down −Z, y up; pixels x right,
    /// y down).
    struct Lens {
        var fx: Double, fy: Double, cx: Double, cy: Double

        init(_ k: CameraIntrinsics, width: Int, height: Int) {
            fx = Double(k.fx) * Double(width); cx = Double(k.cx) * Double(width)
            fy = Double(k.fy) * Double(height); cy = Double(k.cy) * Double(height)
        }

        func project(_ pose: Pose, _ world: SIMD3<Double>) -> SIMD2<Double>? {
            let c = pose.rotation.transposed * (world - pose.position)
            let depth = -c.z
            guard depth > 1e-3 else { return nil }
            return SIMD2(cx + fx * c.x / depth, cy - fy * c.y / depth)
        }

        /// Every corner's error, x and y, in pixels (a corner behind the camera counts 1e4).
        func residuals(_ pose: Pose, _ points: [(world: SIMD3<Double>, pixel: SIMD2<Double>)]) -> [Double] {
            points.flatMap { p -> [Double] in
                guard let q = project(pose, p.world) else { return [1e4, 1e4] }
                return [q.x - p.pixel.x, q.y - p.pixel.y]
            }
        }

        func squaredError(_ pose: Pose, _ points: [(world: SIMD3<Double>, pixel: SIMD2<Double>)]) -> Double {
            residuals(pose, points).reduce(0) { $0 + $1 * $1 }
        }
    }
}
