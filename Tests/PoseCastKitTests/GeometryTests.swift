import PoseCastKit
import Testing

/// Deterministic random cameras and points for the geometry tests.
private struct GeometryRandom {
    private var generator: SplitMix64
    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    mutating func uniform(_ range: ClosedRange<Float>) -> Float {
        range.lowerBound + Float(generator.nextUnitDouble()) * (range.upperBound - range.lowerBound)
    }

    mutating func vector(_ range: ClosedRange<Float>) -> Vector3 { Vector3(uniform(range), uniform(range), uniform(range)) }

    mutating func rotation() -> Quaternion {
        while true {
            let q = Quaternion(x: uniform(-1...1), y: uniform(-1...1), z: uniform(-1...1), w: uniform(-1...1))
            if q.norm > 0.2 && q.norm <= 1 { return q.normalized }
        }
    }

    mutating func camera(positions: ClosedRange<Float> = -5...5) -> CameraModel {
        let fx = uniform(0.5...2)
        return CameraModel(position: vector(positions), orientation: rotation(),
                           intrinsics: CameraIntrinsics(fx: fx, fy: fx * uniform(1...1.8), cx: uniform(0.4...0.6), cy: uniform(0.4...0.6)))
    }

    mutating func point() -> NormalizedPoint { NormalizedPoint(x: uniform(0...1), y: uniform(0...1)) }
}

private func framePose(_ camera: CameraModel, flags: PoseFlags = []) -> FramePose {
    FramePose(flags: flags, frameID: 1, captureTimeNanos: 1, position: camera.position,
              orientation: camera.orientation, intrinsics: camera.intrinsics)
}

/// Distance from `p` to the ray's line, and how far along the ray its foot lies.
private func offRay(_ p: Vector3, _ ray: CameraRay) -> (distance: Float, along: Float) {
    let along = (p - ray.origin).dot(ray.direction)
    return ((ray.origin + ray.direction * along).distance(to: p), along)
}

