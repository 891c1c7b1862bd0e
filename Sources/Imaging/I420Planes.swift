/// The planes of an I420 (YUV 4:2:0, 8-bit) frame to render into: a full-size luma plane
/// and two half-size chroma planes, each with its own stride. The memory is borrowed: the
/// caller owns it and keeps it alive and writable for the duration of the call that
/// receives these planes (a mapped `GstVideoFrame`, an `I420Image`, …).
public struct I420Planes {
    /// The smallest width and height accepted.
    public static let minimumSize = 16

    public let y: UnsafeMutablePointer<UInt8>
    public let u: UnsafeMutablePointer<UInt8>
    public let v: UnsafeMutablePointer<UInt8>
    public let yStride: Int
    public let uStride: Int
    public let vStride: Int
    public let width: Int
    public let height: Int

    /// Fails for odd or too small sizes and strides shorter than a row.
    public init(y: UnsafeMutablePointer<UInt8>, yStride: Int, u: UnsafeMutablePointer<UInt8>, uStride: Int,
                v: UnsafeMutablePointer<UInt8>, vStride: Int, width: Int, height: Int) throws(ImagingError) {
        try Self.validate(width: width, height: height)
        guard yStride >= width else { throw .strideTooSmall(plane: "Y", stride: yStride, minimum: width) }
        guard uStride >= width / 2 else { throw .strideTooSmall(plane: "U", stride: uStride, minimum: width / 2) }
        guard vStride >= width / 2 else { throw .strideTooSmall(plane: "V", stride: vStride, minimum: width / 2) }
        self.y = y; self.u = u; self.v = v
        self.yStride = yStride; self.uStride = uStride; self.vStride = vStride
        self.width = width; self.height = height
    }

    /// Checks a frame size: even, and at least `minimumSize` each way.
    public static func validate(width: Int, height: Int) throws(ImagingError) {
        guard width >= minimumSize, height >= minimumSize else {
            throw .tooSmall(width: width, height: height, minimum: minimumSize)
        }
        guard width % 2 == 0, height % 2 == 0 else { throw .oddSize(width: width, height: height) }
    }
}

/// BT.601 limited-range ("studio swing") conversion between 8-bit RGB levels and YCbCr:
/// Y in 16–235, Cb/Cr in 16–240 centred on 128.
public enum BT601 {
    @inline(__always)
    public static func yuv(red r: Float, green g: Float, blue b: Float) -> (y: Float, u: Float, v: Float) {
        (16 + 0.256_788 * r + 0.504_129 * g + 0.097_906 * b,
         128 - 0.148_223 * r - 0.290_993 * g + 0.439_216 * b,
         128 + 0.439_216 * r - 0.367_788 * g - 0.071_427 * b)
    }

    /// The RGB levels of a YCbCr triple (not clamped).
    @inline(__always)
    public static func rgb(y: Float, u: Float, v: Float) -> (red: Float, green: Float, blue: Float) {
        let c = 1.164_383 * (y - 16), d = u - 128, e = v - 128
        return (c + 1.596_027 * e, c - 0.391_762 * d - 0.812_968 * e, c + 2.017_232 * d)
    }
}

/// An I420 frame in one owned byte array, planes packed without padding (Y, then U, then
/// V): for tests, snapshots and benchmarks. The publisher renders into its own buffers
/// through `I420Planes` instead.
public struct I420Image: Sendable, Hashable {
    public let width: Int
    public let height: Int
    /// Y (width × height), U and V (width/2 × height/2 each), in that order.
    public var bytes: [UInt8]

    public init(width: Int, height: Int) throws(ImagingError) {
        try I420Planes.validate(width: width, height: height)
        self.width = width; self.height = height
        bytes = [UInt8](repeating: 0, count: width * height * 3 / 2)
    }

    var chromaWidth: Int { width / 2 }
    var uOffset: Int { width * height }
    var vOffset: Int { width * height + (width / 2) * (height / 2) }

    /// Lends the three planes to `body` (valid only inside it).
    public mutating func withPlanes<R>(_ body: (I420Planes) throws -> R) rethrows -> R {
        let (w, h, uo, vo) = (width, height, uOffset, vOffset)
        return try bytes.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            // Sizes were validated in init and strides equal the row lengths, so this cannot fail.
            let planes = try! I420Planes(y: base, yStride: w, u: base + uo, uStride: w / 2,
                                         v: base + vo, vStride: w / 2, width: w, height: h)
            return try body(planes)
        }
    }

    /// Luma of pixel (x, y).
    public func luma(x: Int, y: Int) -> UInt8 { bytes[y * width + x] }
    /// Cb and Cr of the 2×2 block holding pixel (x, y).
    public func chroma(x: Int, y: Int) -> (u: UInt8, v: UInt8) {
        let i = (y / 2) * chromaWidth + x / 2
        return (bytes[uOffset + i], bytes[vOffset + i])
    }

    /// RGB levels (0–255) of pixel (x, y), chroma taken from its 2×2 block.
    public func rgb(x: Int, y: Int) -> (red: Float, green: Float, blue: Float) {
        let (u, v) = chroma(x: x, y: y)
        let c = BT601.rgb(y: Float(luma(x: x, y: y)), u: Float(u), v: Float(v))
        return (min(max(c.red, 0), 255), min(max(c.green, 0), 255), min(max(c.blue, 0), 255))
    }

    /// The frame as packed 8-bit RGB, row by row.
    public func rgbBytes() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: width * height * 3)
        bytes.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                let cw = chromaWidth, uo = uOffset, vo = vOffset
                for y in 0..<height {
                    for x in 0..<width {
                        let ci = (y / 2) * cw + x / 2
                        let c = BT601.rgb(y: Float(src[y * width + x]), u: Float(src[uo + ci]), v: Float(src[vo + ci]))
                        let o = (y * width + x) * 3
                        dst[o] = UInt8(min(max(c.red, 0), 255).rounded())
                        dst[o + 1] = UInt8(min(max(c.green, 0), 255).rounded())
                        dst[o + 2] = UInt8(min(max(c.blue, 0), 255).rounded())
                    }
                }
            }
        }
        return out
    }

    /// The frame as a binary PPM (P6) file.
    public func ppm() -> [UInt8] { Array("P6\n\(width) \(height)\n255\n".utf8) + rgbBytes() }
}
