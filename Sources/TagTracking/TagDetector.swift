import CAprilTag
import Foundation
import PoseCastKit

/// One tag seen in one picture.
public struct TagSighting: Sendable, Hashable {
    public var id: Int
    /// Bits the decoder corrected (0 is a clean read).
    public var hamming: Int
    /// The decoder's margin: higher is surer.
    public var decisionMargin: Float
    /// The tag's corners in pixels (x right, y down), in the order of `TagPoseSolver.corners`.
    public var corners: [SIMD2<Double>]
    /// The tag's pose for a side of 1 m, in the camera's optical frame (x right, y down,
    /// z forward): tag point → camera point is `rotation · p + translation`, with the
    /// library's tag frame (x right, y down, z into the tag). From the corners' homography
    /// (`TagDetector.cornerPose`), or the library's own solve when asked for.
    var rotation: Matrix3
    var translation: SIMD3<Double>
    /// The library's error of its pose (0 for a pose from the corners; negative when none
    /// was found).
    public var poseError: Double
    /// How whole the tag's white ring looks (`TagDetector.ringContrast`): the weakest
    /// ring-to-border contrast along its sides over the typical one. Near 1 for a tag seen
    /// whole; low where something covers part of the ring, and there the quad's edge may
    /// run along the cover rather than the tag (corners centimetres off, yet decoded).
    public var ringContrast: Double = 1
    /// The other pose a slanted square fits about as well: tilted the other way, its
    /// normal mirrored about the line of sight (neither the corners' homography nor the
    /// library's solve, which keeps the better of the two, gives both). A start for
    /// `TagPoseSolver`'s refinement, not a solution itself.
    var mirrored: (rotation: Matrix3, translation: SIMD3<Double>)? {
        let distance = translation.length
        guard distance > 0 else { return nil }
        let sight = translation / distance
        let normal = rotation * SIMD3(0, 0, 1)
        let mirroredNormal = 2 * (normal * sight).sum() * sight - normal
        let axis = SIMD3(normal.y * mirroredNormal.z - normal.z * mirroredNormal.y,
                         normal.z * mirroredNormal.x - normal.x * mirroredNormal.z,
                         normal.x * mirroredNormal.y - normal.y * mirroredNormal.x)
        let sine = axis.length, cosine = (normal * mirroredNormal).sum()
        // Face-on (or edge-on): the mirror is the same pose.
        guard sine > 1e-6 else { return nil }
        let turn = Matrix3.rotation(axis / sine * atan2(sine, cosine))
        return (turn * rotation, translation)
    }
}

/// AprilTag 3's detector for tag36h11 tags in grey pictures.
///
/// Ownership: the detector owns its C state and frees it when released. The library's
/// detector takes one picture at a time: every call into it is made under `lock`, so one
/// detector may be shared (callers on two threads take turns).
public final class TagDetector: @unchecked Sendable {
    private let detector: OpaquePointer
    private let decimate: Float
    private let lock = NSLock()
    /// The most tags one picture reports.
    public static let capacity = 32

    /// `decimate`: quads are looked for on a picture this many times smaller (1 full
    /// size: slowest, finds the smallest tags; 2 is the library's usual speed-up).
    public init(threads: Int = 1, decimate: Float = 1) throws(TagTrackingError) {
        guard let d = pcat_detector_new(Int32(threads), decimate) else { throw .detectorUnavailable }
        detector = d
        self.decimate = max(decimate, 1)
    }

    deinit { pcat_detector_free(detector) }

