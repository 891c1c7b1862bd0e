import PoseCastKit
import Testing
@testable import TagTracking

/// The frame-to-frame tracker's search: where it looks for the tags once it has a pose.
@Suite struct TagTrackTests {
    static let width = 640, height = 480
    static let intrinsics = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4.0 / 3.0)

    @Test("regions that overlap are merged, through a chain of them; apart ones stay apart")
    func mergedRegions() {
        let a = PixelRegion(x0: 0, y0: 0, x1: 10, y1: 10), b = PixelRegion(x0: 30, y0: 0, x1: 40, y1: 10)
        let bridge = PixelRegion(x0: 5, y0: 5, x1: 35, y1: 8), far = PixelRegion(x0: 100, y0: 100, x1: 110, y1: 110)
        #expect(PixelRegion.merged([a, b, far]) == [a, b, far])
        let merged = PixelRegion.merged([a, b, far, bridge])
        #expect(merged.count == 2 && merged.contains(PixelRegion(x0: 0, y0: 0, x1: 40, y1: 10)) && merged.contains(far))
        // Touching edges share no pixel.
        #expect(PixelRegion.merged([a, PixelRegion(x0: 10, y0: 0, x1: 20, y1: 10)]).count == 2)
    }

    /// Two tags 1.8 m apart on the ground.
    static let pair = try! TagMap([TagMap.Tag(id: 0, size: 0.4, position: Vector3(-0.9, 0, 0)),
                                   TagMap.Tag(id: 1, size: 0.4, position: Vector3(0.9, 0, 0))])

    /// A track with one measured pose: `map` seen from `eye`.
    static func trackedField(eye: Vector3, map: TagMap = .sceneField) throws -> (track: TagTrack, camera: CameraModel) {
        let camera = CameraModel(position: eye, orientation: .lookAt(eye: eye, target: Vector3(0, 0, 0)), intrinsics: intrinsics)
        let picture = TagRenderer(map: map).render(camera: camera, width: width, height: height)
        let detector = try TagDetector(decimate: 2)
        let sightings = try picture.withUnsafeBufferPointer {
            try detector.detect(grey: $0.baseAddress!, width: width, height: height, stride: width, intrinsics: intrinsics)
        }
        var track = TagTrack(map: map, intrinsics: intrinsics, width: width, height: height)
        #expect(track.searches(at: 1_000_000_000) == nil, "no pose yet: the whole picture")
        guard case .measured(let fix) = track.update(sightings, nanos: 1_000_000_000) else {
            Issue.record("no pose from \(sightings.count) tags")
            throw CancellationError()
        }
        #expect(fix.tags.count >= min(3, map.tags.count))
        return (track, camera)
    }

    @Test("with a pose, the next frame is searched in a box per tag it shows (two tags apart: two boxes; the scene's six: boxes that touch merged), together under 60 % of the picture; each box holds its tag whole",
          arguments: [true, false])
    func boxPerTag(pairApart: Bool) throws {
        let map = pairApart ? Self.pair : .sceneField
        let (track, camera) = try Self.trackedField(eye: pairApart ? Vector3(0, 2.5, 0.5) : Vector3(0.3, 4.2, 3.6), map: map)
        let regions = try #require(track.searches(at: 1_033_000_000)).compactMap(\.region)
        if pairApart { #expect(regions.count == 2, "\(regions)") }
        for (i, r) in regions.enumerated() {
            for other in regions[(i + 1)...] { #expect(!r.overlaps(other)) }
        }
        #expect(regions.reduce(0) { $0 + $1.width * $1.height } <= Self.width * Self.height * 6 / 10)
        // Every tag whose printed square is in the picture lies wholly inside one box.
        for tag in map.tags.values {
            let h = tag.size * 10 / 16
            let corners = [Vector3(-h, -h, 0), Vector3(h, -h, 0), Vector3(h, h, 0), Vector3(-h, h, 0)].compactMap {
                camera.project(tag.world($0)).map { CameraModel.pixel($0.point, width: Self.width, height: Self.height) }
            }
            guard corners.count == 4, corners.allSatisfy({ $0.x > 0 && $0.y > 0 && $0.x < Float(Self.width) && $0.y < Float(Self.height) })
            else { continue }
            #expect(regions.contains { r in corners.allSatisfy { Float(r.x0) <= $0.x && $0.x <= Float(r.x1) && Float(r.y0) <= $0.y && $0.y <= Float(r.y1) } },
                    "tag \(tag.id) at \(corners) outside every box \(regions)")
        }
    }

    @Test("the boxes are searched one by one, a tag found in two counts once (its surer read); nothing usable in them: the whole picture")
    func searchOrder() throws {
        let (track, _) = try Self.trackedField(eye: Vector3(0, 2.5, 0.5), map: Self.pair)
        let regions = try #require(track.searches(at: 1_033_000_000)).compactMap(\.region)
        func sighting(_ id: Int, margin: Float) -> TagSighting {
            // Corners well inside the picture, so the sighting is usable.
            TagSighting(id: id, hamming: 0, decisionMargin: margin,
                        corners: [SIMD2(300, 200), SIMD2(340, 200), SIMD2(340, 240), SIMD2(300, 240)],
                        rotation: .identity, translation: SIMD3(0, 0, 2), poseError: 0)
        }
        var asked: [PixelRegion?] = []
        let found = track.sightings(at: 1_033_000_000) { search in
            asked.append(search.region)
            return search.region == regions[0] ? [sighting(1, margin: 40), sighting(2, margin: 30)] : [sighting(2, margin: 80)]
        }
        #expect(asked.count == regions.count && asked.allSatisfy { $0 != nil })
        #expect(found.map(\.id) == (regions.count > 1 ? [2, 1] : [1, 2]))
        if regions.count > 1 { #expect(found.first?.decisionMargin == 80) }

        asked = []
        let none = track.sightings(at: 1_033_000_000) { search in
            asked.append(search.region)
            return []
        }
        #expect(none.isEmpty && asked.count == regions.count + 1 && asked.last! == nil)
    }
}
