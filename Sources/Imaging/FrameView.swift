
/// A read-only view of one raw I420 frame (8-bit luma, half-size chroma) as it comes off
/// the camera or the renderer. The memory is borrowed: whoever makes the view keeps the
/// planes alive and unchanged for the call that receives it (a mapped `GstVideoFrame`, a
/// V4L2 buffer, an `I420Image`); nothing here keeps a view past that call.
public struct FrameView {
    public let y: UnsafePointer<UInt8>
    public let u: UnsafePointer<UInt8>
    public let v: UnsafePointer<UInt8>
    public let yStride: Int
    public let uStride: Int
    public let vStride: Int
    public let width: Int
    public let height: Int

    /// Requires a size of at least 2×2 and strides at least one row long.
    public init(y: UnsafePointer<UInt8>, yStride: Int, u: UnsafePointer<UInt8>, uStride: Int,
                v: UnsafePointer<UInt8>, vStride: Int, width: Int, height: Int) {
        precondition(width >= 2 && height >= 2, "a frame needs at least 2×2 pixels")
        precondition(yStride >= width && uStride >= (width + 1) / 2 && vStride >= (width + 1) / 2,
                     "strides must cover a row")
        self.y = y; self.u = u; self.v = v
        self.yStride = yStride; self.uStride = uStride; self.vStride = vStride
        self.width = width; self.height = height
    }

    /// The planes the synthetic renderer wrote.
    public init(_ planes: I420Planes) {
        self.init(y: UnsafePointer(planes.y), yStride: planes.yStride, u: UnsafePointer(planes.u), uStride: planes.uStride,
                  v: UnsafePointer(planes.v), vStride: planes.vStride, width: planes.width, height: planes.height)
    }
}

extension I420Image {
    /// Lends the frame as a `FrameView` to `body` (valid only inside it).
    public func withFrameView<R>(_ body: (FrameView) throws -> R) rethrows -> R {
        let (w, h) = (width, height)
        let cw = w / 2, uo = w * h, vo = uo + cw * (h / 2)
        return try bytes.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress!
            return try body(FrameView(y: base, yStride: w, u: base + uo, uStride: cw, v: base + vo, vStride: cw,
                                      width: w, height: h))
        }
    }
}

extension I420Image {
    /// A copy of `view`'s pixels (an odd last row or column dropped): a frame kept past the
    /// call that lent the view.
    public init(copying view: FrameView) throws(ImagingError) {
        let width = view.width & ~1, height = view.height & ~1
        try self.init(width: width, height: height)
        withPlanes { planes in
            let rows = [(view.y, view.yStride, planes.y, planes.yStride, width, height),
                        (view.u, view.uStride, planes.u, planes.uStride, width / 2, height / 2),
                        (view.v, view.vStride, planes.v, planes.vStride, width / 2, height / 2)]
            for (src, stride, dst, dstStride, w, h) in rows {
                for row in 0..<h { (dst + row * dstStride).update(from: src + row * stride, count: w) }
            }
        }
    }
}
