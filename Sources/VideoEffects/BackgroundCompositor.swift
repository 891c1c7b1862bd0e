import Imaging

/// What replaces the background.
public enum BackgroundFill: Sendable {
    /// The frame's own background, blurred with about this radius (frame pixels).
    case blur(radius: Int)
    /// A picture of the frame's size (`StillImage` scales one to cover the frame).
    case image(I420Image)
}

/// Blends a frame's background, in place, with a blurred copy of itself or with a
/// picture, by a `BlockAlpha`. The blur is made at a quarter of the size each way (a box
/// average down, two box-blur passes, bilinear back up), which is what makes 1280×720
/// cheap: a blurred background has no detail to lose. It is the background's blur, not
/// the frame's: each quarter cell weighs 256 − its alpha (1 for the person, 256 for the
/// background) and the blurred values are divided by the blurred weights, so the
/// person's colours do not spread into the background around it (blurring the whole
/// frame lit a dark background 25–29 luma levels within 10 px of the silhouette). Deep
/// inside the person, where every weight is 1, it is the plain blur. Blocks of weight 255
/// are left untouched, bit for bit. Keeps its scratch planes between frames: one instance
/// per streaming thread, not shared.
public final class BackgroundCompositor {
    private var small: [[UInt32]] = [[], [], []]
    /// Each quarter cell's weight: 256 − its mean alpha.
    private var weight: [UInt32] = []
    private var scratch: [UInt32] = []
    private var line: [Int32] = []

    public init() {}

    /// The frame's size must be a multiple of 8 each way (every camera size is).
    public func apply(_ fill: BackgroundFill, alpha: BlockAlpha, to frame: I420Planes) {
        precondition(alpha.width == frame.width / 2 && alpha.height == frame.height / 2, "the alpha must match the frame")
        switch fill {
        case .blur(let radius): blur(frame, alpha: alpha, radius: radius)
        case .image(let image):
            guard image.width == frame.width, image.height == frame.height else { return }
            replace(frame, alpha: alpha, image: image)
        }
    }

    private func replace(_ frame: I420Planes, alpha: BlockAlpha, image: I420Image) {
        let w = frame.width, h = frame.height, cw = w / 2, ch = h / 2
        image.bytes.withUnsafeBufferPointer { src in
            alpha.values.withUnsafeBufferPointer { a in
                let iy = src.baseAddress!, iu = iy + w * h, iv = iu + cw * ch
                for j in 0..<ch {
                    for i in 0..<cw {
                        let k = Int32(a[j * cw + i])
                        if k == 255 { continue }
                        let b = 255 - k
                        @inline(__always) func mix(_ p: UnsafeMutablePointer<UInt8>, _ q: UInt8) {
                            p.pointee = UInt8(truncatingIfNeeded: (Int32(p.pointee) * k + Int32(q) * b + 127) / 255)
                        }
                        for dy in 0..<2 {
                            let row = frame.y + (2 * j + dy) * frame.yStride, irow = iy + (2 * j + dy) * w
                            mix(row + 2 * i, irow[2 * i]); mix(row + 2 * i + 1, irow[2 * i + 1])
                        }
                        mix(frame.u + j * frame.uStride + i, iu[j * cw + i])
                        mix(frame.v + j * frame.vStride + i, iv[j * cw + i])
                    }
                }
            }
        }
    }

