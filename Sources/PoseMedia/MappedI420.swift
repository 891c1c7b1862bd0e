package import CGStreamer
import Imaging

/// Maps an I420 buffer for reading and hands its three planes (with the buffer's own
/// strides, which a decoder may pad) to `body` as a `FrameView`, valid only during the
/// call. Nil when the buffer cannot be mapped as `info` describes.
package func withMappedI420<R>(_ buffer: UnsafeMutablePointer<GstBuffer>, info: inout GstVideoInfo,
                       _ body: (FrameView) -> R) -> R? {
    var frame = GstVideoFrame()
    guard gst_video_frame_map(&frame, &info, buffer, GST_MAP_READ) != 0 else { return nil }
    defer { gst_video_frame_unmap(&frame) }
    guard let y = frame.data.0, let u = frame.data.1, let v = frame.data.2 else { return nil }
    func plane(_ p: UnsafeMutableRawPointer) -> UnsafePointer<UInt8> { UnsafePointer(p.assumingMemoryBound(to: UInt8.self)) }
    let view = FrameView(y: plane(y), yStride: Int(frame.info.stride.0), u: plane(u), uStride: Int(frame.info.stride.1),
                         v: plane(v), vStride: Int(frame.info.stride.2),
                         width: Int(frame.info.width), height: Int(frame.info.height))
    return body(view)
}

/// Maps a writable I420 buffer for reading and writing and hands its planes to `body`
/// (valid only during the call): effects that change a frame in place. Nil when the
/// buffer cannot be mapped as `info` describes or the size is not even.
package func withWritableI420<R>(_ buffer: UnsafeMutablePointer<GstBuffer>, info: inout GstVideoInfo,
                                 _ body: (I420Planes) -> R) -> R? {
    var frame = GstVideoFrame()
    guard gst_video_frame_map(&frame, &info, buffer, GstMapFlags(GST_MAP_READ.rawValue | GST_MAP_WRITE.rawValue)) != 0 else { return nil }
    defer { gst_video_frame_unmap(&frame) }
    guard let y = frame.data.0, let u = frame.data.1, let v = frame.data.2 else { return nil }
    func plane(_ p: UnsafeMutableRawPointer) -> UnsafeMutablePointer<UInt8> { p.assumingMemoryBound(to: UInt8.self) }
    guard let planes = try? I420Planes(y: plane(y), yStride: Int(frame.info.stride.0), u: plane(u), uStride: Int(frame.info.stride.1),
                                       v: plane(v), vStride: Int(frame.info.stride.2),
                                       width: Int(frame.info.width), height: Int(frame.info.height)) else { return nil }
    return body(planes)
}