    /// The tags in the grey picture `grey` (`width` × `height`, rows `stride` bytes apart;
    /// read during the call only), each with a first pose for `intrinsics` (normalised to
    /// the picture), widest margin first.
    ///
    /// `libraryPose`: each tag's pose by the library's iterative solve instead of from its
    /// corners' homography. That solve costs about half as much again as finding the tags,
    /// and `TagPoseSolver` refines from either (and from each one's mirror) all the same.
    ///
    /// `region`: search only this part of the picture (pixels, clamped to it), the corners
    /// still in the whole picture's pixels: a tracker that knows where the tags will be
    /// searches a fraction of the frame. `coarser`: quads are looked for on a picture
    /// decimated half as much again as the detector's own (3 for 2), for a part whose tags
    /// are all large (`TagTrack.coarseTagPixels`); the corners are refined at full size
    /// all the same.
    public func detect(grey: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int,
                       intrinsics: CameraIntrinsics, region: PixelRegion? = nil, coarser: Bool = false,
                       libraryPose: Bool = false) throws(TagTrackingError) -> [TagSighting] {
        var out = [pcat_detection](repeating: pcat_detection(), count: Self.capacity)
        let (w, h) = (Double(width), Double(height))
        let area = (region ?? PixelRegion(x0: 0, y0: 0, x1: width, y1: height)).clamped(width: width, height: height)
        guard area.width >= 16, area.height >= 16 else { return [] }
        let found = out.withUnsafeMutableBufferPointer { out in
            lock.withLock {
                // The crop's principal point moves by its corner; the focal lengths stay.
                pcat_detect(detector, grey + area.y0 * stride + area.x0, Int32(area.width), Int32(area.height), Int32(stride),
                            coarser ? decimate * 1.5 : decimate, libraryPose ? 1 : 0, Double(intrinsics.fx) * w, Double(intrinsics.fy) * h,
                            Double(intrinsics.cx) * w - Double(area.x0), Double(intrinsics.cy) * h - Double(area.y0),
                            out.baseAddress, Int32(Self.capacity))
            }
        }
        guard found >= 0 else { throw .badPicture(width: width, height: height, stride: stride) }
        let shift = SIMD2(Double(area.x0), Double(area.y0))
        let pixels = PixelIntrinsics(intrinsics, width: width, height: height)
        return out.prefix(min(Int(found), Self.capacity)).map { d in
            var d = d
            let corners = withUnsafeBytes(of: &d.corners) { raw in
                let v = raw.bindMemory(to: Double.self)
                return (0..<4).map { SIMD2(v[$0 * 2], v[$0 * 2 + 1]) + shift }
            }
            let ring = Self.ringContrast(corners, grey: grey, width: width, height: height, stride: stride)
            guard !libraryPose else {
                let rotation = withUnsafeBytes(of: &d.rotation) { Matrix3(Array($0.bindMemory(to: Double.self))) }
                let translation = withUnsafeBytes(of: &d.translation) { raw in
                    let v = raw.bindMemory(to: Double.self)
                    return SIMD3(v[0], v[1], v[2])
                }
                return TagSighting(id: Int(d.id), hamming: Int(d.hamming), decisionMargin: d.decision_margin, corners: corners,
                                   rotation: rotation, translation: translation, poseError: d.pose_error, ringContrast: ring)
            }
            let pose = Self.cornerPose(corners, intrinsics: pixels)
            return TagSighting(id: Int(d.id), hamming: Int(d.hamming), decisionMargin: d.decision_margin, corners: corners,
                               rotation: pose?.rotation ?? .identity, translation: pose?.translation ?? .zero,
                               poseError: pose == nil ? -1 : 0, ringContrast: ring)
        }
    }

    /// How whole a tag's white ring is: along each side, 8 points in the middle of the
    /// ring (a cell outside the black square, half a cell out) and 8 facing them in the
    /// middle of the black border, placed through the corners' homography, each the mean
    /// of a small patch; the ring's grey minus the border's at each pair, the weakest of
    /// the 32 over their median.
    /// Light falling off across a tag lowers all pairs alike; a cover (a hand, a nearer
    /// object, the picture's edge) lowers the pairs it hides. 0 when a point falls
    /// outside the picture or the tag shows no contrast at all.
    static func ringContrast(_ corners: [SIMD2<Double>], grey: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int) -> Double {
        guard let h = Homography.fit(board: libraryCorners, picture: corners) else { return 0 }
        // Bilinear grey at a pixel position (pixel centres at +0.5), nil outside.
        func sample(_ p: SIMD2<Double>) -> Double? {
            let x = p.x - 0.5, y = p.y - 0.5
            guard x >= 0, y >= 0, x < Double(width - 1), y < Double(height - 1) else { return nil }
            let (x0, y0) = (Int(x), Int(y)), (fx, fy) = (x - Double(Int(x)), y - Double(Int(y)))
            let row = grey + y0 * stride + x0
            let top = Double(row[0]) * (1 - fx) + Double(row[1]) * fx
            let bottom = Double(row[stride]) * (1 - fx) + Double(row[stride + 1]) * fx
            return top * (1 - fy) + bottom * fy
        }
        // The black square is 8 cells across (±0.5); the ring one more cell out.
        let (ring, border) = (0.5 + 0.5 / 8, 0.5 - 0.5 / 8)
        var contrasts: [Double] = []
        for side in 0..<4 {
            for k in 0..<8 {
                let along = -0.5 + (Double(k) + 0.5) / 8
                let (outer, inner): (SIMD2<Double>, SIMD2<Double>) = switch side {
                case 0: (SIMD2(along, -ring), SIMD2(along, -border))
                case 1: (SIMD2(ring, along), SIMD2(border, along))
                case 2: (SIMD2(along, ring), SIMD2(along, border))
                default: (SIMD2(-ring, along), SIMD2(-border, along))
                }
                // Each point's grey averaged over a patch of 3 × 3 around it (a third of a
                // cell along the side, a fifth across): a camera's noise is not a cover.
                let tangent: SIMD2<Double> = side % 2 == 0 ? SIMD2(1, 0) : SIMD2(0, 1)
                let normal = SIMD2(tangent.y, tangent.x)
                func patch(_ centre: SIMD2<Double>) -> Double? {
                    var total = 0.0
                    for a in [-1.0, 0, 1] {
                        for b in [-1.0, 0, 1] {
                            guard let g = h.apply(centre + tangent * (a * 0.04) + normal * (b * 0.025)).flatMap(sample) else { return nil }
                            total += g
                        }
                    }
                    return total / 9
                }
                guard let o = patch(outer), let i = patch(inner) else { return 0 }
                contrasts.append(o - i)
            }
        }
        contrasts.sort()
        let median = (contrasts[15] + contrasts[16]) / 2
        guard median > 1 else { return 0 }
        return max(contrasts[0], 0) / median
    }

