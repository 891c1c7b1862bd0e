import CGStreamer
@testable import Publisher
import PoseCastKit
import Testing

/// Marks behind something nearer, by the frame's depth: drawn with the hidden look
/// (hollow, dashed, faded), still centred where they belong; marks on the surface the
/// depth shows, or with no depth known, drawn as ever.
@Suite("annotation occlusion")
struct AnnotationOcclusionTests {
    /// A wall `metres` in front of the camera over the left half of the picture; the
    /// right half sees nothing (sky).
    struct HalfWall: DepthSampler {
        var metres: Float
        func depth(at point: NormalizedPoint) -> Float? { point.x < 0.5 ? metres : nil }
    }

    /// The magenta samples of a pin at (x, y) in the frame drawn over grey.
    func drawPin(at pixel: (Float, Float), depth anchorDepth: Float, scene depth: (any DepthSampler)?) throws
        -> (result: OverlayDrawResult, planes: OverlayPlanes, world: Vector3) {
        let scene = try OverlayScene()
        let world = scene.world(atPixel: pixel.0, pixel.1, depth: anchorDepth)
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height, hiddenLook: true)
        overlay.setAnnotations([.make("p", .pin, at: world, color: "#FF00FF")])
        let frame = try OverlayFrame(scene)
        let result = overlay.draw(on: frame.buffer, pose: scene.pose, depth: depth)
        return (result, frame.planes(), world)
    }

    @Test("a pin 3 m away behind a wall 1 m away is drawn hollow and faded, centred on its place")
    func hiddenPin() throws {
        let (result, planes, _) = try drawPin(at: (160.5, 240.5), depth: 3, scene: HalfWall(metres: 1))
        #expect(result == OverlayDrawResult(drawn: 1, hidden: 1))
        // The centre shows what hides it (the frame's grey), the dashed ring is around it.
        #expect(planes.luma(160, 240) == OverlayPlanes.grey)
        let (u, v) = planes.chroma(80, 120)
        #expect(u == 128 && v == 128, "the hidden pin's centre is filled: U \(u) V \(v)")
        let ring = planes.chromaSamples { u, v in u > 150 && v > 150 }
        #expect(!ring.isEmpty && ring.count < 40, "\(ring.count) coloured chroma samples")
        let centre = centroid(ring)
        #expect(abs(centre.x - 160.5) < 2.5 && abs(centre.y - 240.5) < 2.5)
        // Faded: no sample reaches the full pin's magenta.
        #expect(planes.chromaSamples(where: OverlayPlanes.isMagenta).count < 10)
    }

    @Test("a pin on the wall, a pin where nothing is hit, a pin with no depth known: drawn as ever",
          arguments: [(Float(160.5), Float(1.0), true), (480.5, 3.0, true), (160.5, 3.0, false)])
    func visiblePins(_ case: (x: Float, depth: Float, withDepth: Bool)) throws {
        let (result, planes, _) = try drawPin(at: (`case`.x, 240.5), depth: `case`.depth,
                                              scene: `case`.withDepth ? HalfWall(metres: 1) : nil)
        #expect(result == OverlayDrawResult(drawn: 1))
        let (u, v) = planes.chroma(Int(`case`.x) / 2, 120)
        #expect(OverlayPlanes.isMagenta(u, v), "the pin's centre is not filled: U \(u) V \(v)")
    }

    @Test("one sample of nearer depth at the anchor (a silhouette's edge) does not hide it")
    func edgeSample() throws {
        struct Spike: DepthSampler {
            func depth(at point: NormalizedPoint) -> Float? {
                abs(point.x - 0.25) < 0.001 && abs(point.y - 0.5) < 0.001 ? 0.5 : 3
            }
        }
        let (result, _, _) = try drawPin(at: (160.5, 240.5), depth: 3, scene: Spike())
        #expect(result == OverlayDrawResult(drawn: 1))
    }
}
