@testable import Subscriber
@testable import Publisher
import PoseMedia
import PoseCastKit
import Testing

/// The marker detector against marks the publisher's own overlay draws (no codec): each
/// kind is found where its anchor projects, at any frame size; no mark, another colour or a
/// mark elsewhere is not found.
@Suite("marker detector")
struct MarkerDetectorTests {
    /// Draws `annotations` with the publisher's overlay into a grey frame of `scene`.
    static func picture(_ scene: OverlayScene, _ annotations: [Annotation]) throws -> DecodedPicture {
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        overlay.setAnnotations(annotations)
        let frame = try OverlayFrame(scene)
        _ = overlay.draw(on: frame.buffer, pose: scene.pose)
        let planes = frame.planes()
        return DecodedPicture(frame: DecodedFrame(pose: scene.pose, decodedAtNanos: 0, codec: .vp8,
                                                  width: scene.width, height: scene.height),
                              width: scene.width, height: scene.height, y: planes.y, u: planes.u, v: planes.v)
    }

    static func mark(_ kind: AnnotationKind, at p: Vector3, color: String = MarkerDetector.magentaHex,
                     label: String = "") -> Annotation {
        Annotation(id: "m", kind: kind, position: p, frameId: 0, tap: NormalizedPoint(x: 0.5, y: 0.5),
                   label: label, color: color, author: "test")
    }

    @Test("every kind is found within a pixel of its projection", arguments: [
        (AnnotationKind.pin, 640, 480), (.label, 640, 480), (.arrow, 640, 480),
        (.pin, 1280, 720), (.label, 1280, 720), (.arrow, 1280, 720),
    ])
    func foundAtProjection(kind: AnnotationKind, width: Int, height: Int) throws {
        let scene = try OverlayScene(width: width, height: height)
        let shape = MarkerShape(kind: kind, frameHeight: height)
        for pixel in [(Float(321.3), Float(207.6)), (Float(width) * 0.7 + 0.37, Float(height) * 0.8 + 0.81)] {
            let world = scene.world(atPixel: pixel.0, pixel.1)
            let projected = scene.pixel(of: world)
            // With a label too: its dark box and white text are no part of the mark.
            let picture = try Self.picture(scene, [Self.mark(kind, at: world, label: "valve")])
            let sighting = try #require(MarkerDetector.magenta.locate(shape, anchor: projected, in: picture),
                                        "\(kind) at \(projected)")
            print("[marker \(kind) \(width)×\(height)] error \(sighting.errorPixels) px (\(sighting.found.x - sighting.expected.x), \(sighting.found.y - sighting.expected.y)), \(sighting.found.pixels) px of colour")
            // The anchor goes on the nearest pixel centre and chroma is sampled per 2×2 block,
            // which puts the colour up to ~0.7 px off; an arrow's thin tail loses more of its
            // antialiased rim than its head, pulling the centroid a little towards the tip.
            let tolerance: Float = kind == .arrow ? 1.5 : 1
            #expect(sighting.errorPixels < tolerance, "\(kind) at \(projected): found \(sighting.found), expected \(sighting.expected)")
            #expect(Float(sighting.found.pixels) > shape.colorArea / 2)
            #expect(shape.isWhollyInside(projected, width: width, height: height))
        }
    }

    @Test("no mark, a mark of another colour, or one farther than the search window is not found")
    func notFound() throws {
        let scene = try OverlayScene()
        let shape = MarkerShape(kind: .pin, frameHeight: scene.height)
        let at = (x: Float(300.5), y: Float(200.5))
        let world = scene.world(atPixel: at.x, at.y)
        #expect(MarkerDetector.magenta.locate(shape, anchor: at, in: try Self.picture(scene, [])) == nil)
        let green = try Self.picture(scene, [Self.mark(.pin, at: world, color: "#00FF00")])
        #expect(MarkerDetector.magenta.locate(shape, anchor: at, in: green) == nil)
        // Green is found by a detector asked for green.
        #expect(try #require(MarkerDetector(hex: "#00FF00")).locate(shape, anchor: at, in: green) != nil)
        let elsewhere = try Self.picture(scene, [Self.mark(.pin, at: scene.world(atPixel: at.x + 60, at.y))])
        #expect(MarkerDetector.magenta.locate(shape, anchor: at, in: elsewhere) == nil)
        // A window reaching past the picture's edges is cut to it, not a crash.
        #expect(MarkerDetector.magenta.locate(shape, anchor: (-5, 479.9), in: elsewhere) == nil)
        #expect(MarkerDetector.magenta.locate(shape, anchor: (.nan, 3), in: elsewhere) == nil)
        #expect(MarkerDetector(hex: "magenta") == nil)
    }

    @Test("a mark near an edge is not expected whole")
    func wholeInside() {
        let shape = MarkerShape(kind: .pin, frameHeight: 480)
        #expect(shape.isWhollyInside((320, 240), width: 640, height: 480))
        #expect(!shape.isWhollyInside((4, 240), width: 640, height: 480))
        #expect(!shape.isWhollyInside((320, 476), width: 640, height: 480))
        let arrow = MarkerShape(kind: .arrow, frameHeight: 480)
        // The arrow comes from the upper left: its tail needs room there.
        #expect(!arrow.isWhollyInside((20, 240), width: 640, height: 480))
        #expect(arrow.centroidOffset.x < -10 && arrow.centroidOffset.x == arrow.centroidOffset.y)
    }
}