@Suite("camera model")
struct CameraModelTests {
    @Test("unproject then project gives back the image point and depth, at many random cameras")
    func unprojectProject() throws {
        var random = GeometryRandom(seed: 11)
        for _ in 0..<2000 {
            let camera = random.camera(), tap = random.point(), depth = random.uniform(0.1...50)
            let world = camera.unproject(tap, depth: depth)
            let projection = try #require(camera.project(world))
            #expect(abs(projection.point.x - tap.x) < 1e-4 && abs(projection.point.y - tap.y) < 1e-4,
                    "tap \(tap) came back as \(projection.point)")
            #expect(abs(projection.depth - depth) < 1e-4 * depth)
        }
    }

    @Test("project then unproject gives back the world point, at many random cameras")
    func projectUnproject() throws {
        var random = GeometryRandom(seed: 12)
        var checked = 0
        for _ in 0..<4000 {
            let camera = random.camera(), world = random.vector(-20...20)
            guard let projection = camera.project(world) else {
                #expect(camera.toCamera(world).z >= -CameraModel.nearPlane, "a point in front of the camera did not project")
                continue
            }
            let back = camera.unproject(projection.point, depth: projection.depth)
            #expect(back.distance(to: world) < 1e-4 * max(1, world.distance(to: camera.position)))
            checked += 1
        }
        #expect(checked > 1000)
    }

    @Test("the ray through a point's projection passes through the point")
    func rayThroughProjection() throws {
        var random = GeometryRandom(seed: 13)
        for _ in 0..<2000 {
            let camera = random.camera()
            let world = camera.toWorld(Vector3(random.uniform(-3...3), random.uniform(-3...3), -random.uniform(0.2...30)))
            let projection = try #require(camera.project(world))
            let ray = camera.ray(through: projection.point)
            #expect(abs(ray.direction.length - 1) < 1e-5)
            #expect(ray.origin == camera.position)
            let (distance, along) = offRay(world, ray)
            #expect(distance < 1e-4 * max(1, along), "missed by \(distance) m at \(along) m")
            #expect(along > 0)
            let viaPose = try #require(CameraRay(pose: framePose(camera), through: projection.point))
            #expect(viaPose == ray)
        }
    }

    @Test("a point behind or on the camera plane does not project")
    func behindCamera() {
        let camera = CameraModel(position: Vector3(1, 2, 3), orientation: .identity,
                                 intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3))
        #expect(camera.project(Vector3(1, 2, 4)) == nil)  // straight behind (+Z is behind)
        #expect(camera.project(Vector3(5, 2, 3)) == nil)  // beside, on the camera plane
        #expect(camera.project(Vector3(1, 2, 3 - CameraModel.nearPlane / 2)) == nil)
        #expect(camera.project(Vector3(1, 2, 2))?.point == NormalizedPoint(x: 0.5, y: 0.5))
        #expect(camera.project(Vector3(1, 2, -.infinity)) == nil)
    }

    @Test("image axes: +X of the camera is right in the image, +Y is up")
    func imageAxes() throws {
        let camera = CameraModel(position: .zero, orientation: .identity,
                                 intrinsics: CameraIntrinsics(fx: 1, fy: 1, cx: 0.5, cy: 0.5))
        let right = try #require(camera.project(Vector3(0.1, 0, -1)))
        let up = try #require(camera.project(Vector3(0, 0.1, -1)))
        #expect(right.point.x > 0.5 && right.point.y == 0.5)
        #expect(up.point.y < 0.5 && up.point.x == 0.5)
    }

    @Test("a frame flagged missing has no camera and no ray")
    func missingPose() {
        var random = GeometryRandom(seed: 14)
        let pose = framePose(random.camera(), flags: .missing)
        #expect(CameraModel(pose: pose) == nil)
        #expect(CameraRay(pose: pose, through: NormalizedPoint(x: 0.5, y: 0.5)) == nil)
        #expect(CameraModel(pose: framePose(random.camera(), flags: .late)) != nil)
    }
}

