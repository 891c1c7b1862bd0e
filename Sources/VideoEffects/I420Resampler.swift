import Imaging

/// Crop-and-scale of I420 frames: the framing effect's output, the segmentation and face
/// models' inputs. Bilinear, in fixed point, with the crop mapped exactly as
/// `CropWindow.intrinsics` assumes (pixel centres to pixel centres).
public enum I420Resampler {
    /// Fills `destination` with `crop` of `source`, scaled to the destination's size.
    /// Samples outside the source repeat its edge.
    public static func resample(_ source: FrameView, crop: CropWindow, into destination: I420Planes) {
        plane(source.y, source.yStride, source.width, source.height,
              into: destination.y, destination.yStride, destination.width, destination.height,
              x: crop.x, y: crop.y, width: crop.width, height: crop.height)
        let cw = source.width / 2, ch = source.height / 2, dw = destination.width / 2, dh = destination.height / 2
        plane(source.u, source.uStride, cw, ch, into: destination.u, destination.uStride, dw, dh,
              x: crop.x / 2, y: crop.y / 2, width: crop.width / 2, height: crop.height / 2)
        plane(source.v, source.vStride, cw, ch, into: destination.v, destination.vStride, dw, dh,
              x: crop.x / 2, y: crop.y / 2, width: crop.width / 2, height: crop.height / 2)
    }

    /// Source index and weight (of the next sample, out of 256) for each destination
    /// position along one axis.
    static func taps(count: Int, sourceCount: Int, origin: Double, span: Double) -> (index: [Int32], weight: [Int32]) {
        var index = [Int32](repeating: 0, count: count), weight = [Int32](repeating: 0, count: count)
        let step = span / Double(count), last = Double(sourceCount - 1)
        for i in 0..<count {
            let s = min(max(origin + (Double(i) + 0.5) * step - 0.5, 0), last)
            var i0 = Int(s)
            if i0 >= sourceCount - 1 { i0 = max(sourceCount - 2, 0) }
            index[i] = Int32(i0)
            weight[i] = Int32(((s - Double(i0)) * 256).rounded())
        }
        return (index, weight)
    }

    /// One plane, in two passes per output row: the two source rows it falls between are
    /// blended over the columns the crop spans (a straight loop the compiler vectorises),
    /// then each output pixel interpolates two neighbours of that blended row.
    static func plane(_ src: UnsafePointer<UInt8>, _ srcStride: Int, _ sw: Int, _ sh: Int,
                      into dst: UnsafeMutablePointer<UInt8>, _ dstStride: Int, _ dw: Int, _ dh: Int,
                      x: Double, y: Double, width: Double, height: Double) {
        let cols = taps(count: dw, sourceCount: sw, origin: x, span: width)
        let rows = taps(count: dh, sourceCount: sh, origin: y, span: height)
        let first = Int(cols.index[0]), last = min(Int(cols.index[dw - 1]) + 1, sw - 1)
        let span = last - first + 1
        var line = [UInt32](repeating: 0, count: span + 1)
        let offsets = cols.index.map { Int($0) - first }, weights = cols.weight.map { UInt32($0) }
        offsets.withUnsafeBufferPointer { ci in
            weights.withUnsafeBufferPointer { cw in
                line.withUnsafeMutableBufferPointer { blended in
                    let b = blended.baseAddress!
                    for j in 0..<dh {
                        let r0 = src + Int(rows.index[j]) * srcStride + first
                        let r1 = sh > 1 ? r0 + srcStride : r0
                        let wy = UInt32(rows.weight[j]), wy0 = 256 - wy
                        for k in 0..<span { b[k] = UInt32(r0[k]) &* wy0 &+ UInt32(r1[k]) &* wy }
                        b[span] = b[span - 1]
                        let out = dst + j * dstStride
                        for i in 0..<dw {
                            let xi = ci[i], wx = cw[i]
                            out[i] = UInt8(truncatingIfNeeded: (b[xi] &* (256 - wx) &+ b[xi + 1] &* wx &+ 32768) >> 16)
                        }
                    }
                }
            }
        }
    }
}
