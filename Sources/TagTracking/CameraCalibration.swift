import Foundation

/// One picture of a calibration board: the corners of the board's tags where they were
/// seen, each with where it is on the board.
public struct CalibrationView: Sendable, Hashable {
    /// A name for reports (the picture's file).
    public var name: String
    /// Corner positions on the board (metres, its plane; see `TagMap.board`).
    public var board: [SIMD2<Double>]
    /// The same corners in the picture (pixels, `PixelIntrinsics`' convention).
    public var pixels: [SIMD2<Double>]
    /// The tags they came from.
    public var tags: [Int]

    public init(name: String, board: [SIMD2<Double>], pixels: [SIMD2<Double>], tags: [Int]) {
        precondition(board.count == pixels.count)
        self.name = name; self.board = board; self.pixels = pixels; self.tags = tags
    }

    /// The corners of the board's tags among `sightings` in a `width` × `height`
    /// picture (`boardCorners` from `TagMap.boardCorners()`), read with at most
    /// `maxHamming` corrected bits and a margin of at least `minMargin` (a doubtful read
    /// would put a corner at another tag's place on the board). A tag whose white ring
    /// may be cut by the picture's edge is left out: the detector still finds some of
    /// those, with their corners pulled towards the edge.
    public init(name: String, sightings: [TagSighting], boardCorners: [Int: [SIMD2<Double>]], width: Int, height: Int,
                maxHamming: Int = 1, minMargin: Float = 15) {
        var board: [SIMD2<Double>] = [], pixels: [SIMD2<Double>] = [], tags: [Int] = []
        for s in sightings where s.hamming <= maxHamming && s.decisionMargin >= minMargin {
            guard let corners = boardCorners[s.id], !tags.contains(s.id), s.corners.count == 4 else { continue }
            // The ring is an eighth of the black square's side wide; a quarter plus a
            // pixel keeps the ring and the blur around it inside the picture.
            let side = zip(s.corners, s.corners[1...] + s.corners[..<1]).map { a, b in ((a - b) * (a - b)).sum().squareRoot() }.max()!
            let margin = side / 4 + 1
            guard s.corners.allSatisfy({ $0.x >= margin && $0.y >= margin && $0.x <= Double(width) - margin && $0.y <= Double(height) - margin })
            else { continue }
            board += corners; pixels += s.corners; tags.append(s.id)
        }
        self.init(name: name, board: board, pixels: pixels, tags: tags.sorted())
    }
}

/// What calibration found.
public struct CalibrationResult: Sendable, Hashable {
    public var width: Int, height: Int
    public var intrinsics: PixelIntrinsics
    public var distortion: LensDistortion
    /// Root-mean-square distance (pixels) between the corners as seen and as the camera
    /// found puts them, over every view used.
    public var rmsPx: Double
    /// The views used, with each one's own rms.
    public var views: [View]
    /// The views left out, and why.
    public var skipped: [Skipped]
    /// Levenberg–Marquardt steps taken.
    public var iterations: Int

    public struct View: Sendable, Hashable { public var name: String; public var rmsPx: Double; public var corners: Int }
    public struct Skipped: Sendable, Hashable { public var name: String; public var reason: String }

    /// The file the publisher reads.
    public var file: CalibrationFile {
        CalibrationFile(width: width, height: height, intrinsics: intrinsics, distortion: distortion,
                        rmsPx: rmsPx, views: views.count)
    }
}

/// How calibration runs.
public struct CalibrationOptions: Sendable, Hashable {
    /// Fit k3 too. Off by default: over a picture of ordinary field of view r⁶ is
    /// nearly a mix of r² and r⁴, so k3 trades against k1 and k2 without fitting the
    /// corners better; worth it for wide-angle lenses.
    public var fitK3 = false
    /// A view counts when at least this many of the board's tags were found in it.
    public var minTags = 4
    /// A calibration whose corners are farther than this from where it puts them (rms,
    /// pixels) has not found the camera: a bad corner, a board that is not flat, the
    /// wrong board file.
    public var maxRMSPx = 2.0
    public var maxIterations = 100

    public init(fitK3: Bool = false, minTags: Int = 4, maxRMSPx: Double = 2.0, maxIterations: Int = 100) {
        self.fitK3 = fitK3; self.minTags = minTags; self.maxRMSPx = maxRMSPx; self.maxIterations = maxIterations
    }
}

