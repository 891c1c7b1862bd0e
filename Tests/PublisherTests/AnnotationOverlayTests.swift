import CGStreamer
@testable import Publisher
import PoseMedia
import Subscriber
import PoseCastKit
import RTCSession
import TestSupport
import Testing

/// The publisher's annotation overlay on plain grey I420 frames: where marks land,
/// what is clipped, what is not drawn, and what the counts say.
@Suite("annotation overlay")
struct AnnotationOverlayTests {
    // MARK: Placement

    @Test("a magenta pin is centred on its projection", arguments: [
        (321.3, 207.6), (100.5, 400.5), (517.9, 63.2), (44.05, 331.95),
    ] as [(Float, Float)])
    func pinCentredOnProjection(pixel: (Float, Float)) throws {
        let scene = try OverlayScene()
        let world = scene.world(atPixel: pixel.0, pixel.1)
        let projected = scene.pixel(of: world)
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        overlay.setAnnotations([.make("p", .pin, at: world, color: "#FF00FF")])
        let frame = try OverlayFrame(scene)
        #expect(overlay.draw(on: frame.buffer, pose: scene.pose) == OverlayDrawResult(drawn: 1))

        let planes = frame.planes()
        let magenta = try #require(planes.chromaCentroid(where: OverlayPlanes.isMagenta))
        // The anchor pixel goes on the pixel centre nearest the projection; the chroma blob
        // and the white ring (full-resolution luma) are centred on that pixel centre, so
        // within half a pixel of the projection on each axis.
        let centre = (x: projected.x.rounded(.down) + 0.5, y: projected.y.rounded(.down) + 0.5)
        let ring = try #require(planes.lumaCentroid(where: { $0 > 200 }))
        print("[overlay pin] projection (\(projected.x), \(projected.y)) chroma centroid \(magenta) ring centroid \(ring)")
        for found in [(magenta.x, magenta.y), ring] {
            #expect(abs(found.0 - projected.x) <= 0.5 + 1e-3 && abs(found.1 - projected.y) <= 0.5 + 1e-3)
            #expect(distance(found, centre) <= 0.05)
        }
        #expect(magenta.count > 20)
    }

    @Test("an arrow's tip is at the anchor and its body comes from the upper left")
    func arrowTip() throws {
        let scene = try OverlayScene()
        let anchor = (x: Float(300.5), y: Float(200.5))
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        overlay.setAnnotations([.make("a", .arrow, at: scene.world(atPixel: anchor.x, anchor.y), color: "#FF00FF")])
        let frame = try OverlayFrame(scene)
        #expect(overlay.draw(on: frame.buffer, pose: scene.pose) == OverlayDrawResult(drawn: 1))

        let samples = frame.planes().chromaSamples(where: OverlayPlanes.isMagenta)
        try #require(samples.count > 20)
        // Nothing coloured past the tip, and strong colour within one chroma sample (2 px
        // each way) of it: the tip pixel itself is only partly covered by the sharp point.
        #expect(samples.allSatisfy { $0.x <= anchor.x + 1 && $0.y <= anchor.y + 1 })
        let nearest = samples.map { distance($0, anchor) }.min()!
        #expect(nearest <= 2 * Float(2).squareRoot() + 0.01)
        // The body lies up and to the left, along the diagonal.
        let c = centroid(samples)
        let (dx, dy) = (c.x - anchor.x, c.y - anchor.y)
        print("[overlay arrow] nearest coloured sample \(nearest) px from the tip; body centroid offset (\(dx), \(dy))")
        #expect((-24 ... -8).contains(dx) && (-24 ... -8).contains(dy))
        #expect(abs(dx - dy) < 1.5)
    }