    /// The corners of a tag of side 1 m in the library's tag frame (x right, y down), in
    /// the library's corner order.
    static let libraryCorners: [SIMD2<Double>] = [SIMD2(-0.5, 0.5), SIMD2(0.5, 0.5), SIMD2(0.5, -0.5), SIMD2(-0.5, -0.5)]

    /// A tag's pose (side 1 m, the library's tag frame) from the homography of its four
    /// corners, as a calibration view's (`CameraCalibration.pose`); nil for corners on a line.
    static func cornerPose(_ corners: [SIMD2<Double>], intrinsics: PixelIntrinsics)
        -> (rotation: Matrix3, translation: SIMD3<Double>)? {
        guard let h = Homography.fit(board: libraryCorners, picture: corners) else { return nil }
        let pose = CameraCalibration.pose(from: h, intrinsics: intrinsics)
        guard pose.translation.z > 0, pose.translation.x.isFinite, pose.translation.y.isFinite else { return nil }
        return (pose.rotation, pose.translation)
    }
}

/// A rectangle of pixels: columns `x0..<x1`, rows `y0..<y1`.
public struct PixelRegion: Sendable, Hashable {
    public var x0: Int, y0: Int, x1: Int, y1: Int
    public init(x0: Int, y0: Int, x1: Int, y1: Int) { self.x0 = x0; self.y0 = y0; self.x1 = x1; self.y1 = y1 }
    public var width: Int { max(x1 - x0, 0) }
    public var height: Int { max(y1 - y0, 0) }
    /// Inside a `width` × `height` picture.
    public func clamped(width: Int, height: Int) -> PixelRegion {
        PixelRegion(x0: min(max(x0, 0), width), y0: min(max(y0, 0), height), x1: min(max(x1, 0), width), y1: min(max(y1, 0), height))
    }

    /// Whether the two share any pixel.
    public func overlaps(_ other: PixelRegion) -> Bool {
        x0 < other.x1 && other.x0 < x1 && y0 < other.y1 && other.y0 < y1
    }

    /// The smallest region holding both.
    public func union(_ other: PixelRegion) -> PixelRegion {
        PixelRegion(x0: min(x0, other.x0), y0: min(y0, other.y0), x1: max(x1, other.x1), y1: max(y1, other.y1))
    }

    /// `regions` with every two that overlap replaced by their union, until none overlap
    /// (a union may reach a third region, so it is checked again).
    public static func merged(_ regions: [PixelRegion]) -> [PixelRegion] {
        var out: [PixelRegion] = []
        for region in regions {
            var r = region
            while let i = out.firstIndex(where: { $0.overlaps(r) }) { r = r.union(out.remove(at: i)) }
            out.append(r)
        }
        return out
    }
}

/// Why tag tracking could not run.
public enum TagTrackingError: Error, Sendable, Hashable, CustomStringConvertible {
    case detectorUnavailable
    case badPicture(width: Int, height: Int, stride: Int)

    public var description: String {
        switch self {
        case .detectorUnavailable: "AprilTag: the library could not make a tag36h11 detector"
        case .badPicture(let w, let h, let s): "AprilTag: a picture of \(w)×\(h) with rows \(s) bytes apart cannot be searched"
        }
    }
}