/// Why a calibration failed.
public enum CalibrationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Fewer than `needed` views showed the board well enough.
    case tooFewViews(usable: Int, needed: Int, skipped: [String])
    /// The views cannot pin the focal length down (every board square-on to the camera,
    /// or all tilted alike).
    case degenerate(String)
    /// The refinement ended with the corners `rmsPx` from where it puts them.
    case didNotConverge(iterations: Int, rmsPx: Double)

    public var description: String {
        switch self {
        case .tooFewViews(let usable, let needed, let skipped):
            "calibration: \(usable) view\(usable == 1 ? "" : "s") with the board found, \(needed) needed"
                + (skipped.isEmpty ? "" : " (left out: \(skipped.joined(separator: "; ")))")
        case .degenerate(let why): "calibration: the views do not determine the camera: \(why)"
        case .didNotConverge(let n, let rms):
            "calibration: no camera explains the corners (rms \(String(format: "%.2f", rms)) px after \(n) steps): "
                + "is the board file the board that was photographed, and is it flat?"
        }
    }
}

/// A camera's intrinsics and lens distortion from pictures of a flat board (Zhang's
/// method): each view's homography from the board to the picture, the intrinsics in
/// closed form from what those homographies say about the image of the absolute conic
/// (zero skew assumed), each view's pose from its homography, then all of them, the
/// distortion and every pose refined together to minimise the corners' reprojection
/// error (Levenberg–Marquardt).
public enum CameraCalibration {
    /// Views needed: each gives two constraints on the four intrinsics, and one more
    /// guards against one bad view.
    public static let minViews = 3
    /// A view whose depth over the board varies by less than this fraction is square-on
    /// to the camera: it says nothing about the focal length.
    static let minDepthSpread = 0.02

    /// Calibrates from `views` of pictures `width` × `height`.
    public static func calibrate(_ views: [CalibrationView], width: Int, height: Int,
                                 options: CalibrationOptions = CalibrationOptions()) throws(CalibrationError) -> CalibrationResult {
        var used: [(view: CalibrationView, homography: Homography)] = []
        var skipped: [CalibrationResult.Skipped] = []
        for view in views {
            guard view.tags.count >= options.minTags else {
                skipped.append(.init(name: view.name, reason: "\(view.tags.count) of the board's tags found, \(options.minTags) needed")); continue
            }
            guard let h = Homography.fit(board: view.board, picture: view.pixels) else {
                skipped.append(.init(name: view.name, reason: "the corners found do not span the board")); continue
            }
            used.append((view, h))
        }
        guard used.count >= minViews else {
            throw .tooFewViews(usable: used.count, needed: minViews, skipped: skipped.map { "\($0.name): \($0.reason)" })
        }
        let tilted = used.filter { depthSpread($0.homography, $0.view.board) >= minDepthSpread }.count
        guard tilted >= 2 else {
            throw .degenerate("\(used.count - tilted) of \(used.count) views show the board square-on (its depth varies by under "
                              + "\(Int(minDepthSpread * 100)) %); tilt it by 10° or more in at least two views, about different axes")
        }
        let k = try closedFormIntrinsics(used.map(\.homography), width: width, height: height)
        let poses = used.map { pose(from: $0.homography, intrinsics: k) }
        var refinement = Refinement(views: used.map(\.view), intrinsics: k, distortion: .none, poses: poses,
                                    fitK3: options.fitK3)
        let iterations = refinement.run(maxIterations: options.maxIterations)
        let perView = refinement.viewErrors()
        let total = perView.reduce(0.0) { $0 + $1.squared } / Double(max(perView.reduce(0) { $0 + $1.count }, 1))
        let rms = total.squareRoot()
        let found = refinement.intrinsics
        guard rms.isFinite, rms <= options.maxRMSPx, found.fx > 0, found.fy > 0 else {
            throw .didNotConverge(iterations: iterations, rmsPx: rms)
        }
        return CalibrationResult(width: width, height: height, intrinsics: found, distortion: refinement.distortion, rmsPx: rms,
                                 views: zip(used, perView).map {
                                     .init(name: $0.view.name, rmsPx: ($1.squared / Double($1.count)).squareRoot(), corners: $1.count)
                                 },
                                 skipped: skipped, iterations: iterations)
    }

    /// How much the depth of the board's points varies in a view, as a fraction of the
    /// mean (0 for a board square-on to the camera).
    static func depthSpread(_ h: Homography, _ points: [SIMD2<Double>]) -> Double {
        let depths = points.map(h.depth)
        let mean = depths.reduce(0, +) / Double(depths.count)
        guard mean > 0 else { return 0 }
        return (depths.max()! - depths.min()!) / mean
    }

