import PoseCastKit

/// Frame to frame: each frame's pose from its own tags (`TagPoseSolver`), the last pose
/// settling which of a lone slanted tag's two poses is the camera's, and a short
/// prediction over frames whose tags give none (hidden for a moment, blurred, ambiguous).
/// What `--pose apriltag` runs on the publisher and `bench-tags` measures.
///
/// Pure state (the last few measured poses); one frame at a time, in capture order.
public struct TagTrack: Sendable {
    public enum Result: Sendable, Hashable {
        /// The frame's own tags gave this pose.
        case measured(TagPoseFix)
        /// None measured: the last measured poses carried on at their velocity for
        /// `ageNanos` past the newer one. The frame goes out flagged `late`.
        case predicted(CameraModel, ageNanos: UInt64)
        /// No pose: the frame goes out flagged `missing`.
        case lost(Reason)
    }

    public enum Reason: String, Sendable, Hashable {
        /// No tag of the map read cleanly.
        case noTag
        /// The best pose misses the corners by more than `TagPoseSolver.maxErrorPx`.
        case poorFit
        /// Two poses explain the corners about equally and no recent pose says which.
        case ambiguous
    }

    public let map: TagMap
    public let intrinsics: CameraIntrinsics
    public let width: Int, height: Int
    /// How long a prediction may run past the last measured pose: 100 ms, three frames at
    /// 30 fps (a hand-held camera's motion is not smooth for longer).
    public var predictionLimitNanos: UInt64 = 100_000_000
    /// How recent the last measured pose must be to settle an ambiguity.
    public var priorLimitNanos: UInt64 = 250_000_000

    /// The last measured poses (up to four), oldest first.
    private var measured: [(camera: CameraModel, nanos: UInt64)] = []

    public init(map: TagMap, intrinsics: CameraIntrinsics, width: Int, height: Int) {
        self.map = map; self.intrinsics = intrinsics; self.width = width; self.height = height
    }

    /// The tags in a frame captured at `nanos`: searched first where the track expects
    /// them (`searches`, one search per box), the whole picture when none usable is found
    /// there. A tag found twice (in boxes that touch) counts once, its surer read.
    public func sightings(at nanos: UInt64, search: (TagSearch) -> [TagSighting]) -> [TagSighting] {
        guard let searches = searches(at: nanos) else { return search(.whole) }
        var best: [Int: TagSighting] = [:]
        for area in searches {
            for s in search(area) where s.decisionMargin > best[s.id]?.decisionMargin ?? -.infinity { best[s.id] = s }
        }
        let found = best.values.sorted { $0.decisionMargin > $1.decisionMargin }
        return TagPoseSolver.usable(found, map: map, width: width, height: height).isEmpty ? search(.whole) : found
    }

    /// The pose of the frame captured at `nanos` whose tags are `sightings`.
    public mutating func update(_ sightings: [TagSighting], nanos: UInt64) -> Result {
        let prior = extrapolated(to: nanos, limit: priorLimitNanos)
            ?? measured.last.flatMap { nanos >= $0.nanos && nanos - $0.nanos <= priorLimitNanos ? $0.camera : nil }
        let reason: Reason
        switch TagPoseSolver.solve(sightings, map: map, intrinsics: intrinsics, width: width, height: height, prior: prior) {
        case .fix(let fix):
            measured.append((fix.camera, nanos))
            if measured.count > 4 { measured.removeFirst() }
            return .measured(fix)
        case .noTag: reason = .noTag
        case .poorFit: reason = .poorFit
        case .ambiguous: reason = .ambiguous
        }
        if let last = measured.last, let camera = extrapolated(to: nanos, limit: predictionLimitNanos) {
            return .predicted(camera, ageNanos: nanos - last.nanos)
        }
        return .lost(reason)
    }

    /// A tag's black square at least this long on its shortest side (pixels) is still
    /// found when quads are searched on a picture decimated half as much again
    /// (`TagSearch.coarser`: 3 instead of 2, 20 px there). The walk, all tags searched at
    /// 3: the same poses within 0.04 cm at 1–3 m, half the time; at 4, 10 % of frames lost.
    public static let coarseTagPixels: Float = 60

