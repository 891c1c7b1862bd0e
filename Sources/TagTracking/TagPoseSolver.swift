import Foundation
import PoseCastKit

/// What the tags of one picture say of the camera's pose.
public enum TagPoseOutcome: Sendable, Hashable {
    case fix(TagPoseFix)
    /// No tag of the map read cleanly enough to rest a pose on.
    case noTag
    /// The best pose misses the corners by `rmsPx` (over `TagPoseSolver.maxErrorPx`).
    case poorFit(rmsPx: Double)
    /// Two different poses explain the corners about equally (a lone slanted tag's mirror
    /// pose), and nothing says which: the best and its rival.
    case ambiguous(TagPoseFix, TagPoseFix)
}

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
/// own first pose (from its corners' homography, `TagSighting.rotation`) and that pose's
/// mirror give candidates; the ones that best explain every tag seen are refined over all
/// their corners at once (Levenberg–Marquardt on the reprojection error, six unknowns).
public enum TagPoseSolver {
    /// A tag's corners in its own frame for a side of 1 m (x right, y up, z out of its
    /// face), in the order of `TagSighting.corners`.
    static let corners: [SIMD3<Double>] = [SIMD3(-0.5, -0.5, 0), SIMD3(0.5, -0.5, 0), SIMD3(0.5, 0.5, 0), SIMD3(-0.5, 0.5, 0)]

    /// Sightings a pose may rest on: in the map, read with at most `maxHamming` corrected
    /// bits and a margin of at least `minMargin`, with the tag's white ring inside the
    /// `width` × `height` picture and not mostly covered (`minRingContrast`). The library
    /// finds a tag cut by the picture's edge or by a nearer object too, its corners there
    /// guessed or pulled along an edge that is not the tag's: centimetres off.
    public static func usable(_ sightings: [TagSighting], map: TagMap, width: Int, height: Int,
                              maxHamming: Int = 1, minMargin: Float = 15) -> [TagSighting] {
        sightings.filter { s in
            guard map.tags[s.id] != nil, s.hamming <= maxHamming, s.decisionMargin >= minMargin, s.poseError >= 0,
                  s.ringContrast >= minRingContrast else { return false }
            // One cell of the 8-cell black square: the ring's width.
            var perimeter = 0.0
            for i in 0..<4 {
                let side: SIMD2<Double> = s.corners[i] - s.corners[(i + 1) % 4]
                perimeter += (side * side).sum().squareRoot()
            }
            let ring = perimeter / 4 / 8 + 1
            return s.corners.allSatisfy { c in
                c.x >= ring && c.y >= ring && c.x <= Double(width) - ring && c.y <= Double(height) - ring
            }
        }
    }

    /// A tag whose ring contrast (`TagSighting.ringContrast`) is under this is covered
    /// too much to rest a pose on; one at `wholeRingContrast` or over is seen whole (tags
    /// in full view of the synthetic camera measure 0.85 to 1, and at least 0.8 in a dim,
    /// soft, noisy picture, `TagCoverTests`). In the synthetic scene, partly hidden tags
    /// that put a pose 3 to 15 cm off measured up to 0.63, and ones that did no harm 0.5
    /// to 0.9 (`posecast-scene tags --frames-out`, "rings"): the ratio cannot tell a cover
    /// that leaves the black square's edge alone from one that moves it, so the line is
    /// drawn above every harmful one seen. A cover about as light as the ring is not seen.
    public static let minRingContrast = 0.7, wholeRingContrast = 0.8

    /// The sightings a pose rests on: the usable ones seen whole when there are any (a
    /// partly covered tag beside them adds more doubt than corners), else every usable one.
    static func trusted(_ sightings: [TagSighting], map: TagMap, width: Int, height: Int) -> [TagSighting] {
        let seen = usable(sightings, map: map, width: width, height: height)
        let whole = seen.filter { $0.ringContrast >= wholeRingContrast }
        return whole.isEmpty ? seen : whole
    }

    /// A pose whose corners are on average farther than this (pixels) from where it puts
    /// them is not believed: a misread tag, or tags that disagree with the map.
    public static let maxErrorPx = 3.0

    /// The camera's pose, or nil when no usable tag is in view, the best pose found
    /// misses the corners by over `maxErrorPx`, or two poses explain them about equally.
    public static func solve(_ sightings: [TagSighting], map: TagMap, intrinsics: CameraIntrinsics,
                             width: Int, height: Int) -> TagPoseFix? {
        if case .fix(let fix) = solve(sightings, map: map, intrinsics: intrinsics, width: width, height: height, prior: nil) {
            return fix
        }
        return nil
    }

    /// Two poses this far apart (degrees between their orientations, or metres between
    /// their positions per metre of distance to the tags) are different answers, not one
    /// answer found twice.
    static let distinctDegrees = 1.5, distinctRelativeDistance = 0.01
    /// A runner-up whose corners' RMS error is within this factor of the best pose's (plus
    /// `ambiguitySlackPx`, the corners' noise) explains the picture as well: a slanted
    /// single tag's mirror pose, a small or far tag seen nearly face-on.
    static let ambiguityRatio = 1.6, ambiguitySlackPx = 0.15

