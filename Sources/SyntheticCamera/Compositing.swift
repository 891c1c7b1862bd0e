import Imaging
// Pass 3 of a frame: defocus, noise and output. Each pixel's circle of confusion gives a
// fractional blur level; the output is the tent-weighted blend of the two pyramid levels
// around it; noise comes from the tile at this frame's offsets; values are clamped to
// the legal BT.601 ranges and written out.

extension SyntheticRenderer {
    func composite(lens: LensState, frameIndex: UInt64, into planes: I420Planes) {
        let offsets = NoiseTile.offsets(frameIndex: frameIndex)
        let invFocus = 1 / lens.focusDistance
        // Circle of confusion in luma pixels per dioptre; chroma pixels are twice as big.
        let cocPerDioptre = lens.aperture * Float(width) / 640
        let sigma = lens.noise * lens.gain
        let lumaNoise = sigma, chromaNoise = 0.5 * sigma

        for y in 0..<height {
            let (low, high) = fillLevels(inverseDepth.row(y), count: width, invFocus: invFocus,
                                         cocPerDioptre: cocPerDioptre, top: luma.topLevel)
            blendLevels(luma, y, low, high, count: width, into: accumulator)
            writeRow(accumulator, count: width, out: planes.y + y * planes.yStride,
                     noise: noise.row(y &+ offsets[0].y) + offsets[0].x, noiseScale: lumaNoise, max: 235)
        }
        let cw = width / 2
        for y in 0..<height / 2 {
            let (low, high) = fillLevels(inverseDepthHalf.row(y), count: cw, invFocus: invFocus,
                                         cocPerDioptre: cocPerDioptre * 0.5, top: cb.topLevel)
            blendLevels(cb, y, low, high, count: cw, into: accumulator)
            writeRow(accumulator, count: cw, out: planes.u + y * planes.uStride,
                     noise: noise.row(y &+ offsets[1].y) + offsets[1].x, noiseScale: chromaNoise, max: 240)
            blendLevels(cr, y, low, high, count: cw, into: accumulator)
            writeRow(accumulator, count: cw, out: planes.v + y * planes.vStride,
                     noise: noise.row(y &+ offsets[2].y) + offsets[2].x, noiseScale: chromaNoise, max: 240)
        }
    }

    /// Blur level of each pixel of a row into `levelRow`: the circle-of-confusion radius
    /// r over `BlurPyramid.levelOneRadius`, linear below 1 (a blend of the sharp image and
    /// level 1), then 1 + log2 with the logarithm linear within each octave (read off the
    /// float's exponent and mantissa), so each level is reached exactly at its radius and
    /// blends linearly between. Returns the lowest and highest level the row needs.
    private func fillLevels(_ inv: UnsafeMutablePointer<Float>, count: Int, invFocus: Float,
                            cocPerDioptre: Float, top: Int) -> (Int, Int) {
        let out = levelRow
        let scale = cocPerDioptre / BlurPyramid.levelOneRadius
        let topF = Float(top)
        for x in 0..<count {
            let v = abs(inv[x] - invFocus) * scale
            let bits = v.bitPattern
            let exponent = Float(Int32(bitPattern: bits >> 23) &- 127)
            let mantissa = Float(bitPattern: (bits & 0x007F_FFFF) | 0x3F80_0000) - 1
            let level = 1 + exponent + mantissa
            let capped = level < topF ? level : topF
            out[x] = v <= 1 ? v : capped
        }
        // Levels are non-negative, so their bit patterns order like the numbers
        // (an integer reduction, which vectorises).
        var low = UInt32.max, high: UInt32 = 0
        for x in 0..<count {
            let b = out[x].bitPattern
            low = b < low ? b : low
            high = b > high ? b : high
        }
        let lowLevel = min(Int(Float(bitPattern: low)), top - 1)
        let highLevel = min(Int(Float(bitPattern: high).rounded(.up)), top)
        return (lowLevel, max(highLevel, lowLevel))
    }

    /// Σ over levels k of max(0, 1 − |level − k|) · (pyramid level k at this row): the
    /// linear blend of the two levels around each pixel's level.
    private func blendLevels(_ pyramid: BlurPyramid, _ y: Int, _ low: Int, _ high: Int, count: Int,
                             into out: UnsafeMutablePointer<Float>) {
        let levels = levelRow
        for k in low...high {
            let src = pyramid.row(y, level: k)
            let kf = Float(k)
            if k == low {
                for x in 0..<count {
                    let w = 1 - abs(levels[x] - kf)
                    out[x] = (w > 0 ? w : 0) * src[x]
                }
            } else {
                for x in 0..<count {
                    let w = 1 - abs(levels[x] - kf)
                    out[x] += (w > 0 ? w : 0) * src[x]
                }
            }
        }
    }

    /// Adds noise, clamps to [16, hi], rounds and stores one output row (rounding by
    /// the 2^23 trick: the low byte of v + 2^23 is v rounded, for 0 ≤ v < 2^22).
    private func writeRow(_ values: UnsafeMutablePointer<Float>, count: Int, out: UnsafeMutablePointer<UInt8>,
                          noise: UnsafeMutablePointer<Float>, noiseScale: Float, max hi: Float) {
        for x in 0..<count {
            var v = values[x] + noise[x] * noiseScale
            v = v < 16 ? 16 : v
            v = v > hi ? hi : v
            out[x] = UInt8(truncatingIfNeeded: (v + 8_388_608).bitPattern)
        }
    }
}