    @Test("every kind draws its label text to the right of the anchor", arguments: AnnotationKind.allCases)
    func labelToTheRight(kind: AnnotationKind) throws {
        let scene = try OverlayScene()
        let anchor = (x: 200, y: 240)
        let world = scene.world(atPixel: Float(anchor.x) + 0.5, Float(anchor.y) + 0.5)
        let style = AnnotationStyle(frameHeight: scene.height)
        let textStart = anchor.x + Int(style.labelOffset(for: kind))

        func textPixels(_ label: String) throws -> (right: Int, left: Int) {
            let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
            overlay.setAnnotations([.make("l", kind, at: world, label: label, color: "#00C0FF")])
            let frame = try OverlayFrame(scene)
            #expect(overlay.draw(on: frame.buffer, pose: scene.pose) == OverlayDrawResult(drawn: 1))
            let planes = frame.planes()
            var right = 0, left = 0
            for y in (anchor.y - 12)...(anchor.y + 12) {
                for x in 0..<scene.width where planes.luma(x, y) > 200 {
                    if x > textStart { right += 1 } else if x < anchor.x - 12 { left += 1 }
                }
            }
            return (right, left)
        }
        let labelled = try textPixels("Valve 3")
        let bare = try textPixels("")
        print("[overlay label \(kind)] text pixels right of the mark: \(labelled.right) (without a label: \(bare.right))")
        #expect(labelled.right > 30)
        #expect(labelled.left == 0)
        #expect(bare.right == 0)
    }

    // MARK: Clipping

    @Test("a mark crossing a frame edge is drawn clipped, pixel for pixel as it looks inside",
          arguments: FrameEdge.allCases, AnnotationKind.allCases)
    func partlyOffScreen(edge: FrameEdge, kind: AnnotationKind) throws {
        let scene = try OverlayScene()
        let inside = (x: 320, y: 240)
        let near = edge.anchor(width: scene.width, height: scene.height)
        let label = "Check the left bearing housing"

        func render(_ anchor: (x: Int, y: Int)) throws -> (OverlayPlanes, OverlayDrawResult) {
            let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
            let world = scene.world(atPixel: Float(anchor.x) + 0.5, Float(anchor.y) + 0.5)
            overlay.setAnnotations([.make("e", kind, at: world, label: label, color: "#FF00FF")])
            let frame = try OverlayFrame(scene)
            let result = overlay.draw(on: frame.buffer, pose: scene.pose)
            return (frame.planes(), result)
        }
        let (reference, _) = try render(inside)
        let (clipped, result) = try render(near)
        #expect(result == OverlayDrawResult(drawn: 1))

        // Every luma pixel of the clipped frame equals the reference pixel at the same
        // offset from the anchor (outside the reference's frame: untouched grey).
        var mismatches = 0, changed = 0
        for y in 0..<scene.height {
            for x in 0..<scene.width {
                let rx = x - near.x + inside.x, ry = y - near.y + inside.y
                let expected: UInt8 = (0..<scene.width).contains(rx) && (0..<scene.height).contains(ry)
                    ? reference.luma(rx, ry) : OverlayPlanes.grey
                let actual = clipped.luma(x, y)
                if actual != expected { mismatches += 1 }
                if actual != OverlayPlanes.grey { changed += 1 }
            }
        }
        print("[overlay edge \(edge) \(kind)] pixels drawn: \(changed), mismatches: \(mismatches)")
        #expect(mismatches == 0)
        #expect(changed > 20)
    }

