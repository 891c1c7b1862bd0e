import Foundation
import Testing
import TestSupport
import Imaging
import PoseCastKit
import VideoEffects
@testable import Publisher

@Suite(.tags(.rendering)) struct CropAndFramingTests {
    /// A world point projected by the capture's pose, then carried through the crop and
    /// scale, lands where the cropped frame's own intrinsics project it.
    @Test("a crop's intrinsics project the world where its pixels show it")
    func cropIntrinsics() {
        let capture = CameraIntrinsics(horizontalFOVDegrees: 70, aspect: 16.0 / 9.0)
        let camera = CameraModel(position: Vector3(0.3, 1.5, 2.5), orientation: Quaternion(axis: Vector3(0, 1, 0), angleRadians: 0.2),
                                 intrinsics: capture)
        let crop = CropWindow(x: 301.7, y: 97.25, width: 480, height: 360)
        let framed = CameraModel(position: camera.position, orientation: camera.orientation,
                                 intrinsics: crop.intrinsics(of: capture, captureWidth: 1280, captureHeight: 720))
        var rng = SplitMix64(seed: 7)
        for _ in 0..<200 {
            let world = Vector3(Float(rng.unit() * 4 - 2), Float(rng.unit() * 2), Float(rng.unit() * 4 - 2))
            guard let a = camera.project(world), let b = framed.project(world) else { continue }
            let mapped = crop.outputPoint(a.point, captureWidth: 1280, captureHeight: 720)
            #expect(abs(mapped.x - b.point.x) * 640 < 1e-3 && abs(mapped.y - b.point.y) * 480 < 1e-3)
        }
    }

    /// The resampler puts a capture pixel where the crop says: a bright dot at a known
    /// capture position is found at `outputPoint` of it.
    @Test("the resampler maps pixels as the crop's geometry says")
    func resamplerGeometry() throws {
        var capture = try I420Image(width: 1280, height: 720)
        for i in 0..<(1280 * 720) { capture.bytes[i] = 16 }
        for y in 400..<404 { for x in 700..<704 { capture.bytes[y * 1280 + x] = 235 } }   // centre (702, 402)
        let crop = CropWindow(x: 520.5, y: 250, width: 480, height: 360)
        var out = try I420Image(width: 640, height: 480)
        capture.withFrameView { view in out.withPlanes { I420Resampler.resample(view, crop: crop, into: $0) } }
        var sx = 0.0, sy = 0.0, sw = 0.0
        for y in 0..<480 { for x in 0..<640 {
            let w = Double(out.bytes[y * 640 + x]) - 16
            if w > 0 { sx += (Double(x) + 0.5) * w; sy += (Double(y) + 0.5) * w; sw += w }
        } }
        let expected = crop.outputPoint(NormalizedPoint(x: 702 / 1280, y: 402 / 720), captureWidth: 1280, captureHeight: 720)
        #expect(abs(sx / sw - Double(expected.x) * 640) < 0.05 && abs(sy / sw - Double(expected.y) * 480) < 0.05)
    }

    @Test("framing follows a subject smoothly, within the dead zone, bounded per frame, inside the capture")
    func controller() {
        var c = FramingController(configuration: FramingConfiguration(captureWidth: 1280, captureHeight: 720, outputWidth: 640, outputHeight: 480))
        #expect(c.crop == CropWindow(x: 160, y: 0, width: 960, height: 720))
        // A face of 80 px (a zoom of 0.22·720/80 ≈ 2) sweeping left to right and back.
        var last = c.crop, maxStep = 0.0
        for k in 0..<300 {
            let t = Double(k) / 30, x = 0.15 + 0.7 * abs(sin(t * 0.5))
            let box = NormalizedRect(x: Float(x) - 0.03, y: 0.3, width: 0.0625, height: Float(80.0 / 720))
            let crop = c.step(toward: .subject(box), seconds: 1.0 / 30)
            #expect(crop.x >= -1e-9 && crop.y >= -1e-9 && crop.x + crop.width <= 1280 + 1e-9 && crop.y + crop.height <= 720 + 1e-9)
            let dx: Double = crop.centerX - last.centerX, dy: Double = crop.centerY - last.centerY
            let step: Double = (dx * dx + dy * dy).squareRoot() * 640 / crop.width
            maxStep = max(maxStep, step)
            last = crop
        }
        #expect(maxStep <= 12.0 + 1e-6, "the crop's centre moved \(maxStep) output px in one frame")
        #expect(c.currentZoom > 1.8 && c.currentZoom < 2.2, "zoom \(c.currentZoom)")
        // A subject that sways inside the dead zone leaves the crop still.
        var settled = c.crop
        for _ in 0..<90 { settled = c.step(toward: .subject(NormalizedRect(x: 0.5, y: 0.3, width: 0.0625, height: 0.111)), seconds: 1.0 / 30) }
        for k in 0..<30 {
            let sway = Float(k % 2 == 0 ? 0.01 : -0.01)
            let crop = c.step(toward: .subject(NormalizedRect(x: 0.5 + sway, y: 0.3, width: 0.0625, height: 0.111)), seconds: 1.0 / 30)
            #expect(abs(crop.centerX - settled.centerX) < 30, "a sway of 13 px moved the crop to \(crop)")
        }
        // Lost for longer than the hold: back to the widest view.
        for _ in 0..<200 { _ = c.step(toward: .subject(nil), seconds: 1.0 / 30) }
        #expect(abs(c.crop.width - 960) < 1 && abs(c.crop.centerX - 640) < 1)
    }

    /// The astronaut's face moving across a wide 1280×720 view (the photo, 560 px tall,
    /// slides 8 px per frame from the left edge to the right one and back; 240 px/s):
    /// face detection plus the framing controller must keep the face's centre (where
    /// the detector finds it in the still photo, so the ground truth is exact) in the
    /// central third of the 640×480 output in at least 95 % of frames.
    @Test("a subject moving across the wide view stays in the central third")
    func facesFramed() throws {
        try #require(EffectsHarness.unavailable == nil, "\(EffectsHarness.unavailable ?? "")")
        let faces = try FaceDetector(assets: EffectsHarness.assets)
        let room = StillImage.cover(try EffectsHarness.photo("coffee"), width: 1280, height: 720)
        let person = StillImage.cover(try EffectsHarness.photo("astronaut"), width: 560, height: 560)
        let face = try #require(person.withFrameView { try faces.detect($0) }.first).box
        let analyzer = SceneAnalyzer(fps: 15)
        var controller = FramingController(configuration: FramingConfiguration(captureWidth: 1280, captureHeight: 720,
                                                                               outputWidth: 640, outputHeight: 480))
        var inside = 0, total = 0
        let positions = Array(stride(from: 0, through: 720, by: 8)) + Array(stride(from: 712, through: 0, by: -8))
        for (k, x) in positions.enumerated() {
            let frame = EffectsHarness.paste(person, into: room, x: x, y: 80)
            let (subject, _) = frame.withFrameView {
                analyzer.analyse($0, captureNanos: UInt64(k) * 33_333_333, segmenter: nil, subject: .face, faces: faces)
            }
            let crop = controller.step(toward: .subject(subject), seconds: 1.0 / 30)
            let truth = NormalizedPoint(x: (Float(x) + (face.x + face.width / 2) * 560) / 1280, y: (80 + (face.y + face.height / 2) * 560) / 720)
            let p = crop.outputPoint(truth, captureWidth: 1280, captureHeight: 720)
            if k >= 15 {   // half a second to find the face and frame it
                total += 1
                if p.x > 1 / 3 && p.x < 2 / 3 && p.y > 1 / 3 && p.y < 2 / 3 { inside += 1 }
            }
        }
        #expect(Double(inside) / Double(total) >= 0.95, "the face was in the central third in \(inside) of \(total) frames")
    }

    /// Two faces side by side (each 10 % of the frame's height, 0.3 of its width apart, at
    /// slightly different heights), framed as a group: both stay well inside the crop and
    /// it zooms in on the pair; the largest face alone would have put the other at the
    /// crop's edge or outside it.
    @Test("a group of faces is framed whole: both inside the crop's central 70 %, zoomed in")
    func groupFramedBoxes() {
        var controller = FramingController(configuration: FramingConfiguration(captureWidth: 1280, captureHeight: 720,
                                                                               outputWidth: 640, outputHeight: 480))
        let a = NormalizedRect(x: 0.28, y: 0.40, width: 0.056, height: 0.10), b = NormalizedRect(x: 0.58, y: 0.35, width: 0.06, height: 0.107)
        let faces = [DetectedFace(box: a, score: 0.9, keypoints: []), DetectedFace(box: b, score: 0.8, keypoints: [])]
        let people = SceneAnalyzer.people(in: faces)
        #expect(people.count == 2)
        let union = SceneAnalyzer.union(a, b)
        var crop = controller.crop
        for _ in 0..<120 { crop = controller.step(toward: .subject(union, faceHeight: people.map(\.height).max()), seconds: 1.0 / 30) }
        for box in [a, b] {
            let p = crop.outputPoint(NormalizedPoint(x: box.x + box.width / 2, y: box.y + box.height / 2), captureWidth: 1280, captureHeight: 720)
            #expect(p.x > 0.15 && p.x < 0.85 && p.y > 0.15 && p.y < 0.85, "face \(box) at \(p) in the crop \(crop)")
        }
        #expect(crop.width < 900, "zoomed in on the pair: \(crop)")
        // A face far behind (a quarter of the largest's area or less) is not one of the group.
        let far = DetectedFace(box: NormalizedRect(x: 0.9, y: 0.1, width: 0.02, height: 0.035), score: 0.7, keypoints: [])
        #expect(SceneAnalyzer.people(in: faces + [far]).count == 2)
    }

    /// ultralytics' two men as the 1280×720 capture (one in profile, one in three-quarter
    /// view, faces 400 px apart, 180–190 px tall): face framing with the full-range detector
    /// finds both and keeps both heads inside the crop.
    @Test("face framing on a photograph of two men keeps both heads inside the crop")
    func groupFramed() throws {
        try #require(EffectsHarness.unavailable == nil, "\(EffectsHarness.unavailable ?? "")")
        let faces = try FaceDetector(assets: EffectsHarness.assets)
        let picture = StillImage.cover(try EffectsHarness.photo("zidane"), width: 1280, height: 720)
        let analyzer = SceneAnalyzer(fps: 15)
        var controller = FramingController(configuration: FramingConfiguration(captureWidth: 1280, captureHeight: 720,
                                                                               outputWidth: 640, outputHeight: 480))
        // The heads, hand-marked in the picture's pixels (as in scripts/people-regions.json).
        let heads = [NormalizedRect(x: 500 / 1280, y: 220 / 720, width: 140 / 1280, height: 180 / 720),
                     NormalizedRect(x: 910 / 1280, y: 90 / 720, width: 140 / 1280, height: 190 / 720)]
        var crop = controller.crop
        for k in 0..<90 {
            let (subject, _) = picture.withFrameView {
                analyzer.analyse($0, captureNanos: UInt64(k) * 33_333_333, segmenter: nil, subject: .face, faces: faces)
            }
            crop = controller.step(toward: .subject(subject, faceHeight: analyzer.subjectFaceHeight), seconds: 1.0 / 30)
        }
        for head in heads {
            let p = crop.outputPoint(NormalizedPoint(x: head.x + head.width / 2, y: head.y + head.height / 2), captureWidth: 1280, captureHeight: 720)
            #expect(p.x > 0.1 && p.x < 0.9 && p.y > 0.1 && p.y < 0.9, "head \(head) at \(p) in the crop \(crop)")
        }
    }
}

private extension SplitMix64 {
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
