import Imaging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What software metering reads off one region of one frame.
public struct RegionMeasurement: Sendable, Hashable {
    /// Mean (weighted) of dx² + dy² over the region, dx and dy the differences of luma
    /// with the right and lower neighbour: gradient energy, independent of region size.
    public var gradientEnergy: Double
    /// Mean (weighted) luma, 16–235.
    public var brightness: Double
    /// Mean (weighted) Cb − 128 and Cr − 128.
    public var meanU: Double
    public var meanV: Double
    /// Luma samples read.
    public var sampleCount: Int

    public init(gradientEnergy: Double, brightness: Double, meanU: Double, meanV: Double, sampleCount: Int) {
        self.gradientEnergy = gradientEnergy; self.brightness = brightness
        self.meanU = meanU; self.meanV = meanV; self.sampleCount = sampleCount
    }

    /// The autofocus measure: gradient energy over the squared signal above black,
    /// `gradientEnergy / (brightness − 16)²`. Focus changes it; exposure and gain (which
    /// scale the signal) and white balance do not, so focus can be searched while the
    /// other routines move. Dimensionless; larger is sharper.
    public var sharpness: Double {
        let signal = max(brightness - 16, 4)
        return gradientEnergy / (signal * signal)
    }

    /// Grey-world colour cast along the axis white balance moves: ln(B / R) of the
    /// region's mean colour (BT.601). Positive: too blue (the camera assumes warmer light
    /// than there is: too few kelvin); negative: too amber; 0: neutral.
    public var colorCast: Double {
        let c = 1.164_383 * (brightness - 16)
        let red = max(c + 1.596_027 * meanV, 1), blue = max(c + 2.017_232 * meanU, 1)
        return log(blue / red)
    }
}

/// Software metering on raw I420 frames: sharpness, brightness and grey-world colour of
/// a `MeteringArea`. One pass over the region's luma (and a quarter of that for chroma);
/// `uniform` reads the frame on a grid of about 320 columns.
public enum RegionMeter {
    /// Measures `area` in `frame`.
    public static func measure(_ frame: FrameView, area: MeteringArea) -> RegionMeasurement {
        let rect = area.pixelRect(width: frame.width, height: frame.height)
        let step = area.mode == .uniform ? max(1, frame.width / 320) : 1
        let weighted = area.mode == .weighted
        let luma = lumaStatistics(frame, rect, step: step, weighted: weighted)
        let chroma = chromaMeans(frame, rect, step: max(1, step / 2), weighted: weighted)
        return RegionMeasurement(gradientEnergy: luma.energy, brightness: luma.mean, meanU: chroma.u - 128,
                                 meanV: chroma.v - 128, sampleCount: luma.count)
    }

    /// Integer Gaussian weights (1024 at the centre) of `count` samples `step` apart
    /// starting at `start`, σ = extent/4 about the middle of `start ..< start + extent`.
    /// Integers keep weighted means exact (a flat region measures its exact value).
    static func gaussianWeights(count: Int, start: Int, step: Int, extent: Int) -> [Int32] {
        let centre = Float(start) + Float(extent - 1) / 2, sigma = max(Float(extent) / 4, 0.5)
        return (0..<count).map { i in
            let d = (Float(start + i * step) - centre) / sigma
            return Int32((1024 * expf(-0.5 * d * d)).rounded())
        }
    }

