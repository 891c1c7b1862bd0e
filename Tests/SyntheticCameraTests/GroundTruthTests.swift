import Imaging
import PoseCastKit
import SyntheticCamera
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The rendered video agrees with the scene's exact geometry: colours and positions of
/// the discs, depth, occlusion.
@Suite("synthetic camera: rendered frames match the ground truth")
struct GroundTruthTests {
    typealias F = RenderFixture

    /// Every disc whose centre is visible from `camera` (the exact ray cast meets it there).
    static func visibleDiscs(_ camera: CameraModel) -> [(disc: SceneDisc, projection: Projection)] {
        F.scene.discs.compactMap { disc in
            guard let p = camera.project(disc.center), p.isInImage,
                  F.scene.intersect(camera.ray(through: p.point))?.name == disc.name else { return nil }
            return (disc, p)
        }
    }

    /// The disc's outline: its rim projected into the image (pixel coordinates).
    static func outline(_ disc: SceneDisc, _ camera: CameraModel) -> [(x: Double, y: Double)]? {
        var points: [(x: Double, y: Double)] = []
        for k in 0..<128 {
            let a = Float(k) / 128 * 2 * .pi
            guard let p = camera.project(disc.center + Vector3(disc.radius * cos(a), 0, disc.radius * sin(a))) else { return nil }
            let (x, y) = CameraModel.pixel(p.point, width: F.width, height: F.height)
            points.append((Double(x), Double(y)))
        }
        return points
    }

    /// True when the whole disc is in the image and nothing hides any of it.
    static func fullyVisible(_ disc: SceneDisc, _ camera: CameraModel) -> Bool {
        (0..<24).allSatisfy { k in
            let a = Float(k) / 24 * 2 * .pi
            let rim = disc.center + Vector3(0.97 * disc.radius * cos(a), 0, 0.97 * disc.radius * sin(a))
            guard let p = camera.project(rim), p.point.x > 0.01, p.point.x < 0.99, p.point.y > 0.01, p.point.y < 0.99 else { return false }
            return F.scene.intersect(camera.ray(through: p.point))?.name == disc.name
        }
    }

    /// Centroid of a polygon (shoelace formula).
    static func centroid(_ polygon: [(x: Double, y: Double)]) -> (x: Double, y: Double) {
        var area = 0.0, cx = 0.0, cy = 0.0
        for k in polygon.indices {
            let p = polygon[k], q = polygon[(k + 1) % polygon.count]
            let c = p.x * q.y - q.x * p.y
            area += c; cx += (p.x + q.x) * c; cy += (p.y + q.y) * c
        }
        return (cx / (3 * area), cy / (3 * area))
    }

    /// Centroid of the disc's colour in the frame: each 2×2 chroma block weighted by how
    /// much of the disc's chroma it holds (the floor is nearly neutral grey, and chroma is
    /// linear in coverage, so edge blocks count for the part of them the disc covers).
    /// Blocks whose chroma is off the floor–disc line (other objects) are left out.
    static func colourCentroid(_ image: I420Image, colour: SceneColor, around outline: [(x: Double, y: Double)]) -> (x: Double, y: Double, weight: Double) {
        let disc = BT601.yuv(red: colour.red, green: colour.green, blue: colour.blue)
        let floor = BT601.yuv(red: 130, green: 126, blue: 120)
        let du = Double(disc.u - floor.u), dv = Double(disc.v - floor.v)
        let length = (du * du + dv * dv).squareRoot()
        let x0 = max(Int(outline.map(\.x).min()!) / 2 - 1, 0), x1 = min(Int(outline.map(\.x).max()!) / 2 + 1, image.width / 2 - 1)
        let y0 = max(Int(outline.map(\.y).min()!) / 2 - 1, 0), y1 = min(Int(outline.map(\.y).max()!) / 2 + 1, image.height / 2 - 1)
        var sx = 0.0, sy = 0.0, sw = 0.0
        for by in y0...y1 {
            for bx in x0...x1 {
                let (u, v) = image.chroma(x: 2 * bx, y: 2 * by)
                let cu = Double(u) - Double(floor.u), cv = Double(v) - Double(floor.v)
                let a = min(max((cu * du + cv * dv) / (du * du + dv * dv), 0), 1)
                guard a > 0.03, abs(cu * dv - cv * du) / length < 10 else { continue }
                sx += a * Double(2 * bx + 1); sy += a * Double(2 * by + 1); sw += a
            }
        }
        return (sx / sw, sy / sw, sw)
    }

