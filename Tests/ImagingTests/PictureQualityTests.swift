import Imaging
import Testing

/// PSNR and SSIM on luma planes (`PictureQuality`), on cases with a known answer.
@Suite("picture quality: PSNR and SSIM")
struct PictureQualityTests {
    /// A textured 64×48 plane: a gradient with a checkerboard, deterministic.
    static func plane(width: Int = 64, height: Int = 48) -> [UInt8] {
        (0..<(width * height)).map { i in
            let x = i % width, y = i / width
            return UInt8(40 + (x * 2 + y) % 120 + ((x / 4 + y / 4) % 2) * 60)
        }
    }

    @Test("equal planes: the identical figure and SSIM 1")
    func identical() {
        let p = Self.plane()
        #expect(PictureQuality.psnr(p, p) == 100)
        #expect(abs(PictureQuality.ssim(p, p, width: 64, height: 48) - 1) < 1e-12)
    }

    @Test("a uniform offset of 10: MSE 100, PSNR 10·log10(255²/100); SSIM from the means alone")
    func offset() {
        let a = [UInt8](repeating: 100, count: 64 * 48), b = [UInt8](repeating: 110, count: 64 * 48)
        #expect(abs(PictureQuality.psnr(a, b) - 28.1308) < 1e-3)
        let c1 = 0.01 * 255 * 0.01 * 255
        let expected = (2 * 100 * 110 + c1) / (100 * 100 + 110 * 110 + c1)
        #expect(abs(PictureQuality.ssim(a, b, width: 64, height: 48) - expected) < 1e-9)
    }

    @Test("noise and blur lower both figures, more noise lowers them more")
    func degradations() {
        let p = Self.plane()
        var seed: UInt32 = 12345
        func noisy(_ amplitude: Int) -> [UInt8] {
            p.map { v in
                seed = seed &* 1_103_515_245 &+ 12345
                let n = Int(seed >> 16) % (2 * amplitude + 1) - amplitude
                return UInt8(clamping: Int(v) + n)
            }
        }
        let light = noisy(4), heavy = noisy(30)
        let psnrLight = PictureQuality.psnr(p, light), psnrHeavy = PictureQuality.psnr(p, heavy)
        let ssimLight = PictureQuality.ssim(p, light, width: 64, height: 48)
        let ssimHeavy = PictureQuality.ssim(p, heavy, width: 64, height: 48)
        #expect(psnrLight > 38 && psnrLight < 50, "\(psnrLight)")
        #expect(psnrHeavy < psnrLight - 12, "\(psnrHeavy)")
        #expect(ssimLight > 0.95 && ssimLight < 1, "\(ssimLight)")
        #expect(ssimHeavy < ssimLight - 0.1, "\(ssimHeavy)")
        // A 3-tap horizontal blur: the checkerboard's edges soften.
        let blurred = (0..<p.count).map { i -> UInt8 in
            let x = i % 64
            guard x > 0, x < 63 else { return p[i] }
            return UInt8((Int(p[i - 1]) + Int(p[i]) + Int(p[i + 1])) / 3)
        }
        #expect(PictureQuality.ssim(p, blurred, width: 64, height: 48) < 0.99)
        #expect(PictureQuality.psnr(p, blurred) < 40)
    }
}
