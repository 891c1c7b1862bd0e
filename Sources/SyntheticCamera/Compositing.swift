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
        let topF = F4(repeating: Float(top))
        var low = F4(repeating: .infinity), high = F4(repeating: 0)
        var x = 0
        while x < count {
            let v = absolute(load4(inv + x) - invFocus) * scale
            let b = bits(v)
            // v ≥ 1 here is normal and below 2^128, so its exponent field is 127…254.
            let exponent = toFloat(b &>> 23) - 127
            let mantissa = float4(bits: (b & 0x007F_FFFF) | 0x3F80_0000) - 1
            var level = blend(min4(1 + exponent + mantissa, topF), v, lessMask(v, F4(repeating: 1)))
            store4(level, out + x)
            x &+= 4
            if x > count {  // the last step ran past the row: keep its extra lanes out of the range
                let outside = ~lessMask(F4(0, 1, 2, 3), F4(repeating: Float(count - (x - 4))))
                level = blend(level, low, outside)
                low = min4(low, level)
                level = blend(level, high, outside)
                high = max4(high, level)
            } else {
                low = min4(low, level); high = max4(high, level)
            }
        }
        let lowLevel = min(Int(low.min()), top - 1)
        let highLevel = min(Int(high.max().rounded(.up)), top)
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
            var x = 0
            if k == low {
                while x < count {
                    let w = max4(1 - absolute(load4(levels + x) - kf), F4())
                    store4(w * load4(src + x), out + x)
                    x &+= 4
                }
            } else {
                while x < count {
                    let w = max4(1 - absolute(load4(levels + x) - kf), F4())
                    store4(load4(out + x) + w * load4(src + x), out + x)
                    x &+= 4
                }
            }
        }
    }

    /// Adds noise, clamps to [16, hi], rounds and stores one output row.
    private func writeRow(_ values: UnsafeMutablePointer<Float>, count: Int, out: UnsafeMutablePointer<UInt8>,
                          noise: UnsafeMutablePointer<Float>, noiseScale: Float, max hi: Float) {
        let lo = F4(repeating: 16), top = F4(repeating: hi)
        var x = 0
        while x + 4 <= count {
            let v = clamp4(load4(values + x) + load4(noise + x) * noiseScale, lo, top)
            let n = roundToUInt(v) & 0xFF
            let packed = n[0] | n[1] << 8 | n[2] << 16 | n[3] << 24
            UnsafeMutableRawPointer(out + x).storeBytes(of: packed, as: UInt32.self)
            x &+= 4
        }
        while x < count {
            var v = values[x] + noise[x] * noiseScale
            v = v < 16 ? 16 : (v > hi ? hi : v)
            out[x] = UInt8(truncatingIfNeeded: Int32(v + 0.5))
            x &+= 1
        }
    }
}