    @Test("each visible disc shows its colour at its projected centre, and its colour's centroid is where it projects",
          arguments: [0, 60, 135, 200, 290])
    func discColourAndCentroid(degrees: Float) throws {
        let camera = F.orbitCamera(degrees: degrees)
        let renderer = try F.renderer()
        let visible = Self.visibleDiscs(camera).filter { Self.fullyVisible($0.disc, camera) }
        #expect(visible.count >= 2, "only \(visible.map(\.disc.name)) fully visible at \(degrees)°")
        var farChecked = 0
        for (disc, projection) in visible {
            // Focused on the disc, so its edges are sharp.
            let lens = LensState(focusDistance: projection.depth)
            let image = try renderer.render(camera: camera, lens: lens, frameIndex: 7)
            let expected = F.hazed(disc.color, depth: projection.depth)
            let (cx, cy) = F.pixel(projection.point)
            let seen = image.rgb(x: cx, y: cy)
            #expect(F.distance(seen, expected) < 16, "\(disc.name) at \(degrees)°: saw \(seen), expected \(expected)")

            let outline = try #require(Self.outline(disc, camera))
            let clean = try renderer.render(camera: camera, lens: LensState(focusDistance: projection.depth, noise: 0), frameIndex: 7)
            let found = Self.colourCentroid(clean, colour: expected, around: outline)
            #expect(found.weight > 20, "\(disc.name): too little of its colour")
            // Against the exact centroid of the projected outline: the renderer's accuracy.
            let shape = Self.centroid(outline)
            let shapeError = ((found.x - shape.x) * (found.x - shape.x) + (found.y - shape.y) * (found.y - shape.y)).squareRoot()
            #expect(shapeError < 0.15, "\(disc.name) at \(degrees)°: \(shapeError) px from its outline's centroid")
            // Against the projected centre: perspective puts a projected circle's centroid
            // a little below its centre's projection (up to ~0.6 px for the nearest discs
            // at 640×480), so this holds from 2.5 m on.
            let (ex, ey) = CameraModel.pixel(projection.point, width: F.width, height: F.height)
            let error = ((found.x - Double(ex)) * (found.x - Double(ex)) + (found.y - Double(ey)) * (found.y - Double(ey))).squareRoot()
            if projection.depth >= 2.5 {
                #expect(error < 0.5, "\(disc.name) at \(degrees)°: centroid \(error) px from its projected centre")
                farChecked += 1
            }
        }
        #expect(farChecked >= 1)
    }

    @Test("depth of a ground pixel equals the analytic ground depth within 1%")
    func groundDepth() throws {
        let camera = F.orbitCamera(degrees: 20)
        let renderer = try F.renderer()
        _ = try renderer.render(camera: camera, frameIndex: 1)
        let map = try renderer.copyDepthMap(scale: 4)
        #expect(map.width == F.width / 4 && map.height == F.height / 4)
        var checked = 0
        for (x, y) in [(20, 470), (320, 460), (600, 300), (100, 200), (630, 20), (322, 402)] {
            let p = F.point(x: x, y: y)
            let ray = camera.ray(through: p)
            guard let hit = F.scene.intersect(ray), hit.kind == .ground else { continue }
            let t = try Plane.ground.intersect(ray)
            let analytic = try #require(camera.project(ray.point(atDistance: t))).depth
            let rendered = renderer.depthAt(x: x, y: y)
            #expect(abs(rendered / analytic - 1) < 0.01, "pixel (\(x), \(y)): \(rendered) m vs \(analytic) m")
            checked += 1
        }
        #expect(checked >= 4)
        // The quarter-resolution map samples each 4×4 block's centre pixel.
        for (i, j) in [(80, 115), (10, 100), (150, 90)] {
            let (x, y) = (i * 4 + 2, j * 4 + 2)
            let p = F.point(x: x, y: y)
            guard F.scene.intersect(camera.ray(through: p))?.kind == .ground else { continue }
            let t = try Plane.ground.intersect(camera.ray(through: p))
            let analytic = try #require(camera.project(camera.ray(through: p).point(atDistance: t))).depth
            let mapped = try #require(map.depth(at: p))
            #expect(abs(mapped / analytic - 1) < 0.01)
        }
    }