    @Test("blending each mark into its own region of the frame gives exactly one full-frame composition blend")
    func regionBlendMatchesFullFrame() throws {
        let scene = try OverlayScene()
        var rng = SplitMix64(seed: 7)
        func coordinate(_ size: Int) -> Float { Float(Int(rng.next() % UInt64(size + 40)) - 20) + 0.37 }
        let kinds = AnnotationKind.allCases
        let list = (0..<24).map { i in
            Annotation.make("r\(i)", kinds[i % 3],
                            at: scene.world(atPixel: coordinate(scene.width), coordinate(scene.height),
                                            depth: 1 + Float(i % 5)),
                            label: i % 2 == 0 ? "mark \(i)" : "", color: ["#FF00FF", "#00FF00", "#2040FF"][i % 3])
        }
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        overlay.setAnnotations(list)
        let mine = try OverlayFrame(scene)
        let result = overlay.draw(on: mine.buffer, pose: scene.pose)
        #expect(!result.failed && result.drawn > 10)

        // The same placements as one composition over the whole frame.
        let (_, placed, _) = overlay.layout(scene.camera)
        let reference = try OverlayFrame(scene)
        let composition = try #require(gst_video_overlay_composition_new(nil))
        for p in placed {
            let rectangle = try #require(gst_video_overlay_rectangle_new_raw(
                p.sprite.pixels, gint(p.x), gint(p.y), guint(p.sprite.width), guint(p.sprite.height),
                AnnotationSprite.flags))
            gst_video_overlay_composition_add_rectangle(composition, rectangle)
            gst_video_overlay_rectangle_unref(rectangle)
        }
        reference.withMappedFrame { frame in #expect(gst_video_overlay_composition_blend(composition, &frame) != 0) }
        gst_video_overlay_composition_unref(composition)

        let (a, b) = (mine.planes(), reference.planes())
        #expect(!b.isUntouched)
        #expect(a.y == b.y && a.u == b.u && a.v == b.v)
    }

    @Test("sprites converted once to AYUV blend like cairo's premultiplied ARGB blended directly",
          arguments: AnnotationKind.allCases)
    func ayuvMatchesPremultipliedARGB(kind: AnnotationKind) throws {
        let scene = try OverlayScene()
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        let colours = ["#FF00FF", "#00FF00", "#2040FF", "#FFFFFF", "#000000", "#C08040"]
        let list = colours.enumerated().map { i, colour in
            Annotation.make("k\(i)", kind, at: scene.world(atPixel: 60.5 + 90 * Float(i), 80.5 + 60 * Float(i)),
                            label: "Ag \(colour)", color: colour)
        }
        overlay.setAnnotations(list)
        let mine = try OverlayFrame(scene)
        #expect(overlay.draw(on: mine.buffer, pose: scene.pose) == OverlayDrawResult(drawn: colours.count))

        // Reference: each annotation's premultiplied cairo drawing blended as it is.
        let (_, placed, _) = overlay.layout(scene.camera)
        let reference = try OverlayFrame(scene)
        let composition = try #require(gst_video_overlay_composition_new(nil))
        for (p, annotation) in zip(placed, list) {
            let drawing = try #require(AnnotationSprite.draw(AnnotationSpriteKey(annotation, style: AnnotationStyle(frameHeight: scene.height))))
            let rectangle = try #require(gst_video_overlay_rectangle_new_raw(
                drawing.pixels, gint(p.x), gint(p.y), guint(drawing.width), guint(drawing.height),
                GST_VIDEO_OVERLAY_FORMAT_FLAG_PREMULTIPLIED_ALPHA))
            gst_video_overlay_composition_add_rectangle(composition, rectangle)
            gst_video_overlay_rectangle_unref(rectangle)
            gst_buffer_unref(drawing.pixels)
        }
        reference.withMappedFrame { frame in #expect(gst_video_overlay_composition_blend(composition, &frame) != 0) }
        gst_video_overlay_composition_unref(composition)

        let (a, b) = (mine.planes(), reference.planes())
        func maxDifference(_ x: [UInt8], _ y: [UInt8]) -> Int { zip(x, y).map { abs(Int($0) - Int($1)) }.max() ?? 0 }
        let worst = (maxDifference(a.y, b.y), maxDifference(a.u, b.u), maxDifference(a.v, b.v))
        print("[overlay AYUV vs ARGB \(kind)] largest difference Y \(worst.0) U \(worst.1) V \(worst.2)")
        #expect(worst == (0, 0, 0))
    }

    @Test("an anchor just off-screen draws at most the part that reaches in, and counts as off-screen",
          arguments: FrameEdge.allCases)
    func justOffScreen(edge: FrameEdge) throws {
        let scene = try OverlayScene()
        let style = AnnotationStyle(frameHeight: scene.height)
        let reach = Int(style.pinOuterRadius.rounded(.up)) + 1
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        let anchor = edge.anchor(width: scene.width, height: scene.height, inset: -4)
        let world = scene.world(atPixel: Float(anchor.x) + 0.5, Float(anchor.y) + 0.5)
        overlay.setAnnotations([.make("o", .pin, at: world, color: "#FF00FF")])
        let frame = try OverlayFrame(scene)
        #expect(overlay.draw(on: frame.buffer, pose: scene.pose) == OverlayDrawResult(offScreen: 1))
        let planes = frame.planes()
        var inReach = 0, beyond = 0
        for y in 0..<scene.height {
            for x in 0..<scene.width where planes.luma(x, y) != OverlayPlanes.grey {
                if abs(x - anchor.x) <= reach && abs(y - anchor.y) <= reach { inReach += 1 } else { beyond += 1 }
            }
        }
        #expect(beyond == 0)
        #expect(inReach > 0)   // the pin's rim reaches 4 px in
    }

    @Test("far off-screen, on the camera plane, behind the camera: nothing is drawn")
    func notDrawn() throws {
        let scene = try OverlayScene()
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        overlay.setAnnotations([
            .make("far", .pin, at: scene.world(atPixel: -900, 240), label: "far left"),
            .make("below", .arrow, at: scene.world(atPixel: 320, 5000), label: "far below"),
            .make("plane", .label, at: Vector3(3, 0, -0.0011), label: "beside the lens"),    // projects to ~x 2300
            .make("huge", .pin, at: Vector3(1e30, -1e30, -1e-2), label: "nearly infinite"),
            .make("behind", .pin, at: Vector3(0, 0, 2), label: "behind"),
            .make("on plane", .pin, at: Vector3(1, 0, 0), label: "on the plane"),
        ])
        let frame = try OverlayFrame(scene)
        #expect(overlay.draw(on: frame.buffer, pose: scene.pose) == OverlayDrawResult(behindCamera: 2, offScreen: 4))
        #expect(frame.planes().isUntouched)
    }

    // MARK: Lifecycle and counts

    @Test("removing the annotations stops drawing them")
    func removal() throws {
        let scene = try OverlayScene()
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        overlay.setAnnotations([.make("p", .pin, at: scene.world(atPixel: 320.5, 240.5), label: "here")])
        let first = try OverlayFrame(scene)
        #expect(overlay.draw(on: first.buffer, pose: scene.pose).drawn == 1)
        #expect(!first.planes().isUntouched)

        overlay.setAnnotations([])
        let second = try OverlayFrame(scene)
        #expect(overlay.draw(on: second.buffer, pose: scene.pose) == OverlayDrawResult())
        #expect(second.planes().isUntouched)
    }

    @Test("a frame whose pose is missing is left alone and says so")
    func missingPose() throws {
        let scene = try OverlayScene()
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        overlay.setAnnotations([.make("p", .pin, at: scene.world(atPixel: 320.5, 240.5))])
        var pose = scene.pose
        pose.flags = .missing
        let frame = try OverlayFrame(scene)
        #expect(overlay.draw(on: frame.buffer, pose: pose) == OverlayDrawResult(poseMissing: true))
        #expect(frame.planes().isUntouched)
        #expect(overlay.stats.framesWithoutPose == 1)
    }

    @Test("a buffer that is not writable is refused, not written")
    func notWritable() throws {
        let scene = try OverlayScene()
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        overlay.setAnnotations([.make("p", .pin, at: scene.world(atPixel: 320.5, 240.5))])
        let frame = try OverlayFrame(scene)
        _ = gst_buffer_ref(frame.buffer)   // a second reference makes the buffer shared
        defer { gst_buffer_unref(frame.buffer) }
        #expect(overlay.draw(on: frame.buffer, pose: scene.pose) == OverlayDrawResult(drawn: 1, failed: true))
        #expect(frame.planes().isUntouched)
        #expect(overlay.stats.framesFailed == 1)
    }

    @Test("a buffer smaller than the configured frame is refused")
    func tooSmall() throws {
        let scene = try OverlayScene()
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        overlay.setAnnotations([.make("p", .pin, at: scene.world(atPixel: 320.5, 240.5))])
        let buffer = try #require(gst_buffer_new_allocate(nil, 1000, nil))
        defer { gst_buffer_unref(buffer) }
        #expect(overlay.draw(on: buffer, pose: scene.pose) == OverlayDrawResult(drawn: 1, failed: true))
    }

    @Test("the nearer mark covers the farther one, whatever the list order", arguments: [false, true])
    func paintersOrder(reversed: Bool) throws {
        let scene = try OverlayScene()
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        let near = Annotation.make("near", .pin, at: scene.world(atPixel: 320.5, 240.5, depth: 1), color: "#FF0000")
        let far = Annotation.make("far", .pin, at: scene.world(atPixel: 320.5, 240.5, depth: 5), color: "#0000FF")
        overlay.setAnnotations(reversed ? [far, near] : [near, far])
        let frame = try OverlayFrame(scene)
        #expect(overlay.draw(on: frame.buffer, pose: scene.pose) == OverlayDrawResult(drawn: 2))
        let (u, v) = frame.planes().chroma(160, 120)   // the block holding the anchor pixel
        #expect(v > 200 && u < 128, "red on top expected, got U \(u) V \(v)")
    }

    @Test("a malformed colour is drawn in the fallback colour instead of failing the frame")
    func badColour() throws {
        let scene = try OverlayScene()
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        overlay.setAnnotations([.make("p", .pin, at: scene.world(atPixel: 320.5, 240.5), color: "magenta")])
        let frame = try OverlayFrame(scene)
        #expect(overlay.draw(on: frame.buffer, pose: scene.pose) == OverlayDrawResult(drawn: 1))
        let (u, v) = frame.planes().chroma(160, 120)
        #expect(v > 160 && u < 100, "orange expected, got U \(u) V \(v)")
    }

    @Test("64 annotations of every kind, anywhere: all counted, none crashes")
    func many() throws {
        let scene = try OverlayScene()
        var rng = SplitMix64(seed: 64)
        func unit() -> Float { Float(rng.next() >> 40) / Float(1 << 24) }
        let kinds = AnnotationKind.allCases
        let list = (0..<64).map { i in
            Annotation.make("m\(i)", kinds[i % kinds.count],
                            at: Vector3((unit() - 0.5) * 8, (unit() - 0.5) * 6, (unit() - 0.8) * 10),
                            label: String(repeating: "label \(i) ", count: i % 12),
                            color: i % 9 == 0 ? "#bad" : "#\(String(rng.next() & 0xFFFFFF, radix: 16, uppercase: true).leftPadded(6))")
        }
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        overlay.setAnnotations(list)
        let frame = try OverlayFrame(scene)
        let result = overlay.draw(on: frame.buffer, pose: scene.pose)
        print("[overlay 64] \(result)")
        #expect(result.drawn + result.behindCamera + result.offScreen == 64)
        #expect(result.drawn > 0 && result.behindCamera > 0 && result.offScreen > 0)
        #expect(!result.failed)
        #expect(overlay.stats.spritesBuilt == 64)
        #expect(overlay.stats.spriteFailures == 0)

        // Moving them (same looks) reuses every sprite.
        overlay.setAnnotations(list.map { var a = $0; a.position.x += 0.1; return a })
        #expect(overlay.stats.spritesBuilt == 64)
    }

    @Test("annotations replaced from another thread while frames are drawn")
    func concurrentUpdates() async throws {
        let scene = try OverlayScene()
        let overlay = AnnotationOverlay(width: scene.width, height: scene.height)
        let lists = (0..<4).map { n in
            (0..<(8 * n)).map { i in
                Annotation.make("c\(i)", AnnotationKind.allCases[i % 3],
                                at: scene.world(atPixel: Float(40 + 70 * (i % 8)) + 0.5, Float(60 + 50 * (i / 8)) + 0.5),
                                label: "item \(i) v\(n)")
            }
        }
        let writer = Task.detached {
            for round in 0..<40 { overlay.setAnnotations(lists[round % lists.count]) }
        }
        for _ in 0..<40 {
            let frame = try OverlayFrame(scene)
            let result = overlay.draw(on: frame.buffer, pose: scene.pose)
            #expect(!result.failed)
            #expect(result.behindCamera == 0 && result.offScreen == 0)
            #expect([0, 8, 16, 24].contains(result.drawn))
        }
        await writer.value
    }

    // MARK: Style

    @Test("colours: exactly # and six hex digits")
    func colourParsing() {
        #expect(AnnotationColor(hex: "#FF00ff") == AnnotationColor(red: 1, green: 0, blue: 1))
        #expect(AnnotationColor(hex: "#000000") == AnnotationColor(red: 0, green: 0, blue: 0))
        for bad in ["", "#", "#FFF", "FF00FF", "#FF00FF0", "#GG0000", "#+FFFFF", "#-12345", "#００００００", " #FF00FF"] {
            #expect(AnnotationColor(hex: bad) == nil, "\(bad)")
        }
        #expect(AnnotationColor.parse("nope") == .fallback)
    }

    @Test("label text: control characters blanked, at most 64 characters shown")
    func labelText() {
        #expect(AnnotationStyle.displayText("a\nb\u{0}c") == "a b c")
        let long = String(repeating: "x", count: 200)
        let shown = AnnotationStyle.displayText(long)
        #expect(shown.count == 64)
        #expect(shown.hasSuffix("…"))
        #expect(AnnotationStyle.displayText(String(repeating: "é", count: 64)).count == 64)
    }
}
