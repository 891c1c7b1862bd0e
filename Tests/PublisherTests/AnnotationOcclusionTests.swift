import CGStreamer
@testable import Publisher
import PoseCastKit
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Marks behind something nearer, by the frame's depth: drawn with the hidden look
/// (ghosted: translucent inside a dashed rim), still centred where they belong; marks on the surface the
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

    @Test("a pin 3 m away behind a wall 1 m away is drawn ghosted inside a dashed rim, centred on its place")
    func hiddenPin() throws {
        let (result, planes, _) = try drawPin(at: (160.5, 240.5), depth: 3, scene: HalfWall(metres: 1))
        #expect(result == OverlayDrawResult(drawn: 1, hidden: 1))
        // Filled in its colour, fainter than a visible pin (#FF00FF over grey: U 213, V 229),
        // and still nearer magenta than grey.
        let (u, v) = planes.chroma(80, 120)
        #expect(u > 160 && u < 213 && v > 175 && v < 229, "the hidden pin's centre: U \(u) V \(v)")
        let coloured = try #require(planes.chromaCentroid { u, v in u > 150 && v > 150 })
        #expect(abs(coloured.x - 160.5) < 1 && abs(coloured.y - 240.5) < 1, "coloured centroid \(coloured)")
        #expect(planes.chromaSamples { u, v in u >= 210 && v >= 226 }.isEmpty, "no sample of full magenta")
        // The rim is dashed: round its middle some pixels are the white dashes and some the
        // frame's grey between them; a visible pin's ring is white all round.
        let rim = AnnotationStyle(frameHeight: 480).pinRadius + AnnotationStyle(frameHeight: 480).pinRingWidth / 2
        let lumas = (0..<72).map { i -> UInt8 in
            let a = Double(i) * .pi / 36
            return planes.luma(Int(160.5 + rim * cos(a)), Int(240.5 + rim * sin(a)))
        }
        let white = lumas.filter { $0 > 190 }.count, grey = lumas.filter { abs(Int($0) - 128) < 25 }.count
        #expect(white >= 20 && grey >= 8, "rim lumas: \(white) white, \(grey) grey of 72")
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