    @Test("depth of object pixels matches the ray cast; sky is infinite and has no map depth")
    func objectAndSkyDepth() throws {
        // Low and looking level, so the top of the frame is sky.
        let camera = F.lookingAt(Vector3(0, 0.4, 0), from: Vector3(0, 0.4, 3))
        let renderer = try F.renderer()
        _ = try renderer.render(camera: camera, frameIndex: 1)
        let centre = F.point(x: 320, y: 240)
        let hit = try #require(F.scene.intersect(camera.ray(through: centre)))
        #expect(hit.name == "ball")
        let expected = try #require(camera.project(hit.point)).depth
        #expect(abs(renderer.depthAt(x: 320, y: 240) / expected - 1) < 0.005)
        #expect(renderer.depthAt(x: 320, y: 5) == .infinity)
        let map = try renderer.copyDepthMap(scale: 1)
        #expect(map.depth(at: F.point(x: 320, y: 5)) == nil)
        #expect(map.depth(at: NormalizedPoint(x: 1.2, y: 0.5)) == nil)
    }

    @Test("a box in front of a disc hides it")
    func occlusion() throws {
        let disc = RenderFixture.disc("disc.yellow"), crate = RenderFixture.box("crate")
        // On the line from the disc's centre through the crate's centre, beyond the crate.
        let eye = disc.center + (crate.center - disc.center).normalized * 3.5
        let camera = F.lookingAt(disc.center, from: eye)
        let hit = try #require(F.scene.intersect(camera.ray(through: NormalizedPoint(x: 0.5, y: 0.5))))
        #expect(hit.name == "crate")
        let renderer = try F.renderer()
        let image = try renderer.render(camera: camera, lens: LensState(focusDistance: hit.distance))
        let discDepth = try #require(camera.project(disc.center)).depth
        #expect(renderer.depthAt(x: 320, y: 240) < discDepth - 0.5)
        let expectedBox = try #require(camera.project(hit.point)).depth
        #expect(abs(renderer.depthAt(x: 320, y: 240) / expectedBox - 1) < 0.005)
        for (dx, dy) in [(0, 0), (-4, 0), (4, 0), (0, -3), (0, 3)] {
            let seen = image.rgb(x: 320 + dx, y: 240 + dy)
            #expect(F.distance(seen, disc.color) > 60, "the yellow disc shows through the crate: \(seen)")
        }
        // From the other side the disc is in plain view.
        let opposite = F.lookingAt(disc.center, from: disc.center - (crate.center - disc.center).normalized * 3.5
                                   + Vector3(0, 2.5, 0))
        let clear = try renderer.render(camera: opposite, lens: LensState(focusDistance: 3.5))
        let depth = try #require(opposite.project(disc.center)).depth
        #expect(F.distance(clear.rgb(x: 320, y: 240), F.hazed(disc.color, depth: depth)) < 16)
    }

    @Test("objects occlude the ground: no ground depth inside the ball's silhouette")
    func objectsOccludeGround() throws {
        let camera = F.orbitCamera(degrees: 0)
        let renderer = try F.renderer()
        _ = try renderer.render(camera: camera)
        for (x, y) in [(320, 240), (320, 270), (300, 250)] {
            let hit = try #require(F.scene.intersect(camera.ray(through: F.point(x: x, y: y))))
            #expect(hit.name == "ball")
            let expected = try #require(camera.project(hit.point)).depth
            #expect(abs(renderer.depthAt(x: x, y: y) / expected - 1) < 0.005)
        }
    }
}