    /// Zhang's closed form with zero skew. With K the intrinsics and B = K⁻ᵀ K⁻¹, each
    /// homography's first two columns h1, h2 are the images of orthonormal directions, so
    /// h1ᵀ B h2 = 0 and h1ᵀ B h1 = h2ᵀ B h2: two linear equations in B's entries per view.
    /// B's null vector gives K. Pixels are first centred and scaled to about ±1 so the
    /// equations are balanced.
    static func closedFormIntrinsics(_ homographies: [Homography], width: Int, height: Int) throws(CalibrationError) -> PixelIntrinsics {
        let s = Double(max(width, height)) / 2, (ox, oy) = (Double(width) / 2, Double(height) / 2)
        let conditioning = Matrix3([1 / s, 0, -ox / s, 0, 1 / s, -oy / s, 0, 0, 1])
        var rows: [[Double]] = []
        for h in homographies {
            var m = (conditioning * Matrix3(h.m)).m
            let norm = m.reduce(0) { $0 + $1 * $1 }.squareRoot()
            m = m.map { $0 / norm }
            let hm = Homography(m: m)
            // B = [[b11, 0, b13], [0, b22, b23], [b13, b23, b33]]; unknowns (b11, b22, b13, b23, b33).
            func v(_ i: Int, _ j: Int) -> [Double] {
                let a = hm.column(i), b = hm.column(j)
                return [a.x * b.x, a.y * b.y, a.z * b.x + a.x * b.z, a.z * b.y + a.y * b.z, a.z * b.z]
            }
            rows.append(v(0, 1))
            rows.append(zip(v(0, 0), v(1, 1)).map { $0 - $1 })
        }
        let null = SmallLinearAlgebra.nullVector(rows: rows, n: 5)
        var b = null.vector
        if b[0] < 0 { b = b.map { -$0 } }
        let (b11, b22, b13, b23, b33) = (b[0], b[1], b[2], b[3], b[4])
        let lambda = b33 - b13 * b13 / b11 - b23 * b23 / b22
        guard b11 > 0, b22 > 0, lambda > 0, lambda.isFinite else {
            throw .degenerate("no camera matrix fits the views' homographies (the board tilted alike in every view, "
                              + "or the corners are wrong)")
        }
        let alpha = (lambda / b11).squareRoot(), beta = (lambda / b22).squareRoot()
        let u0 = -b13 / b11, v0 = -b23 / b22
        return PixelIntrinsics(fx: s * alpha, fy: s * beta, cx: s * u0 + ox, cy: s * v0 + oy)
    }

    /// A view's board-to-camera pose from its homography: H ∝ K [r1 r2 t].
    static func pose(from h: Homography, intrinsics k: PixelIntrinsics) -> Refinement.Pose {
        func kInverse(_ v: SIMD3<Double>) -> SIMD3<Double> {
            SIMD3((v.x - k.cx * v.z) / k.fx, (v.y - k.cy * v.z) / k.fy, v.z)
        }
        let a = kInverse(h.column(0)), b = kInverse(h.column(1)), c = kInverse(h.column(2))
        // The homography is scaled so the board's points have positive depth, so the
        // scale here is positive too and the board ends up in front of the camera.
        let scale = 2 / ((a * a).sum().squareRoot() + (b * b).sum().squareRoot())
        let r1 = a * scale, r2 = b * scale
        let r3 = SIMD3(r1.y * r2.z - r1.z * r2.y, r1.z * r2.x - r1.x * r2.z, r1.x * r2.y - r1.y * r2.x)
        let m = Matrix3([r1.x, r2.x, r3.x, r1.y, r2.y, r3.y, r1.z, r2.z, r3.z])
        return Refinement.Pose(rotation: SmallLinearAlgebra.nearestRotation(m) ?? .identity, translation: c * scale)
    }

    /// The farthest (pixels) two lenses disagree over a `width` × `height` picture:
    /// for points every `step` pixels, where `b` puts the ray `a` sees there. Judges a
    /// calibration by what it does to pixels rather than by its coefficients, which trade
    /// against each other.
    public static func largestDisagreement(_ a: (PixelIntrinsics, LensDistortion), _ b: (PixelIntrinsics, LensDistortion),
                                           width: Int, height: Int, step: Int = 8) -> Double {
        var worst = 0.0
        for y in stride(from: 0, through: height, by: step) {
            for x in stride(from: 0, through: width, by: step) {
                let p = SIMD2(Double(x), Double(y))
                let ray = a.1.undistort(normalized: a.0.normalize(p))
                let q = b.0.pixel(b.1.distort(normalized: ray))
                worst = max(worst, ((q - p) * (q - p)).sum().squareRoot())
            }
        }
        return worst
    }
}
