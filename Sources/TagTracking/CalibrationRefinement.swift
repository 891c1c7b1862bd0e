import Foundation

extension CameraCalibration {
    /// The joint refinement: intrinsics, distortion and every view's pose moved together
    /// to minimise the corners' reprojection error (Levenberg–Marquardt). The unknowns are
    /// fx, fy, cx, cy, k1, k2, p1, p2 (and k3 when asked), then six per view: a small
    /// rotation applied before the view's rotation, and its translation. A corner depends
    /// on the intrinsics and its own view only, so each contributes a 14- or 15-wide row
    /// to the normal equations; they are dense but small (9 + 6 per view unknowns).
    struct Refinement {
        /// Board-to-camera: a board point (x, y, 0) is at `rotation · p + translation` in
        /// the camera's optical frame (x right, y down, z forward).
        struct Pose: Sendable, Hashable { var rotation: Matrix3; var translation: SIMD3<Double> }

        let views: [CalibrationView]
        var intrinsics: PixelIntrinsics
        var distortion: LensDistortion
        var poses: [Pose]
        let fitK3: Bool

        /// Unknowns of the lens: fx, fy, cx, cy, k1, k2, p1, p2, k3 (the last only with `fitK3`).
        var lensCount: Int { fitK3 ? 9 : 8 }
        var count: Int { lensCount + 6 * views.count }

        /// A corner behind the camera counts this far off in x and in y (pixels).
        static let behind = 1e4

        /// The corner's pixel through the current lens, with the derivatives of (u, v)
        /// by the lens's unknowns and by the view's six; nil when it is behind the camera.
        func project(_ p: SIMD2<Double>, pose: Pose, lens: (PixelIntrinsics, LensDistortion), derivatives: Bool)
            -> (pixel: SIMD2<Double>, lens: [SIMD2<Double>], pose: [SIMD2<Double>])? {
            let (k, d) = lens
            let world = pose.rotation * SIMD3(p.x, p.y, 0)
            let c = world + pose.translation
            guard c.z > 1e-6 else { return nil }
            let n = SIMD2(c.x / c.z, c.y / c.z)
            let nd = d.distort(normalized: n)
            let pixel = SIMD2(k.cx + k.fx * nd.x, k.cy + k.fy * nd.y)
            guard derivatives else { return (pixel, [], []) }
            let (x, y) = (n.x, n.y)
            let r2 = x * x + y * y
            var byLens: [SIMD2<Double>] = [
                SIMD2(nd.x, 0), SIMD2(0, nd.y), SIMD2(1, 0), SIMD2(0, 1),
                SIMD2(k.fx * x * r2, k.fy * y * r2),
                SIMD2(k.fx * x * r2 * r2, k.fy * y * r2 * r2),
                SIMD2(k.fx * 2 * x * y, k.fy * (r2 + 2 * y * y)),
                SIMD2(k.fx * (r2 + 2 * x * x), k.fy * 2 * x * y),
            ]
            if fitK3 { byLens.append(SIMD2(k.fx * x * r2 * r2 * r2, k.fy * y * r2 * r2 * r2)) }
            // (u, v) by the camera point: K · J_distortion · J_perspective.
            let (a, b, cc, dd) = d.jacobian(normalized: n)
            let iz = 1 / c.z
            func byCamera(_ dc: SIMD3<Double>) -> SIMD2<Double> {
                let dn = SIMD2((dc.x - x * dc.z) * iz, (dc.y - y * dc.z) * iz)
                return SIMD2(k.fx * (a * dn.x + b * dn.y), k.fy * (cc * dn.x + dd * dn.y))
            }
            // A small rotation ω before the pose moves the camera point by ω × (R p).
            let byPose = [
                byCamera(SIMD3(0, -world.z, world.y)), byCamera(SIMD3(world.z, 0, -world.x)), byCamera(SIMD3(-world.y, world.x, 0)),
                byCamera(SIMD3(1, 0, 0)), byCamera(SIMD3(0, 1, 0)), byCamera(SIMD3(0, 0, 1)),
            ]
            return (pixel, byLens, byPose)
        }

