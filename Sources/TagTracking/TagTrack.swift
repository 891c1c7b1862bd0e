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
    /// them (`searchRegions`, one search per box), the whole picture when none usable is
    /// found there. A tag found twice (in boxes that touch) counts once, its surer read.
    public func sightings(at nanos: UInt64, search: (PixelRegion?) -> [TagSighting]) -> [TagSighting] {
        guard let regions = searchRegions(at: nanos) else { return search(nil) }
        var best: [Int: TagSighting] = [:]
        for region in regions {
            for s in search(region) where s.decisionMargin > best[s.id]?.decisionMargin ?? -.infinity { best[s.id] = s }
        }
        let found = best.values.sorted { $0.decisionMargin > $1.decisionMargin }
        return TagPoseSolver.usable(found, map: map, width: width, height: height).isEmpty ? search(nil) : found
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

    /// Where the map's tags will be in the frame captured at `nanos`, by the last measured
    /// pose carried on to it: a box around each tag facing the camera whose printed square
    /// projects into the picture, widened by half its size and 24 px each way (the motion
    /// the prediction misses), boxes that overlap merged into one. Searching each box
    /// alone costs about their area, a fraction of the picture's when the tags are apart.
    /// Nil (search the whole picture) without a recent pose, with no tag expected in view,
    /// or when the boxes would cover most of the picture anyway.
    public func searchRegions(at nanos: UInt64) -> [PixelRegion]? {
        guard let camera = extrapolated(to: nanos, limit: predictionLimitNanos)
            ?? measured.last.flatMap({ nanos >= $0.nanos && nanos - $0.nanos <= predictionLimitNanos ? $0.camera : nil }) else { return nil }
        var boxes: [PixelRegion] = []
        for tag in map.tags.values {
            guard (camera.position - tag.position).dot(tag.orientation.rotate(Vector3(0, 0, 1))) > 0 else { continue }
            // The printed square with its ring: 10/8 of the black square's side.
            let h = tag.size * 10 / 16
            let points = [Vector3(-h, -h, 0), Vector3(h, -h, 0), Vector3(h, h, 0), Vector3(-h, h, 0)].map { camera.project(tag.world($0)) }
            if points.allSatisfy({ $0 == nil }) { continue }
            // Partly behind the camera: it may cover anything.
            guard points.allSatisfy({ $0 != nil }) else { return nil }
            let pixels = points.compactMap { $0 }.map { ($0.point.x * Float(width), $0.point.y * Float(height)) }
            guard pixels.contains(where: { $0.0 > 0 && $0.0 < Float(width) && $0.1 > 0 && $0.1 < Float(height) }),
                  let minX = pixels.map(\.0).min(), let maxX = pixels.map(\.0).max(),
                  let minY = pixels.map(\.1).min(), let maxY = pixels.map(\.1).max() else { continue }
            let padX = (maxX - minX) / 2 + 24, padY = (maxY - minY) / 2 + 24
            boxes.append(PixelRegion(x0: Int(minX - padX), y0: Int(minY - padY), x1: Int(maxX + padX), y1: Int(maxY + padY))
                .clamped(width: width, height: height))
        }
        let regions = PixelRegion.merged(boxes.filter { $0.width > 0 && $0.height > 0 })
        guard !regions.isEmpty else { return nil }
        return regions.reduce(0) { $0 + $1.width * $1.height } > width * height * 6 / 10 ? nil : regions
    }

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
