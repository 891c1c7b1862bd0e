import PoseCastKit
import SyntheticCamera
import Testing

@Suite("synthetic scene: layout and exact ray casting")
struct SceneTests {
    let scene = SyntheticScene.standard

    @Test("no colour of the scene is a marker hue (magenta, pink, purple)")
    func noMarkerHue() {
        for colour in scene.palette { #expect(!colour.isMarkerHue, "\(colour)") }
        #expect(SceneColor(220, 40, 200).isMarkerHue)
        #expect(SceneColor(150, 60, 170).isMarkerHue)
    }

    @Test("six tap-target discs of distinct saturated colours lie on the ground")
    func discs() {
        #expect(scene.discs.map(\.name) == ["disc.red", "disc.green", "disc.blue", "disc.yellow", "disc.cyan", "disc.orange"])
        for disc in scene.discs {
            #expect(disc.center.y == 0)
            #expect((0.08...0.1).contains(disc.radius))
            let c = disc.color
            #expect(max(c.red, c.green, c.blue) - min(c.red, c.green, c.blue) > 120, "\(disc.name) is not saturated")
        }
        for (i, a) in scene.discs.enumerated() {
            for b in scene.discs[(i + 1)...] { #expect(RenderFixture.distance(a.color, b.color) > 60, "\(a.name) ≈ \(b.name)") }
        }
    }

    @Test("everything lies within about 3 m × 3 m of the origin, clear of the discs")
    func layout() {
        for box in scene.boxes {
            for corner in box.topCorners { #expect(abs(corner.x) <= 1.7 && abs(corner.z) <= 1.7, "\(box.name)") }
        }
        for sphere in scene.spheres {
            #expect(abs(sphere.center.x) + sphere.radius <= 1.7 && abs(sphere.center.z) + sphere.radius <= 1.7)
        }
        // A disc is a tap target: keep it out from under objects and their contact shadows.
        for disc in scene.discs {
            for box in scene.boxes {
                let reach = (box.size.x * box.size.x + box.size.z * box.size.z).squareRoot() / 2 + 0.22
                #expect(disc.center.distance(to: box.baseCenter) > reach + disc.radius, "\(disc.name) near \(box.name)")
            }
            for sphere in scene.spheres {
                let ground = Vector3(sphere.center.x, 0, sphere.center.z)
                #expect(disc.center.distance(to: ground) > sphere.radius * 1.25 + disc.radius, "\(disc.name) near \(sphere.name)")
            }
        }
    }

    @Test("features: every disc centre and four named top corners per box")
    func features() {
        let features = scene.features
        #expect(features.count == scene.discs.count + 4 * scene.boxes.count)
        #expect(features.first { $0.name == "disc.red" }?.position == Vector3(0.6, 0, 0.3))
        #expect(features.first { $0.name == "disc.red" }?.kind == .discCenter)
        let crate = RenderFixture.box("crate")
        let corners = features.filter { $0.name.hasPrefix("crate.top.") }
        #expect(corners.map(\.name) == ["crate.top.0", "crate.top.1", "crate.top.2", "crate.top.3"])
        for corner in corners {
            #expect(corner.kind == .boxTopCorner)
            #expect(abs(corner.position.y - crate.size.y) < 1e-6)
            // Half the diagonal of the 0.5 m top face from the box's axis.
            let radial = Vector3(corner.position.x - crate.baseCenter.x, 0, corner.position.z - crate.baseCenter.z).length
            #expect(abs(radial - Float(0.25 * 2.0.squareRoot())) < 1e-5)
        }
    }

    @Test("a ray straight down onto a disc centre hits the disc at the camera's height")
    func downOntoDisc() throws {
        let disc = RenderFixture.disc("disc.blue")
        let hit = try #require(scene.intersect(CameraRay(origin: disc.center + Vector3(0, 2, 0), direction: Vector3(0, -1, 0))))
        #expect(hit.kind == .disc && hit.name == "disc.blue")
        #expect(abs(hit.distance - 2) < 1e-5)
        #expect(hit.normal == Vector3(0, 1, 0))
        let beside = try #require(scene.intersect(CameraRay(origin: disc.center + Vector3(disc.radius + 0.01, 2, 0),
                                                            direction: Vector3(0, -1, 0))))
        #expect(beside.kind == .ground && beside.name == "ground")
    }

    @Test("a horizontal ray meets a box face with its outward normal, or only sky")
    func boxAndSky() throws {
        let tower = RenderFixture.box("tower")
        let origin = Vector3(tower.baseCenter.x, 0.6, 5)
        let hit = try #require(scene.intersect(CameraRay(origin: origin, direction: Vector3(0, 0, -1))))
        #expect(hit.kind == .box && hit.name == "tower")
        #expect(hit.normal.z > 0.9)
        #expect(abs(hit.point.y - 0.6) < 1e-5)
        #expect(scene.intersect(CameraRay(origin: Vector3(0, 3, 5), direction: Vector3(0, 0.2, -1))) == nil)
    }

    @Test("nearest surface wins: the ball hides the ground behind it")
    func ballInFront() throws {
        let hit = try #require(scene.intersect(CameraRay(origin: Vector3(0, 0.3, 3), direction: Vector3(0, 0, -1))))
        #expect(hit.name == "ball" && hit.kind == .sphere)
        #expect(abs(hit.distance - 2.7) < 1e-4)
        #expect(abs(hit.normal.z - 1) < 1e-4)
    }
}
