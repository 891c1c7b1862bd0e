import PoseCastKit
import Testing
@testable import TagTracking

/// Tags partly covered by something nearer, and large tags searched coarser: what the
/// tracker trusts and how it looks.
@Suite struct TagCoverTests {
    static let width = 640, height = 480
    static let intrinsics = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4.0 / 3.0)
    /// Two tags 1.8 m apart on the ground.
    static let pair = try! TagMap([TagMap.Tag(id: 0, size: 0.4, position: Vector3(-0.9, 0, 0)),
                                   TagMap.Tag(id: 1, size: 0.4, position: Vector3(0.9, 0, 0))])

    static func camera(eye: Vector3) -> CameraModel {
        CameraModel(position: eye, orientation: .lookAt(eye: eye, target: Vector3(0, 0, 0)), intrinsics: intrinsics)
    }

    static func detect(_ picture: [UInt8], coarser: Bool = false, decimate: Float = 2) throws -> [TagSighting] {
        let detector = try TagDetector(decimate: decimate)
        return try picture.withUnsafeBufferPointer {
            try detector.detect(grey: $0.baseAddress!, width: width, height: height, stride: width, intrinsics: intrinsics,
                                coarser: coarser)
        }
    }

    @Test("a tag seen whole has a ring contrast near 1; with a grey object over its ring and the edge of its black square it still decodes, but its ring says so: alone it gives no pose, beside a whole tag it is left out")
    func coveredTag() throws {
        let camera = Self.camera(eye: Vector3(0, 2.5, 0.5))
        var picture = TagRenderer(map: Self.pair).render(camera: camera, width: Self.width, height: Self.height)
        let whole = try Self.detect(picture)
        #expect(Set(whole.map(\.id)) == [0, 1])
        for s in whole { #expect(s.ringContrast > 0.85, "tag \(s.id): \(s.ringContrast)") }

        // Cover tag 1's right-hand ring and a quarter cell of its black square, top to
        // bottom, with a mid-grey object (a sleeve, a pipe).
        let one = try #require(whole.first { $0.id == 1 })
        let xs = one.corners.map(\.x), ys = one.corners.map(\.y)
        let side = xs.max()! - xs.min()!
        let x0 = Int(xs.max()! - side / 32), x1 = Int(xs.max()! + side / 6)
        for y in Int(ys.min()! - side / 6)...Int(ys.max()! + side / 6) where y >= 0 && y < Self.height {
            for x in x0...x1 where x >= 0 && x < Self.width { picture[y * Self.width + x] = 130 }
        }
        let covered = try Self.detect(picture)
        let hidden = try #require(covered.first { $0.id == 1 }, "the covered tag no longer decodes: the cover is too wide for this test")
        #expect(hidden.ringContrast < TagPoseSolver.minRingContrast, "\(hidden.ringContrast)")
        let zero = try #require(covered.first { $0.id == 0 })
        #expect(zero.ringContrast > 0.85)

        let solve = { (sightings: [TagSighting]) in
            TagPoseSolver.solve(sightings, map: Self.pair, intrinsics: Self.intrinsics, width: Self.width, height: Self.height, prior: nil)
        }
        #expect(solve([hidden]) == .noTag)
        guard case .fix(let fix) = solve(covered) else {
            Issue.record("no pose from the whole tag beside the covered one")
            return
        }
        #expect(fix.tags == [0])
        #expect(fix.camera.position.distance(to: camera.position) < 0.02)
    }

    @Test("a tag partly covered but with its ring's contrast at 0.7–0.8 is used only when no whole tag is in view")
    func wholeTagsFirst() {
        func sighting(_ id: Int, ring: Double) -> TagSighting {
            TagSighting(id: id, hamming: 0, decisionMargin: 50,
                        corners: [SIMD2(300, 200), SIMD2(340, 200), SIMD2(340, 240), SIMD2(300, 240)],
                        rotation: .identity, translation: SIMD3(0, 0, 2), poseError: 0, ringContrast: ring)
        }
        let trusted = { (s: [TagSighting]) in
            TagPoseSolver.trusted(s, map: Self.pair, width: Self.width, height: Self.height).map(\.id)
        }
        #expect(trusted([sighting(0, ring: 0.95), sighting(1, ring: 0.75)]) == [0])
        #expect(trusted([sighting(1, ring: 0.75)]) == [1])
        #expect(trusted([sighting(1, ring: 0.6)]) == [])
    }

    @Test("with a pose near the tags, each box is searched coarser (every tag in it large); far away, at the detector's own decimation; the coarser search finds the same tags, corners within 0.3 px")
    func coarserSearch() throws {
        func searches(from eye: Vector3) throws -> [TagSearch] {
            let camera = Self.camera(eye: eye)
            let picture = TagRenderer(map: Self.pair).render(camera: camera, width: Self.width, height: Self.height)
            var track = TagTrack(map: Self.pair, intrinsics: Self.intrinsics, width: Self.width, height: Self.height)
            guard case .measured = track.update(try Self.detect(picture), nanos: 1_000_000_000) else {
                Issue.record("no pose from \(eye)")
                return []
            }
            return try #require(track.searches(at: 1_033_000_000))
        }
        let near = try searches(from: Vector3(0, 2.0, 0.5))
        #expect(!near.isEmpty && near.allSatisfy(\.coarser), "\(near)")
        let far = try searches(from: Vector3(0, 4.5, 5))
        #expect(!far.isEmpty && far.allSatisfy { !$0.coarser }, "\(far)")

        let picture = TagRenderer(map: Self.pair).render(camera: Self.camera(eye: Vector3(0, 2.0, 0.5)), width: Self.width, height: Self.height)
        let fine = try Self.detect(picture), coarse = try Self.detect(picture, coarser: true)
        #expect(Set(fine.map(\.id)) == [0, 1] && Set(coarse.map(\.id)) == [0, 1])
        for c in coarse {
            let f = try #require(fine.first { $0.id == c.id })
            for (a, b) in zip(f.corners, c.corners) {
                let d = a - b
                #expect((d * d).sum().squareRoot() < 0.3, "tag \(c.id): \(f.corners) vs \(c.corners)")
            }
        }
    }
    @Test("a dim, soft, noisy picture (the tags' contrast 50 grey levels, a 3 × 3 blur, noise of σ 4): tags in full view keep a ring contrast of at least 0.8 and give the pose", arguments: [Vector3(0, 2.5, 0.5), Vector3(0.4, 3.5, 3.0)])
    func dimNoisyTags(eye: Vector3) throws {
        let camera = Self.camera(eye: eye)
        let clean = TagRenderer(map: Self.pair).render(camera: camera, width: Self.width, height: Self.height)
        let (w, h) = (Self.width, Self.height)
        var picture = clean
        var rng = SplitMix64(seed: 7)
        for y in 0..<h {
            for x in 0..<w {
                var sum = 0
                for dy in -1...1 { for dx in -1...1 { sum += Int(clean[min(max(y + dy, 0), h - 1) * w + min(max(x + dx, 0), w - 1)]) } }
                // Box blur, the grey range squeezed to 40…90, then noise (a sum of uniforms: about normal).
                let soft = 40 + Double(sum) / 9 * 50 / 255
                let noise = ((0..<4).map { _ in Double.random(in: -1...1, using: &rng) }.reduce(0, +)) * 4 / (4.0 / 3).squareRoot()
                picture[y * w + x] = UInt8(max(0, min(255, (soft + noise).rounded())))
            }
        }
        let sightings = try Self.detect(picture)
        #expect(Set(sightings.map(\.id)) == [0, 1], "\(sightings.map(\.id))")
        for s in sightings { #expect(s.ringContrast >= TagPoseSolver.wholeRingContrast, "tag \(s.id): \(s.ringContrast)") }
        guard case .fix(let fix) = TagPoseSolver.solve(sightings, map: Self.pair, intrinsics: Self.intrinsics, width: w, height: h, prior: nil) else {
            Issue.record("no pose from the dim picture")
            return
        }
        #expect(fix.camera.position.distance(to: camera.position) < 0.03)
    }
}
