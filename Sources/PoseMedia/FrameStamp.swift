package import CGStreamer

/// Writes a frame id into the luma of a raw frame as 32 large black/white blocks
/// (two rows of 16 at the top), and reads it back after encoding and decoding.
/// It lets a test prove that the pose on a decoded frame belongs to *that* frame,
/// independently of the pose meta. Used only when enabled. Blocks are a sixteenth of
/// the width wide and a twentieth of the height high (24 rows at 480), so a stamp
/// survives the publisher's step down to a smaller size (`ResolutionLadder`).
public enum FrameStamp {
    package static let columns = 16, rows = 2

    package static func blockHeight(_ height: Int) -> Int { max(height / 20, 8) }

    package static func write(_ id: UInt32, into buffer: UnsafeMutablePointer<GstBuffer>,
                      info: inout GstVideoInfo) -> Bool {
        withLuma(buffer, &info, GST_MAP_WRITE) { luma, stride, width, height in
            let blockWidth = width / columns, blockHeight = blockHeight(height)
            for bit in 0..<32 {
                let value: UInt8 = (id >> UInt32(bit)) & 1 == 1 ? 235 : 16
                let x0 = (bit % columns) * blockWidth, y0 = (bit / columns) * blockHeight
                for y in y0..<(y0 + blockHeight) {
                    (luma + y * stride + x0).update(repeating: value, count: blockWidth)
                }
            }
            return true
        } ?? false
    }

    package static func read(from buffer: UnsafeMutablePointer<GstBuffer>, info: inout GstVideoInfo) -> UInt32? {
        withLuma(buffer, &info, GST_MAP_READ) { luma, stride, width, height in
            let blockWidth = width / columns, blockHeight = blockHeight(height)
            // Each block's middle: its edges blur in the codec (and in a scaled picture).
            let mx = max(blockWidth / 5, 1), my = max(blockHeight / 6, 1)
            var id: UInt32 = 0
            for bit in 0..<32 {
                let x0 = (bit % columns) * blockWidth + mx, y0 = (bit / columns) * blockHeight + my
                var sum = 0, n = 0
                for y in y0..<(y0 + blockHeight - 2 * my) {
                    for x in x0..<(x0 + blockWidth - 2 * mx) { sum += Int(luma[y * stride + x]); n += 1 }
                }
                if sum / max(n, 1) > 128 { id |= 1 << UInt32(bit) }
            }
            return id
        }
    }

    private static func withLuma<T>(_ buffer: UnsafeMutablePointer<GstBuffer>, _ info: inout GstVideoInfo,
                                    _ flags: GstMapFlags,
                                    _ body: (UnsafeMutablePointer<UInt8>, Int, Int, Int) -> T) -> T? {
        guard info.width >= Int32(columns * 8), info.height >= 120 else { return nil }
        var frame = GstVideoFrame()
        guard gst_video_frame_map(&frame, &info, buffer, flags) != 0 else { return nil }
        defer { gst_video_frame_unmap(&frame) }
        guard let plane = frame.data.0 else { return nil }
        return body(plane.assumingMemoryBound(to: UInt8.self), Int(frame.info.stride.0), Int(frame.info.width),
                    Int(frame.info.height))
    }
}
