internal import CGStreamer
import Foundation
import Imaging
import RTCSession

/// A picture file (PNG, JPEG, anything `decodebin` reads) decoded to an I420 frame at its
/// own size (an odd last row or column dropped), by a one-shot pipeline (filesrc →
/// decodebin → videoconvert → appsink). It blocks: call it from a thread of its own,
/// never the async pool or a streaming thread.
package enum PictureDecoder {
    package static func decode(_ path: String, timeout: Duration = .seconds(5)) throws(PictureError) -> I420Image {
        guard FileManager.default.isReadableFile(atPath: path) else { throw PictureError(path: path, reason: "no readable file there") }
        let pipeline: Pipeline
        do throws(RTCError) {
            pipeline = try Pipeline(launch: "filesrc name=file ! decodebin ! videoconvert ! video/x-raw,format=I420 ! appsink name=sink sync=false max-buffers=1",
                                    name: "picture-decoder")
        } catch { throw PictureError(path: path, reason: "\(error)") }
        defer { pipeline.stop() }
        guard let file = pipeline.element(named: "file"), let sink = pipeline.element(named: "sink") else {
            throw PictureError(path: path, reason: "the decoder has no file source or sink")
        }
        file.set("location", path)
        let firstError = pipeline.recordFirstError()
        do throws(RTCError) { try pipeline.play() } catch {
            throw PictureError(path: path, reason: firstError.message ?? "\(error)")
        }
        // In short waits, so that a file the decoder refuses (corrupt, truncated, not a
        // picture) is refused at once with its reason, not after the whole timeout.
        let deadline = ContinuousClock.now + timeout
        var pulled: PulledSample?
        while pulled == nil {
            if let message = firstError.message { throw PictureError(path: path, reason: message) }
            guard ContinuousClock.now < deadline else { throw PictureError(path: path, reason: "no picture decoded within \(timeout)") }
            pulled = PulledSample.pull(from: sink, timeout: .milliseconds(100))
        }
        let sample = pulled!
        var info = GstVideoInfo()
        guard gst_video_info_from_caps(&info, sample.caps) != 0, info.width >= 16, info.height >= 16 else {
            throw PictureError(path: path, reason: "the picture is smaller than 16×16 or has no size")
        }
        let width = Int(info.width) & ~1, height = Int(info.height) & ~1
        let copied: I420Image? = withMappedI420(sample.buffer, info: &info) { view in
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
        guard let image = copied else { throw PictureError(path: path, reason: "cannot map the decoded picture") }
        return image
    }
}

/// Why a picture could not be read: its path and the reason.
public struct PictureError: Error, Sendable, CustomStringConvertible {
    public let path: String, reason: String
    public init(path: String, reason: String) { self.path = path; self.reason = reason }
    public var description: String { "cannot read the picture \(path): \(reason)" }
}
