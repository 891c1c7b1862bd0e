internal import CGStreamer
import CGstShim
import Foundation
import Imaging
import RTCSession
import PoseMedia
import VideoEffects

/// A picture file (PNG, JPEG, anything `decodebin` reads) as an I420 frame: the virtual
/// background's replacement image, and the photographs the effect tests run on. Decoded
/// by a one-shot GStreamer pipeline (filesrc → decodebin → videoconvert → appsink); it
/// blocks, so call it from a thread of its own, never the async pool or a streaming thread.
public enum StillImage {
    public struct LoadError: Error, Sendable, CustomStringConvertible {
        public let path: String, reason: String
        public var description: String { "cannot read the picture \(path): \(reason)" }
    }

    /// The file at its own size (an odd last row or column is dropped).
    public static func load(_ path: String) throws(LoadError) -> I420Image {
        guard FileManager.default.isReadableFile(atPath: path) else { throw LoadError(path: path, reason: "no readable file there") }
        do throws(RTCError) { try GStreamer.initialize() } catch { throw LoadError(path: path, reason: "\(error)") }
        var parseError: UnsafeMutablePointer<GError>?
        guard let pipeline = gst_parse_launch("filesrc name=file ! decodebin ! videoconvert ! video/x-raw,format=I420 ! appsink name=sink sync=false max-buffers=1",
                                              &parseError) else {
            let text = parseError.map { String(cString: $0.pointee.message) } ?? "unknown"
            if let parseError { g_error_free(parseError) }
            throw LoadError(path: path, reason: "cannot build the decoder (\(text))")
        }
        defer {
            _ = gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(pipeline)
        }
        let bin = gcast(pipeline, to: GstBin.self)
        guard let file = gst_bin_get_by_name(bin, "file"), let sink = gst_bin_get_by_name(bin, "sink") else {
            throw LoadError(path: path, reason: "the decoder has no file source or sink")
        }
        defer { gst_object_unref(file); gst_object_unref(sink) }
        Element(retaining: file).set("location", path)
        _ = gst_element_set_state(pipeline, GST_STATE_PLAYING)
        guard let sample = gst_app_sink_try_pull_sample(gcast(sink, to: GstAppSink.self), 5 * 1_000_000_000) else {
            throw LoadError(path: path, reason: busError(pipeline) ?? "no picture decoded within 5 s")
        }
        defer { gst_sample_unref(sample) }
        guard let caps = gst_sample_get_caps(sample), let buffer = gst_sample_get_buffer(sample) else {
            throw LoadError(path: path, reason: "the decoder gave a sample without caps or data")
        }
        var info = GstVideoInfo()
        guard gst_video_info_from_caps(&info, caps) != 0, info.width >= 16, info.height >= 16 else {
            throw LoadError(path: path, reason: "the picture is smaller than 16×16 or has no size")
        }
        let width = Int(info.width) & ~1, height = Int(info.height) & ~1
        let copied: I420Image? = withMappedI420(buffer, info: &info) { view in
            var image = try! I420Image(width: width, height: height)
            image.withPlanes { planes in
                let rows = [(view.y, view.yStride, planes.y, planes.yStride, width, height),
                            (view.u, view.uStride, planes.u, planes.uStride, width / 2, height / 2),
                            (view.v, view.vStride, planes.v, planes.vStride, width / 2, height / 2)]
                for (src, stride, dst, dstStride, w, h) in rows {
                    for row in 0..<h { (dst + row * dstStride).update(from: src + row * stride, count: w) }
                }
            }
            return image
        }
        guard let image = copied else { throw LoadError(path: path, reason: "cannot map the decoded picture") }
        return image
    }

    /// The file scaled to cover `width × height` (aspect kept, the overflow cropped equally
    /// from both sides): a replacement background for frames of that size.
    public static func load(_ path: String, covering width: Int, height: Int) throws(LoadError) -> I420Image {
        let image = try load(path)
        return cover(image, width: width, height: height)
    }

    /// `image` scaled to cover `width × height`, centred.
    public static func cover(_ image: I420Image, width: Int, height: Int) -> I420Image {
        let crop = CropWindow.centred(aspect: Double(width) / Double(height), inWidth: image.width, height: image.height)
        var out = try! I420Image(width: width, height: height)
        image.withFrameView { view in out.withPlanes { planes in I420Resampler.resample(view, crop: crop, into: planes) } }
        return out
    }

    private static func busError(_ pipeline: UnsafeMutablePointer<GstElement>) -> String? {
        guard let bus = gst_element_get_bus(pipeline) else { return nil }
        defer { gst_object_unref(bus) }
        guard let message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR) else { return nil }
        defer { gst_message_unref(message) }
        var error: UnsafeMutablePointer<GError>?
        gst_message_parse_error(message, &error, nil)
        defer { if let error { g_error_free(error) } }
        return error.map { String(cString: $0.pointee.message) }
    }
}