        /// The sum of squared corner errors (pixels²) with these unknowns.
        func cost(_ lens: (PixelIntrinsics, LensDistortion), _ poses: [Pose]) -> Double {
            var sum = 0.0
            for (view, pose) in zip(views, poses) {
                for (p, seen) in zip(view.board, view.pixels) {
                    guard let q = project(p, pose: pose, lens: lens, derivatives: false) else {
                        sum += 2 * Self.behind * Self.behind; continue
                    }
                    sum += ((q.pixel - seen) * (q.pixel - seen)).sum()
                }
            }
            return sum
        }

        /// Each view's sum of squared corner errors and its number of corners.
        func viewErrors() -> [(squared: Double, count: Int)] {
            zip(views, poses).map { view, pose in
                var sum = 0.0
                for (p, seen) in zip(view.board, view.pixels) {
                    guard let q = project(p, pose: pose, lens: (intrinsics, distortion), derivatives: false) else {
                        sum += 2 * Self.behind * Self.behind; continue
                    }
                    sum += ((q.pixel - seen) * (q.pixel - seen)).sum()
                }
                return (sum, view.board.count)
            }
        }

        /// The unknowns moved by `delta`.
        func moved(_ delta: [Double]) -> ((PixelIntrinsics, LensDistortion), [Pose]) {
            let k = PixelIntrinsics(fx: intrinsics.fx + delta[0], fy: intrinsics.fy + delta[1],
                                    cx: intrinsics.cx + delta[2], cy: intrinsics.cy + delta[3])
            let d = LensDistortion(k1: distortion.k1 + delta[4], k2: distortion.k2 + delta[5], p1: distortion.p1 + delta[6],
                                   p2: distortion.p2 + delta[7], k3: distortion.k3 + (fitK3 ? delta[8] : 0))
            let poses = poses.enumerated().map { i, pose in
                let o = lensCount + 6 * i
                return Pose(rotation: Matrix3.rotation(SIMD3(delta[o], delta[o + 1], delta[o + 2])) * pose.rotation,
                            translation: pose.translation + SIMD3(delta[o + 3], delta[o + 4], delta[o + 5]))
            }
            return ((k, d), poses)
        }

        /// Runs until a step no longer lowers the cost by a useful amount; returns the
        /// steps taken.
        mutating func run(maxIterations: Int) -> Int {
            let n = count, nl = lensCount
            var current = cost((intrinsics, distortion), poses)
            var lambda = 1e-3
            var steps = 0
            while steps < maxIterations {
                steps += 1
                // Normal equations JᵀJ δ = −Jᵀr, filled a corner at a time.
                var normal = [Double](repeating: 0, count: n * n)
                var gradient = [Double](repeating: 0, count: n)
                var index = [Int](repeating: 0, count: nl + 6)
                for i in 0..<nl { index[i] = i }
                for (v, (view, pose)) in zip(views, poses).enumerated() {
                    for j in 0..<6 { index[nl + j] = nl + 6 * v + j }
                    for (p, seen) in zip(view.board, view.pixels) {
                        guard let q = project(p, pose: pose, lens: (intrinsics, distortion), derivatives: true) else { continue }
                        let r = q.pixel - seen
                        let row = q.lens + q.pose
                        for a in 0..<row.count {
                            let ia = index[a]
                            gradient[ia] += (row[a] * r).sum()
                            for b in 0...a {
                                let value = (row[a] * row[b]).sum()
                                normal[ia * n + index[b]] += value
                            }
                        }
                    }
                }
                // Only the lower triangle was filled (rows of a later view come later).
                for i in 0..<n { for j in 0..<i { normal[j * n + i] = normal[i * n + j] } }
                var improved = false
                for _ in 0..<10 {
                    var damped = normal
                    for i in 0..<n { damped[i * n + i] += lambda * max(normal[i * n + i], 1e-12) }
                    guard let delta = SmallLinearAlgebra.choleskySolve(damped, gradient.map { -$0 }, n: n) else {
                        lambda *= 10; continue
                    }
                    let (lens, poses) = moved(delta)
                    let next = cost(lens, poses)
                    if next < current {
                        let gain = (current - next) / current
                        (intrinsics, distortion) = lens; self.poses = poses
                        current = next; lambda = max(lambda / 10, 1e-12); improved = true
                        if gain < 1e-12 { return steps }
                        break
                    }
                    lambda *= 10
                }
                if !improved { break }
            }
            return steps
        }
    }
}