    /// Mean gradient energy and mean luma over the samples of `rect` that have a right and
    /// a lower neighbour in it.
    private static func lumaStatistics(_ f: FrameView, _ rect: PixelRect, step: Int, weighted: Bool)
        -> (energy: Double, mean: Double, count: Int) {
        let columns = max(0, (rect.width - 2) / step + 1), rows = max(0, (rect.height - 2) / step + 1)
        guard columns > 0, rows > 0 else {
            let value = Double(f.y[rect.y * f.yStride + rect.x])
            return (0, value, 1)
        }
        let stride = f.yStride
        var energy = 0.0, sum = 0, totalWeight = 0
        if weighted {
            let wx = gaussianWeights(count: columns, start: rect.x, step: step, extent: rect.width)
            let wy = gaussianWeights(count: rows, start: rect.y, step: step, extent: rect.height)
            let wxf = wx.map(Float.init)
            let rowWeight = wx.reduce(0) { $0 + Int($1) }
            wxf.withUnsafeBufferPointer { wf in
                wx.withUnsafeBufferPointer { w in
                    for j in 0..<rows {
                        let r0 = f.y + (rect.y + j * step) * stride + rect.x
                        let r1 = r0 + stride
                        // Weighted luma sums stay below 2^31: 1024 · 235 · 8192 columns.
                        var e: Float = 0, s: Int32 = 0
                        for i in 0..<columns {
                            let c = Int32(r0[i &* step]), dx = Int32(r0[i &* step &+ 1]) &- c, dy = Int32(r1[i &* step]) &- c
                            e += wf[i] * Float(dx &* dx &+ dy &* dy)
                            s &+= w[i] &* c
                        }
                        energy += Double(wy[j]) * Double(e)
                        sum += Int(wy[j]) * Int(s)
                        totalWeight += Int(wy[j]) * rowWeight
                    }
                }
            }
        } else {
            for j in 0..<rows {
                let r0 = f.y + (rect.y + j * step) * stride + rect.x
                let r1 = r0 + stride
                var e: Int32 = 0, s: Int32 = 0
                if step == 1 {
                    for i in 0..<columns {
                        let c = Int32(r0[i]), dx = Int32(r0[i &+ 1]) &- c, dy = Int32(r1[i]) &- c
                        e &+= dx &* dx &+ dy &* dy
                        s &+= c
                    }
                } else {
                    var x = 0
                    for _ in 0..<columns {
                        let c = Int32(r0[x]), dx = Int32(r0[x &+ 1]) &- c, dy = Int32(r1[x]) &- c
                        e &+= dx &* dx &+ dy &* dy
                        s &+= c
                        x &+= step
                    }
                }
                energy += Double(e); sum += Int(s)
            }
            totalWeight = columns * rows
        }
        return (energy / Double(totalWeight), Double(sum) / Double(totalWeight), columns * rows)
    }

    /// Mean Cb and Cr over the chroma samples under `rect` (luma coordinates).
    private static func chromaMeans(_ f: FrameView, _ rect: PixelRect, step: Int, weighted: Bool) -> (u: Double, v: Double) {
        let cw = (f.width + 1) / 2, ch = (f.height + 1) / 2
        let x0 = min(rect.x / 2, cw - 1), y0 = min(rect.y / 2, ch - 1)
        let x1 = max(min((rect.maxX + 1) / 2, cw), x0 + 1), y1 = max(min((rect.maxY + 1) / 2, ch), y0 + 1)
        let columns = (x1 - x0 - 1) / step + 1, rows = (y1 - y0 - 1) / step + 1
        let wx = weighted ? gaussianWeights(count: columns, start: x0, step: step, extent: x1 - x0)
                          : [Int32](repeating: 1, count: columns)
        let wy = weighted ? gaussianWeights(count: rows, start: y0, step: step, extent: y1 - y0)
                          : [Int32](repeating: 1, count: rows)
        var su = 0, sv = 0
        wx.withUnsafeBufferPointer { w in
            for j in 0..<rows {
                let ru = f.u + (y0 + j * step) * f.uStride + x0, rv = f.v + (y0 + j * step) * f.vStride + x0
                var u: Int32 = 0, v: Int32 = 0
                for i in 0..<columns {
                    u &+= w[i] &* Int32(ru[i &* step])
                    v &+= w[i] &* Int32(rv[i &* step])
                }
                su += Int(wy[j]) * Int(u); sv += Int(wy[j]) * Int(v)
            }
        }
        let total = Double(wx.reduce(0) { $0 + Int($1) } * wy.reduce(0) { $0 + Int($1) })
        return (Double(su) / total, Double(sv) / total)
    }
}