@Suite("placement")
struct PlacementTests {
    let k = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 16 / 9)

    @Test("random downward rays land on the ground plane, on the ray")
    func groundHits() throws {
        var random = GeometryRandom(seed: 21)
        var hits = 0
        while hits < 1000 {
            var camera = random.camera()
            camera.position.y = random.uniform(0.3...3)
            let tap = random.point()
            let ray = camera.ray(through: tap)
            guard ray.direction.y < -0.05 else { continue }
            let placed = try PlacementMode.groundPlane.place(tap, on: framePose(camera))
            #expect(abs(placed.y) < 1e-4 * max(1, placed.distance(to: camera.position)))
            let (distance, along) = offRay(placed, ray)
            #expect(distance < 1e-4 * max(1, along) && along > 0)
            hits += 1
        }
    }

    @Test("a ray parallel to the plane fails with .parallelRay")
    func parallel() {
        let pose = FramePose(frameID: 1, captureTimeNanos: 1, position: Vector3(0, 1.5, 0), orientation: .identity, intrinsics: k)
        #expect(throws: PlacementError.parallelRay) {
            try PlacementMode.groundPlane.place(NormalizedPoint(x: 0.5, y: 0.5), on: pose)
        }
        #expect(throws: PlacementError.parallelRay) {
            _ = try Plane.ground.intersect(CameraRay(origin: Vector3(0, 1, 0), direction: Vector3(1, 0, 0)))
        }
    }

    @Test("a plane only behind the camera fails with .behindCamera")
    func behind() {
        // Level camera 1.5 m up; a tap in the upper half looks up, away from the ground.
        let pose = FramePose(frameID: 1, captureTimeNanos: 1, position: Vector3(0, 1.5, 0), orientation: .identity, intrinsics: k)
        #expect(throws: PlacementError.behindCamera) {
            try PlacementMode.groundPlane.place(NormalizedPoint(x: 0.5, y: 0.2), on: pose)
        }
        // Below the ground looking down: the ground is above, behind the camera.
        let under = FramePose(frameID: 1, captureTimeNanos: 1, position: Vector3(0, -1, 0),
                              orientation: Quaternion(axis: Vector3(1, 0, 0), angleRadians: -.pi / 2), intrinsics: k)
        #expect(throws: PlacementError.behindCamera) {
            try PlacementMode.groundPlane.place(NormalizedPoint(x: 0.5, y: 0.5), on: under)
        }
    }

    @Test("taps outside the image or not finite fail with .tapOutsideImage",
          arguments: [(-0.01, 0.5), (0.5, 1.01), (1.5, -2), (Double.nan, 0.5), (0.5, Double.infinity)])
    func outside(x: Double, y: Double) {
        let tap = NormalizedPoint(x: Float(x), y: Float(y))
        let pose = FramePose(frameID: 1, captureTimeNanos: 1, position: Vector3(0, 1.5, 0), orientation: .identity, intrinsics: k)
        for mode in [PlacementMode.groundPlane, .fixedDepth(2), .publisherDepth] {
            let error = #expect(throws: PlacementError.self) { try mode.place(tap, on: pose, depth: 2) }
            guard case .tapOutsideImage(let p)? = error else {
                Issue.record("\(mode): expected tapOutsideImage, got \(String(describing: error))")
                continue
            }
            #expect(p.x.bitPattern == tap.x.bitPattern && p.y.bitPattern == tap.y.bitPattern)
        }
    }

    @Test("image corners and edges count as inside")
    func edges() throws {
        let down = Quaternion(axis: Vector3(1, 0, 0), angleRadians: -.pi / 2)
        let pose = FramePose(frameID: 1, captureTimeNanos: 1, position: Vector3(0, 2, 0), orientation: down, intrinsics: k)
        for tap in [NormalizedPoint(x: 0, y: 0), NormalizedPoint(x: 1, y: 1), NormalizedPoint(x: 0, y: 1)] {
            _ = try PlacementMode.groundPlane.place(tap, on: pose)
        }
    }

    @Test("a frame flagged missing fails with .poseMissing in every mode")
    func poseMissing() {
        let pose = FramePose(flags: [.missing], frameID: 1, captureTimeNanos: 1, position: .zero, orientation: .identity, intrinsics: k)
        for mode in [PlacementMode.groundPlane, .fixedDepth(2), .publisherDepth] {
            #expect(throws: PlacementError.poseMissing) { try mode.place(NormalizedPoint(x: 0.5, y: 0.5), on: pose, depth: 1) }
        }
    }

    @Test("fixed depth puts the point that far along the ray, where it projects back to the tap")
    func fixedDepth() throws {
        var random = GeometryRandom(seed: 22)
        for _ in 0..<500 {
            let camera = random.camera(), tap = random.point(), d = random.uniform(0.2...20)
            let placed = try PlacementMode.fixedDepth(d).place(tap, on: framePose(camera))
            #expect(abs(placed.distance(to: camera.position) - d) < 1e-4 * max(1, d))
            let back = try #require(camera.project(placed))
            #expect(abs(back.point.x - tap.x) < 1e-4 && abs(back.point.y - tap.y) < 1e-4)
        }
        let pose = framePose(random.camera())
        for bad: Float in [0, -1, .nan, .infinity] {
            #expect(throws: PlacementError.self) { try PlacementMode.fixedDepth(bad).place(NormalizedPoint(x: 0.5, y: 0.5), on: pose) }
        }
        #expect(throws: PlacementError.invalidDepth(-1)) { try PlacementMode.fixedDepth(-1).place(NormalizedPoint(x: 0.5, y: 0.5), on: pose) }
    }

    @Test("publisher depth is depth along the optical axis: the point projects to the tap at that depth")
    func publisherDepth() throws {
        var random = GeometryRandom(seed: 23)
        for _ in 0..<500 {
            let camera = random.camera(), tap = random.point(), d = random.uniform(0.2...20)
            let placed = try PlacementMode.publisherDepth.place(tap, on: framePose(camera), depth: d)
            let back = try #require(camera.project(placed))
            #expect(abs(back.depth - d) < 1e-4 * d)
            #expect(abs(back.point.x - tap.x) < 1e-4 && abs(back.point.y - tap.y) < 1e-4)
        }
        let pose = framePose(random.camera())
        #expect(throws: PlacementError.missingDepth) { try PlacementMode.publisherDepth.place(NormalizedPoint(x: 0.5, y: 0.5), on: pose) }
        #expect(throws: PlacementError.invalidDepth(0)) {
            try PlacementMode.publisherDepth.place(NormalizedPoint(x: 0.5, y: 0.5), on: pose, depth: 0)
        }
    }

    @Test("among several planes the nearest hit in front of the camera wins")
    func nearestPlane() throws {
        // Camera 1.5 m up looking down 30° towards −Z: the ray through the centre meets the
        // ground at 3 m and a wall at z = −1 first.
        let pitch = Quaternion(axis: Vector3(1, 0, 0), angleRadians: -.pi / 6)
        let pose = FramePose(frameID: 1, captureTimeNanos: 1, position: Vector3(0, 1.5, 0), orientation: pitch, intrinsics: k)
        let centre = NormalizedPoint(x: 0.5, y: 0.5)
        let wall = Plane(normal: Vector3(0, 0, 1), through: Vector3(0, 0, -1))
        let behindWall = Plane(normal: Vector3(0, 0, 1), through: Vector3(0, 0, 4))
        let ceiling = Plane(normal: Vector3(0, -1, 0), through: Vector3(0, 3, 0))
        let onGround = try PlacementMode.groundPlane.place(centre, on: pose)
        #expect(abs(onGround.distance(to: pose.position) - 3) < 1e-4)
        for planes in [[Plane.ground, wall], [wall, .ground], [ceiling, behindWall, .ground, wall]] {
            let placed = try PlacementMode.planes(planes).place(centre, on: pose)
            #expect(abs(placed.z + 1) < 1e-4, "\(planes.count) planes: \(placed)")
            #expect(abs(placed.y - (1.5 - 1 / Float(3).squareRoot())) < 1e-4)
        }
        #expect(throws: PlacementError.behindCamera) { try PlacementMode.planes([ceiling, behindWall]).place(centre, on: pose) }
        #expect(throws: PlacementError.noPlanes) { try PlacementMode.planes([]).place(centre, on: pose) }
        let level = FramePose(frameID: 1, captureTimeNanos: 1, position: Vector3(0, 1.5, 0), orientation: .identity, intrinsics: k)
        #expect(throws: PlacementError.behindCamera) { try PlacementMode.planes([.ground, behindWall]).place(centre, on: level) }
        #expect(throws: PlacementError.parallelRay) { try PlacementMode.planes([.ground, ceiling]).place(centre, on: level) }
    }

    @Test("a plane is normalised and measures signed distances")
    func planeBasics() {
        let plane = Plane(normal: Vector3(0, 2, 0), through: Vector3(5, 1, -3))
        #expect(plane.normal == Vector3(0, 1, 0) && plane.offset == 1)
        #expect(plane.signedDistance(Vector3(0, 3, 0)) == 2)
        #expect(plane.signedDistance(Vector3(0, -1, 0)) == -2)
    }

    @Test("every placement error explains itself")
    func descriptions() {
        let all: [PlacementError] = [.poseMissing, .tapOutsideImage(NormalizedPoint(x: 2, y: 0)), .parallelRay,
                                     .behindCamera, .invalidDepth(-1), .missingDepth, .noPlanes]
        #expect(Set(all.map(\.description)).count == all.count)
    }
}
