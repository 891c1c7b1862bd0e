import Imaging
import Testing
import VideoEffects

/// The blurred background is the background's own blur: a bright person on a dark
/// background leaves no glow around the silhouette, the person's pixels are untouched,
/// and the background's own light still blurs.
@Suite struct BlurHaloTests {
    /// A 320×240 frame at luma 16 (black), a 96×96 square at luma 200 from (112, 72), and a
    /// second light patch (luma 120) far from it in the background; the alpha marks the
    /// square's blocks as person.
    static func scene() throws -> (frame: I420Image, alpha: BlockAlpha) {
        let w = 320, h = 240
        var frame = try I420Image(width: w, height: h)
        for y in 0..<h {
            for x in 0..<w {
                let person = (112..<208).contains(x) && (72..<168).contains(y)
                let patch = (16..<48).contains(x) && (16..<48).contains(y)
                frame.bytes[y * w + x] = person ? 200 : patch ? 120 : 16
            }
        }
        for i in (w * h)..<frame.bytes.count { frame.bytes[i] = 128 }
        var values = [UInt8](repeating: 0, count: (w / 2) * (h / 2))
        for j in 36..<84 { for i in 56..<104 { values[j * (w / 2) + i] = 255 } }
        return (frame, BlockAlpha(width: w / 2, height: h / 2, values: values))
    }

    @Test("around a bright person on black, the blurred background rises at most 4 luma levels within 10 px; the person is untouched; a light patch of the background still blurs")
    func noHalo() throws {
        let (original, alpha) = try Self.scene()
        var frame = original
        let compositor = BackgroundCompositor()
        frame.withPlanes { compositor.apply(.blur(radius: 16), alpha: alpha, to: $0) }
        let w = frame.width
        var ring: [Int] = []
        for y in 62..<178 {
            for x in 102..<218 where !((112..<208).contains(x) && (72..<168).contains(y)) {
                ring.append(Int(frame.bytes[y * w + x]) - 16)
            }
        }
        let rise = Double(ring.reduce(0, +)) / Double(ring.count)
        print("blur halo: mean luma rise within 10 px of the person \(String(format: "%.2f", rise)) levels (max \(ring.max() ?? 0))")
        #expect(rise <= 4, "a glow around the person: \(rise) levels")
        let person = (72..<168).allSatisfy { y in (112..<208).allSatisfy { x in frame.bytes[y * w + x] == 200 } }
        #expect(person, "the person's pixels changed")
        // The patch's light spreads into the background around it (it is background).
        #expect(frame.bytes[32 * w + 56] > 20 && frame.bytes[32 * w + 32] < 120, "the background did not blur")
    }
}