    private func blur(_ frame: I420Planes, alpha: BlockAlpha, radius: Int) {
        let w = frame.width, h = frame.height, sw = w / 4, sh = h / 4
        let r = max(1, (radius + 2) / 4)
        // Quarter-size planes: a 4×4 luma box, a 2×2 chroma box (values ×16 for precision).
        for p in 0..<3 where small[p].count != sw * sh { small[p] = [UInt32](repeating: 0, count: sw * sh) }
        if scratch.count != sw * sh { scratch = [UInt32](repeating: 0, count: sw * sh) }
        if weight.count != sw * sh { weight = [UInt32](repeating: 0, count: sw * sh) }
        small[0].withUnsafeMutableBufferPointer { s in
            for j in 0..<sh {
                for i in 0..<sw {
                    var sum = 0
                    for dy in 0..<4 {
                        let row = frame.y + (4 * j + dy) * frame.yStride + 4 * i
                        sum += Int(row[0]) + Int(row[1]) + Int(row[2]) + Int(row[3])
                    }
                    s[j * sw + i] = UInt32(sum)
                }
            }
        }
        for (p, plane, stride) in [(1, frame.u, frame.uStride), (2, frame.v, frame.vStride)] {
            small[p].withUnsafeMutableBufferPointer { s in
                for j in 0..<sh {
                    let r0 = plane + 2 * j * stride, r1 = r0 + stride
                    for i in 0..<sw {
                        s[j * sw + i] = UInt32((Int(r0[2 * i]) + Int(r0[2 * i + 1]) + Int(r1[2 * i]) + Int(r1[2 * i + 1])) * 4)
                    }
                }
            }
        }
        // The weights (a quarter cell is 2×2 alpha blocks), the values weighted, both
        // blurred alike, then divided: what the background around a cell looks like.
        // With no person anywhere every weight is the same: the plain blur.
        let cw = w / 2
        let person = alpha.values.contains { $0 != 0 }
        if person {
            weight.withUnsafeMutableBufferPointer { wq in
                alpha.values.withUnsafeBufferPointer { a in
                    for j in 0..<sh {
                        let a0 = 2 * j * cw, a1 = a0 + cw
                        for i in 0..<sw {
                            let sum = Int(a[a0 + 2 * i]) + Int(a[a0 + 2 * i + 1]) + Int(a[a1 + 2 * i]) + Int(a[a1 + 2 * i + 1])
                            wq[j * sw + i] = UInt32(256 - (sum + 2) / 4)
                        }
                    }
                }
            }
            for p in 0..<3 {
                small[p].withUnsafeMutableBufferPointer { s in weight.withUnsafeBufferPointer { wq in for k in 0..<(sw * sh) { s[k] &*= wq[k] } } }
            }
            boxBlur(&weight, sw, sh, r); boxBlur(&weight, sw, sh, r)
        }
        for p in 0..<3 {
            for _ in 0..<2 { boxBlur(&small[p], sw, sh, r) }
        }
        if person {
            // One division per cell: the blurred weight's reciprocal (×2²⁴), applied to all three planes.
            weight.withUnsafeMutableBufferPointer { wq in for k in 0..<(sw * sh) { wq[k] = (1 << 24) / max(wq[k], 1) } }
            for p in 0..<3 {
                small[p].withUnsafeMutableBufferPointer { s in
                    weight.withUnsafeBufferPointer { inverse in
                        for k in 0..<(sw * sh) { s[k] = UInt32((UInt64(s[k]) * UInt64(inverse[k]) + (1 << 23)) >> 24) }
                    }
                }
            }
        }
        // Back up to blocks (chroma resolution): bilinear from the quarter-size planes, a
        // row of blocks at a time (the vertical blend first, over the whole row, then two
        // neighbours per block).
        let ch = h / 2
        let cols = I420Resampler.taps(count: cw, sourceCount: sw, origin: 0, span: Double(sw))
        let rows = I420Resampler.taps(count: ch, sourceCount: sh, origin: 0, span: Double(sh))
        if line.count != 3 * (sw + 1) { line = [Int32](repeating: 0, count: 3 * (sw + 1)) }
        cols.index.withUnsafeBufferPointer { colIndex in
        cols.weight.withUnsafeBufferPointer { colWeight in
        small[0].withUnsafeBufferPointer { sy in
            small[1].withUnsafeBufferPointer { su in
                small[2].withUnsafeBufferPointer { sv in
                    alpha.values.withUnsafeBufferPointer { a in
                        line.withUnsafeMutableBufferPointer { lineBuffer in
                            let ly = lineBuffer.baseAddress!, lu = ly + (sw + 1), lv = lu + (sw + 1)
                            for j in 0..<ch {
                                let y0 = Int(rows.index[j]) * sw, y1 = min(Int(rows.index[j]) + 1, sh - 1) * sw
                                let wy = Int32(rows.weight[j]), wy0 = 256 - wy
                                for k in 0..<sw {
                                    ly[k] = Int32(sy[y0 + k]) &* wy0 &+ Int32(sy[y1 + k]) &* wy
                                    lu[k] = Int32(su[y0 + k]) &* wy0 &+ Int32(su[y1 + k]) &* wy
                                    lv[k] = Int32(sv[y0 + k]) &* wy0 &+ Int32(sv[y1 + k]) &* wy
                                }
                                ly[sw] = ly[sw - 1]; lu[sw] = lu[sw - 1]; lv[sw] = lv[sw - 1]
                                let yRow0 = frame.y + 2 * j * frame.yStride, yRow1 = yRow0 + frame.yStride
                                let uRow = frame.u + j * frame.uStride, vRow = frame.v + j * frame.vStride
                                for i in 0..<cw {
                                    let k = Int32(a[j * cw + i])
                                    if k == 255 { continue }
                                    let x0 = Int(colIndex[i])
                                    let wx = Int32(colWeight[i]), wx0 = 256 - wx
                                    // ÷65536 for the weights, ÷16 for the box sums.
                                    let by = (ly[x0] &* wx0 &+ ly[x0 + 1] &* wx &+ (1 << 19)) >> 20
                                    let bu = (lu[x0] &* wx0 &+ lu[x0 + 1] &* wx &+ (1 << 19)) >> 20
                                    let bv = (lv[x0] &* wx0 &+ lv[x0 + 1] &* wx &+ (1 << 19)) >> 20
                                    if k == 0 {
                                        let y8 = UInt8(truncatingIfNeeded: by)
                                        yRow0[2 * i] = y8; yRow0[2 * i + 1] = y8; yRow1[2 * i] = y8; yRow1[2 * i + 1] = y8
                                        uRow[i] = UInt8(truncatingIfNeeded: bu); vRow[i] = UInt8(truncatingIfNeeded: bv)
                                        continue
                                    }
                                    let b = 255 - k
                                    @inline(__always) func mix(_ p: UnsafeMutablePointer<UInt8>, _ q: Int32) {
                                        p.pointee = UInt8(truncatingIfNeeded: (Int32(p.pointee) &* k &+ q &* b &+ 127) / 255)
                                    }
                                    mix(yRow0 + 2 * i, by); mix(yRow0 + 2 * i + 1, by)
                                    mix(yRow1 + 2 * i, by); mix(yRow1 + 2 * i + 1, by)
                                    mix(uRow + i, bu); mix(vRow + i, bv)
                                }
                            }
                        }
                    }
                }
            }
        }
        }
        }
    }

    /// One separable box blur of radius `r` (edges repeated), in place.
    private func boxBlur(_ plane: inout [UInt32], _ w: Int, _ h: Int, _ r: Int) {
        let n = 2 * r + 1
        plane.withUnsafeMutableBufferPointer { p in
            scratch.withUnsafeMutableBufferPointer { t in
                for y in 0..<h {
                    let row = y * w
                    var sum = 0
                    for k in -r...r { sum += Int(p[row + min(max(k, 0), w - 1)]) }
                    for x in 0..<w {
                        t[row + x] = UInt32(sum / n)
                        sum += Int(p[row + min(x + r + 1, w - 1)]) - Int(p[row + max(x - r, 0)])
                    }
                }
                for x in 0..<w {
                    var sum = 0
                    for k in -r...r { sum += Int(t[min(max(k, 0), h - 1) * w + x]) }
                    for y in 0..<h {
                        p[y * w + x] = UInt32(sum / n)
                        sum += Int(t[min(y + r + 1, h - 1) * w + x]) - Int(t[max(y - r, 0) * w + x])
                    }
                }
            }
        }
    }
}
