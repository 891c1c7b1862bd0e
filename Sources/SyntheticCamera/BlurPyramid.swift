/// A blur pyramid of one image plane, the basis of the simulated defocus. Level 0 is the
/// sharp plane; each next level is half the size (rounded up), filtered with the binomial
/// kernel [1 3 3 1]/8 each way before decimation. Sampled back at the base resolution
/// with bilinear interpolation, level k looks like the base blurred by a disc of radius
/// about `levelOneRadius · 2^(k−1)` pixels, so a per-pixel blend between two adjacent
/// levels gives any blur radius in between for a constant cost per pixel.
///
/// Reading is row by row: `row(_:level:)` interpolates a level vertically at one base
/// row, then upsamples it horizontally to the base width (both linear, so together they
/// are the bilinear sample). Not thread-safe.
final class BlurPyramid {
    /// Blur radius (base pixels) that level 1 stands for; level k stands for
    /// `levelOneRadius · 2^(k−1)`. Calibrated from the variance of the filter chain:
    /// binomial decimation plus bilinear reconstruction spreads a point with σ ≈ 1.22 px
    /// at level 1 and ≈ 1.28·2^(k−1) px beyond, and a uniform disc of radius R has
    /// σ = R/2 along each axis.
    static let levelOneRadius: Float = 2.5

    let levels: [FloatPlane]
    /// The highest level index.
    let topLevel: Int
    /// One level row interpolated vertically (the widest level above 0, plus padding).
    private let narrow: UnsafeMutablePointer<Float>
    /// One level row upsampled to the base width (plus room for a whole last block).
    private let wide: UnsafeMutablePointer<Float>
    /// Horizontal-pass scratch while building.
    private let scratch: FloatPlane
    /// `(j + 0.5) / 2^k` at index 2^k + j, for j < 2^k and k up to the top level: the
    /// weights of the right neighbour across one upsampled block.
    private let blockWeights: UnsafeMutablePointer<Float>

    init(width: Int, height: Int, levelCount: Int) {
        var planes = [FloatPlane(width: width, height: height)]
        while planes.count < levelCount {
            let last = planes[planes.count - 1]
            planes.append(FloatPlane(width: (last.width + 1) / 2, height: (last.height + 1) / 2))
        }
        levels = planes
        topLevel = planes.count - 1
        scratch = FloatPlane(width: (width + 1) / 2, height: height)
        narrow = .allocate(capacity: width + 8)
        narrow.initialize(repeating: 0, count: width + 8)
        let wideCount = width + 2 << topLevel + 8
        wide = .allocate(capacity: wideCount)
        wide.initialize(repeating: 0, count: wideCount)
        blockWeights = .allocate(capacity: 2 << topLevel)
        for k in 0...topLevel {
            let s = 1 << k
            for j in 0..<s { blockWeights[s + j] = (Float(j) + 0.5) / Float(s) }
        }
    }

    deinit { narrow.deallocate(); wide.deallocate(); blockWeights.deallocate() }

    var base: FloatPlane { levels[0] }

    /// Fills levels 1… from level 0.
    func build() {
        for k in 1..<levels.count { Self.downsample(levels[k - 1], into: levels[k], scratch: scratch) }
    }

    /// Level `k` bilinearly sampled at every pixel of base row `y` (valid until the next call).
    func row(_ y: Int, level k: Int) -> UnsafeMutablePointer<Float> {
        if k == 0 { return levels[0].row(y) }
        let plane = levels[k]
        let lw = plane.width, lh = plane.height, s = 1 << k
        // Vertical: level row coordinate of the base row's centre.
        var v = (Float(y) + 0.5) / Float(s) - 0.5
        if v < 0 { v = 0 }
        var j0 = Int(v)
        var f = v - Float(j0)
        if j0 >= lh - 1 { j0 = lh - 1; f = 0 }
        let a = plane.row(j0), b = plane.row(min(j0 + 1, lh - 1)), n = narrow
        for i in 0..<lw { n[i] = a[i] + (b[i] - a[i]) * f }
        n[lw] = n[lw - 1]
        // Horizontal: base column x sits at level column (x + 0.5)/s − 0.5, so columns
        // s/2 + i·s ..< s/2 + (i+1)·s blend level columns i and i + 1 with the fixed
        // weights (j + 0.5)/s; the first s/2 columns clamp to column 0.
        let out = wide, half = s >> 1
        for x in 0..<half { out[x] = n[0] }
        let weights = blockWeights + s
        if s > 2 {
            for i in 0..<lw {
                let left = n[i], step = n[i &+ 1] - left
                let o = out + (half &+ i &* s)
                for j in 0..<s { o[j] = left + step * weights[j] }
            }
        } else {
            for i in 0..<lw {
                let left = n[i], step = n[i &+ 1] - left
                let o = half &+ 2 &* i
                out[o] = left + step * 0.25
                out[o &+ 1] = left + step * 0.75
            }
        }
        return out
    }

    /// [1 3 3 1]/8 each way with edges clamped, keeping every second sample.
    static func downsample(_ src: FloatPlane, into dst: FloatPlane, scratch: FloatPlane) {
        let sw = src.width, sh = src.height, dw = dst.width, dh = dst.height
        let s = src.data, t = scratch.data, d = dst.data
        // Horizontal: src (sw × sh) → scratch (dw × sh).
        for y in 0..<sh {
            let r = s + y &* sw, o = t + y &* dw
            var i = 0
            while i < dw {
                let x = 2 &* i
                if x >= 1 && x &+ 2 < sw { break }
                o[i] = horizontalTap(r, x, sw); i &+= 1
            }
            // Interior: every tap in range.
            while i < dw && 2 &* i &+ 2 < sw {
                let x = 2 &* i
                o[i] = (r[x &- 1] + 3 * (r[x] + r[x &+ 1]) + r[x &+ 2]) * 0.125
                i &+= 1
            }
            while i < dw { o[i] = horizontalTap(r, 2 &* i, sw); i &+= 1 }
        }
        // Vertical: scratch (dw × sh) → dst (dw × dh).
        for j in 0..<dh {
            let y = 2 &* j
            let r0 = t + max(y &- 1, 0) &* dw, r1 = t + min(y, sh &- 1) &* dw
            let r2 = t + min(y &+ 1, sh &- 1) &* dw, r3 = t + min(y &+ 2, sh &- 1) &* dw
            let o = d + j &* dw
            for i in 0..<dw { o[i] = (r0[i] + 3 * (r1[i] + r2[i]) + r3[i]) * 0.125 }
        }
    }

    @inline(__always)
    private static func horizontalTap(_ r: UnsafeMutablePointer<Float>, _ x: Int, _ sw: Int) -> Float {
        let last = sw - 1
        return (r[max(x - 1, 0)] + 3 * (r[min(x, last)] + r[min(x + 1, last)]) + r[min(x + 2, last)]) * 0.125
    }
}