    /// Where the map's tags will be in the frame captured at `nanos`, by the last measured
    /// pose carried on to it: a box around each tag facing the camera whose printed square
    /// projects into the picture, widened by half its size and 24 px each way (the motion
    /// the prediction misses), boxes that overlap merged into one, searched coarser when
    /// every tag in it is large (`coarseTagPixels`). Searching each box alone costs about
    /// their area, a fraction of the picture's when the tags are apart. When the boxes
    /// would cost more than the whole picture (`searchOverheadPixels` a box): the whole
    /// picture, coarser if every tag expected is large, else nil. Nil (search the whole
    /// picture as the detector does) also without a recent pose or with no tag expected
    /// in view.
    public func searches(at nanos: UInt64) -> [TagSearch]? {
        guard let camera = extrapolated(to: nanos, limit: predictionLimitNanos)
            ?? measured.last.flatMap({ nanos >= $0.nanos && nanos - $0.nanos <= predictionLimitNanos ? $0.camera : nil }) else { return nil }
        var boxes: [(box: PixelRegion, side: Float)] = []
        for tag in map.tags.values {
            guard (camera.position - tag.position).dot(tag.orientation.rotate(Vector3(0, 0, 1))) > 0 else { continue }
            // The printed square with its ring: 10/8 of the black square's side.
            let h = tag.size * 10 / 16
            let points = [Vector3(-h, -h, 0), Vector3(h, -h, 0), Vector3(h, h, 0), Vector3(-h, h, 0)].map { camera.project(tag.world($0)) }
            if points.allSatisfy({ $0 == nil }) { continue }
            // Partly behind the camera: it may cover anything.
            guard points.allSatisfy({ $0 != nil }) else { return nil }
            let pixels = points.compactMap { $0 }.map { SIMD2($0.point.x * Float(width), $0.point.y * Float(height)) }
            guard pixels.contains(where: { $0.x > 0 && $0.x < Float(width) && $0.y > 0 && $0.y < Float(height) }),
                  let minX = pixels.map(\.x).min(), let maxX = pixels.map(\.x).max(),
                  let minY = pixels.map(\.y).min(), let maxY = pixels.map(\.y).max() else { continue }
            let padX = (maxX - minX) / 2 + 24, padY = (maxY - minY) / 2 + 24
            // The black square's shortest side: 8/10 of the printed square's.
            let side = (0..<4).map { i -> Float in
                let d = pixels[i] - pixels[(i + 1) % 4]
                return (d * d).sum().squareRoot()
            }.min()! * 8 / 10
            boxes.append((PixelRegion(x0: Int(minX - padX), y0: Int(minY - padY), x1: Int(maxX + padX), y1: Int(maxY + padY))
                .clamped(width: width, height: height), side))
        }
        boxes.removeAll { $0.box.width <= 0 || $0.box.height <= 0 }
        let regions = PixelRegion.merged(boxes.map(\.box))
        guard !regions.isEmpty else { return nil }
        // Each box lies in exactly one merged region.
        let searches = regions.map { region in
            TagSearch(region: region, coarser: boxes.filter { region.overlaps($0.box) }.allSatisfy { $0.side >= Self.coarseTagPixels })
        }
        // What each plan costs, in pixels of the decimated pictures searched: the boxes, each
        // with a fixed cost (the search's own set-up), or the whole picture once.
        let cost = searches.reduce(0.0) { total, s in
            let area = Double(s.region!.width * s.region!.height)
            return total + area / (s.coarser ? 2.25 : 1) + Double(Self.searchOverheadPixels)
        }
        let large = boxes.allSatisfy { $0.side >= Self.coarseTagPixels }
        let whole = Double(width * height) / (large ? 2.25 : 1)
        if cost < whole { return searches }
        return large ? [TagSearch(region: nil, coarser: true)] : nil
    }

    /// What one more search costs beyond its pixels, as pixels (at the detector's own
    /// decimation): about a 120 × 120 box.
    static let searchOverheadPixels = 14_400

    /// The newest measured pose carried on to `nanos` at the velocity between the oldest
    /// and the newest of the last measured poses within 0.2 s of it (up to four: a longer
    /// baseline than two neighbours, so the corners' noise is not multiplied into the
    /// velocity), when the newest is at most `limit` old.
    func extrapolated(to nanos: UInt64, limit: UInt64) -> CameraModel? {
        guard let b = measured.last, nanos >= b.nanos, nanos - b.nanos <= limit,
              let a = measured.first(where: { b.nanos > $0.nanos && b.nanos - $0.nanos <= 200_000_000 }) else { return nil }
        let t = Float(Double(nanos - a.nanos) / Double(b.nanos - a.nanos))
        let position = a.camera.position + (b.camera.position - a.camera.position) * t
        let orientation = Quaternion.slerp(a.camera.orientation, b.camera.orientation, t).normalized
        return CameraModel(position: position, orientation: orientation, intrinsics: b.camera.intrinsics)
    }
}

/// One search of a frame for tags: a part of it (nil: the whole), and whether every tag
/// expected there is large enough to look for on a coarser picture (`TagDetector.detect`'s
/// `coarser`: about half the cost).
public struct TagSearch: Sendable, Hashable {
    public var region: PixelRegion?
    public var coarser: Bool
    public init(region: PixelRegion?, coarser: Bool = false) { self.region = region; self.coarser = coarser }
    /// The whole picture at the detector's own decimation.
    public static let whole = TagSearch(region: nil)
}