    /// The camera's pose from `sightings`: each usable tag's two poses (a slanted square
    /// fits two) and `prior` (the last frame's pose, when recent) are candidates; the best
    /// few are refined over every corner; a runner-up that explains the corners about as
    /// well as the best makes the answer ambiguous, unless `prior` says which one it is
    /// (the one clearly nearer to it).
    public static func solve(_ sightings: [TagSighting], map: TagMap, intrinsics: CameraIntrinsics,
                             width: Int, height: Int, prior: CameraModel?) -> TagPoseOutcome {
        let seen = trusted(sightings, map: map, width: width, height: height)
        guard !seen.isEmpty else { return .noTag }
        let lens = Lens(intrinsics, width: width, height: height)
        var points: [(world: SIMD3<Double>, pixel: SIMD2<Double>)] = []
        for s in seen {
            let tag = map.tags[s.id]!
            for (corner, pixel) in zip(corners, s.corners) {
                points.append((SIMD3(tag.world((corner * Double(tag.size)).vector3)), pixel))
            }
        }
        var starts: [Pose] = []
        for s in seen {
            let tag = map.tags[s.id]!
            starts.append(candidate(rotation: s.rotation, translation: s.translation, tag: tag))
            if let other = s.mirrored { starts.append(candidate(rotation: other.rotation, translation: other.translation, tag: tag)) }
        }
        let priorPose = prior.map { Pose(rotation: Matrix3($0.orientation), position: SIMD3($0.position)) }
        if let priorPose { starts.append(priorPose) }
        // The most promising starts, refined; each answer once.
        let ranked = starts.map { ($0, lens.squaredError($0, points)) }.sorted { $0.1 < $1.1 }.prefix(6)
        let centre = points.reduce(SIMD3<Double>.zero) { $0 + $1.world } / Double(points.count)
        var answers: [(pose: Pose, rms: Double)] = []
        for (start, _) in ranked {
            let pose = refine(start, points: points, lens: lens)
            let rms = (lens.squaredError(pose, points) / Double(points.count)).squareRoot()
            guard rms.isFinite else { continue }
            if !answers.contains(where: { !distinct($0.pose, pose, centre: centre) }) { answers.append((pose, rms)) }
        }
        answers.sort { $0.rms < $1.rms }
        guard let best = answers.first else { return .poorFit(rmsPx: .infinity) }
        guard best.rms <= maxErrorPx else { return .poorFit(rmsPx: best.rms) }
        func fix(_ answer: (pose: Pose, rms: Double)) -> TagPoseFix {
            TagPoseFix(camera: CameraModel(position: answer.pose.position.vector3, orientation: answer.pose.rotation.quaternion,
                                           intrinsics: intrinsics),
                       tags: seen.map(\.id), reprojectionErrorPx: answer.rms)
        }
        guard let rival = answers.dropFirst().first, rival.rms <= best.rms * ambiguityRatio + ambiguitySlackPx else {
            return .fix(fix(best))
        }
        if let priorPose {
            let (toBest, toRival) = (degrees(best.pose.rotation, priorPose.rotation), degrees(rival.pose.rotation, priorPose.rotation))
            if toBest * 3 < toRival { return .fix(fix(best)) }
            if toRival * 3 < toBest, rival.rms <= maxErrorPx { return .fix(fix(rival)) }
        }
        return .ambiguous(fix(best), fix(rival))
    }

    /// Whether two poses are different answers (`distinctDegrees`, `distinctRelativeDistance`).
    static func distinct(_ a: Pose, _ b: Pose, centre: SIMD3<Double>) -> Bool {
        let range = max((a.position - centre).length, 0.1)
        return degrees(a.rotation, b.rotation) > distinctDegrees || (a.position - b.position).length > distinctRelativeDistance * range
    }

    /// The angle between two rotations, in degrees.
    static func degrees(_ a: Matrix3, _ b: Matrix3) -> Double {
        let r = a.transposed * b
        let cosine = max(-1, min(1, (r.trace - 1) / 2))
        return acos(cosine) * 180 / .pi
    }

    /// Camera-to-world rotation and the camera's position.
    struct Pose { var rotation: Matrix3; var position: SIMD3<Double> }

    /// The camera's pose that a tag's pose (in the library's tag frame) implies.
    static func candidate(rotation: Matrix3, translation: SIMD3<Double>, tag: TagMap.Tag) -> Pose {
        // Library: optical = R · tagLib + t, with tagLib = F · tagOurs and project = F · optical.
        let a = Matrix3.flipYZ * rotation * Matrix3.flipYZ          // our tag frame → our camera frame
        let b = Matrix3.flipYZ * (translation * Double(tag.size))
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
                // The damped normal matrix is symmetric positive definite.
                guard let delta = SmallLinearAlgebra.choleskySolve(damped, gradient.map { -$0 }, n: 6) else { lambda *= 10; continue }
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
