#if canImport(Glibc)
import Glibc
#endif

/// How close a decoded picture is to the one that was encoded, on luma (8-bit planes of
/// the same size, tightly packed): PSNR and SSIM, the two figures codec comparisons
/// quote. The benchmarks use them so that a faster encoder setting is never bought with
/// a blurrier picture (docs/BENCHMARKS.md).
public enum PictureQuality {
    /// Peak signal-to-noise ratio in dB over the whole plane; `identicalDB` for equal planes.
    public static func psnr(_ a: [UInt8], _ b: [UInt8], identicalDB: Double = 100) -> Double {
        precondition(a.count == b.count && !a.isEmpty, "planes of different sizes")
        var sum: UInt64 = 0
        a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in
                for i in 0..<pa.count {
                    let d = Int(pa[i]) - Int(pb[i])
                    sum += UInt64(d * d)
                }
            }
        }
        guard sum > 0 else { return identicalDB }
        let mse = Double(sum) / Double(a.count)
        return 10 * log10(255 * 255 / mse)
    }

    /// Structural similarity (Wang et al. 2004) as codec tools compute it (x264, libvpx):
    /// the mean over 8×8 windows on a 4-pixel grid of the windows' SSIM, with the usual
    /// constants for 8-bit samples (C1 = (0.01·255)², C2 = (0.03·255)²). 1 for equal planes.
    public static func ssim(_ a: [UInt8], _ b: [UInt8], width: Int, height: Int) -> Double {
        precondition(a.count == width * height && b.count == a.count && width >= 8 && height >= 8, "planes of different sizes")
        // Sums over each 4×4 block: a, b, a², b², a·b.
        let bw = width / 4, bh = height / 4
        var blocks = [(s1: Int, s2: Int, ss: Int, s12: Int)](repeating: (0, 0, 0, 0), count: bw * bh)
        a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in
                for by in 0..<bh {
                    for bx in 0..<bw {
                        var s1 = 0, s2 = 0, ss = 0, s12 = 0
                        for y in (by * 4)..<(by * 4 + 4) {
                            let row = y * width + bx * 4
                            for x in row..<(row + 4) {
                                let p = Int(pa[x]), q = Int(pb[x])
                                s1 += p; s2 += q; ss += p * p + q * q; s12 += p * q
                            }
                        }
                        blocks[by * bw + bx] = (s1, s2, ss, s12)
                    }
                }
            }
        }
        let c1 = 0.01 * 255 * 0.01 * 255, c2 = 0.03 * 255 * 0.03 * 255
        var total = 0.0, count = 0
        for by in 0..<(bh - 1) {
            for bx in 0..<(bw - 1) {
                var s1 = 0, s2 = 0, ss = 0, s12 = 0
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let blk = blocks[(by + dy) * bw + bx + dx]
                    s1 += blk.s1; s2 += blk.s2; ss += blk.ss; s12 += blk.s12
                }
                let n = 64.0
                let m1 = Double(s1) / n, m2 = Double(s2) / n
                let variances = Double(ss) / n - m1 * m1 - m2 * m2   // σ1² + σ2²
                let covariance = Double(s12) / n - m1 * m2
                total += (2 * m1 * m2 + c1) * (2 * covariance + c2) / ((m1 * m1 + m2 * m2 + c1) * (variances + c2))
                count += 1
            }
        }
        return total / Double(count)
    }
}
