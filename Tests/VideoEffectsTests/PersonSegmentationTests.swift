import Testing
import TestSupport
import Imaging
import PoseCastKit
import VideoEffects
@testable import Publisher

/// MediaPipe's selfie segmentation, run by LiteRT, on real photographs from
/// scikit-image's data folder (512×512: the astronaut Eileen Collins and the
/// "cameraman"; without a person: a coffee cup, a cat, coins, a retina, a logo, …).
///
/// Regions, measured on the 512×512 photos and stated in pixels:
/// - the face: the inner face only (eyes, cheeks, mouth; no hair, no outline), where any
///   person mask must be foreground: astronaut x 190–258, y 95–170; cameraman (profile)
///   x 195–240, y 120–185;
/// - the corners: 64×64 squares that show no part of the person (by inspection): the
///   astronaut's top two (flag; wall and shuttle model; her suit reaches the bottom-left
///   corner and her helmet the bottom-right, so those are not fair), the cameraman's
///   top two and bottom-right (sky and grass; his coat fills the bottom-left).
@Suite(.serialized, .tags(.rendering)) struct PersonSegmentationTests {
    static func rect(_ x0: Float, _ y0: Float, _ x1: Float, _ y1: Float) -> NormalizedRect {
        NormalizedRect(x: x0 / 512, y: y0 / 512, width: (x1 - x0) / 512, height: (y1 - y0) / 512)
    }
    static let people: [(name: String, face: NormalizedRect, corners: [NormalizedRect])] = [
        ("astronaut", rect(190, 95, 258, 170), [rect(0, 0, 64, 64), rect(448, 0, 512, 64)]),
        ("camera", rect(195, 120, 240, 185), [rect(0, 0, 64, 64), rect(448, 0, 512, 64), rect(448, 448, 512, 512)]),
    ]

    @Test("the face is foreground and the corners background, in both photographs of a person")
    func peopleInPhotos() throws {
        try #require(EffectsHarness.unavailable == nil, "\(EffectsHarness.unavailable ?? "")")
        let segmenter = try PersonSegmenter(assets: EffectsHarness.assets, landscape: false)
        let gate = try PersonGate(assets: EffectsHarness.assets)
        for person in Self.people {
            let photo = try EffectsHarness.photo(person.name)
            let (matte, shown) = try photo.withFrameView { view in let m = try segmenter.segment(view); return (m, try gate.showsPerson(m, in: view)) }
            let face = matte.coverage(in: person.face)
            #expect(face >= 0.95, "\(person.name): face region \(face * 100) % foreground")
            for corner in person.corners {
                let background = 1 - matte.coverage(in: corner)
                #expect(background >= 0.95, "\(person.name): corner \(corner) \(background * 100) % background")
            }
            #expect(shown, "\(person.name): the person gate must pass (faces \(gate.lastFaces))")
        }
    }

    /// The model alone marks what stands out in a photo with no person (measured: 90 % of
    /// the cat, 80 % of the coins); the person gate (a face inside the matte) is what
    /// keeps such a picture all background.
    @Test("photographs without a person are at most 5 % foreground after the person gate")
    func noPerson() throws {
        try #require(EffectsHarness.unavailable == nil, "\(EffectsHarness.unavailable ?? "")")
        let segmenter = try PersonSegmenter(assets: EffectsHarness.assets, landscape: false)
        let gate = try PersonGate(assets: EffectsHarness.assets)
        for name in ["coffee", "chelsea"] {
            let photo = try EffectsHarness.photo(name)
            let analyzer = SceneAnalyzer(fps: 15)
            analyzer.needsMatte = true
            _ = photo.withFrameView { analyzer.analyse($0, captureNanos: 0, segmenter: segmenter, subject: .none, faces: nil, personGate: gate) }
            let matte = try #require(analyzer.matte)
            #expect(matte.coverage() <= 0.05, "\(name): \(matte.coverage() * 100) % foreground after the gate")
            #expect(!analyzer.personPresent)
        }
    }

    /// The astronaut (640×640) moved across a 1280×720 frame (scikit-image's grass photo
    /// as the ground) by 10 px right per frame: exactly 2 cells of the
    /// landscape model's 256×144 grid. The effect's matte (`SceneAnalyzer`, here analysing
    /// every frame; smoothed in time and at its edges) of each frame, shifted back by the
    /// motion, must overlap the previous frame's with IoU ≥ 0.9 at 0.5. (Analysing every
    /// other frame, as the 15 per second default does at 30 fps, doubles the motion
    /// between masks; and in front of the coffee photo the model also takes in the cup
    /// now and then: docs/EFFECTS.md has both figures.)
    @Test("the mask stays on a moving person frame after frame")
    func movingPerson() throws {
        try #require(EffectsHarness.unavailable == nil, "\(EffectsHarness.unavailable ?? "")")
        let segmenter = try PersonSegmenter(assets: EffectsHarness.assets, landscape: true)
        let ground = StillImage.cover(try EffectsHarness.photo("grass"), width: 1280, height: 720)
        let person = StillImage.cover(try EffectsHarness.photo("astronaut"), width: 640, height: 640)
        let analyzer = SceneAnalyzer(fps: 30)
        analyzer.needsMatte = true
        var previous: Matte?
        var ious: [Double] = []
        for k in 0..<16 {
            let frame = EffectsHarness.paste(person, into: ground, x: 100 + 10 * k, y: 40)
            _ = frame.withFrameView { analyzer.analyse($0, captureNanos: UInt64(k) * 33_333_334, segmenter: segmenter, subject: .none, faces: nil) }
            let matte = try #require(analyzer.matte)
            if let previous { ious.append(Self.shiftedIoU(previous, matte, dx: 2, dy: 0)) }
            previous = matte
        }
        #expect(ious.count == 15)
        #expect(ious.min()! >= 0.9, "IoU between consecutive motion-compensated masks: \(ious.map { Int($0 * 100) })")
    }

    /// IoU of `a` moved by (dx, dy) cells and `b`, both at 0.5, over the cells both cover.
    static func shiftedIoU(_ a: Matte, _ b: Matte, dx: Int, dy: Int) -> Double {
        var inter = 0, union = 0
        for y in max(dy, 0)..<min(b.height, a.height + dy) {
            for x in max(dx, 0)..<min(b.width, a.width + dx) {
                let p = a.values[(y - dy) * a.width + (x - dx)] >= 0.5, q = b.values[y * b.width + x] >= 0.5
                if p && q { inter += 1 }
                if p || q { union += 1 }
            }
        }
        return union == 0 ? 1 : Double(inter) / Double(union)
    }

    @Test("a missing model names the file and the command that installs it")
    func missingModel() {
        let assets = EffectAssets(directory: "/nonexistent/effects")
        #expect {
            _ = try PersonSegmenter(assets: assets, landscape: false)
        } throws: { error in
            let text = "\(error)"
            return text.contains("/nonexistent/effects/libLiteRt.so") && text.contains("bash scripts/effects-setup")
        }
    }
}
