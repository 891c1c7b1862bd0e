internal import CGStreamer
import Foundation
import Imaging
import RTCSession

/// A picture file (PNG, JPEG, anything `decodebin` reads) decoded to an I420 frame at its
/// own size (an odd last row or column dropped), by a one-shot pipeline (filesrc →
/// decodebin → videoconvert → appsink). It blocks: call it from a thread of its own,
/// never the async pool or a streaming thread.
package enum PictureDecoder {
    /// `timeout` nil: by the picture's size (`PictureHeader.decodeTimeLimit`; for a format
    /// whose header is not read, 5 s and 1 s more per 2 MB of file).
    package static func decode(_ path: String, timeout: Duration? = nil) throws(PictureError) -> I420Image {
        guard FileManager.default.isReadableFile(atPath: path) else { throw PictureError(path: path, reason: "no readable file there") }
        let header = PictureHeader.read(path)
        if let header, header.pixels > PictureHeader.maxPixels {
            throw PictureError(path: path, reason: "the picture is \(header.width)×\(header.height) (\(header.pixels / 1_000_000) megapixels); "
                               + "at most \(PictureHeader.maxPixels / 1_000_000) are read")
        }
        let fileBytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let timeout = timeout ?? header?.decodeTimeLimit ?? .seconds(5) + .milliseconds(fileBytes / 2_000)
        let size = header.map { " (\($0.width)×\($0.height))" } ?? ""
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
            guard ContinuousClock.now < deadline else { throw PictureError(path: path, reason: "no picture decoded within \(timeout)\(size)") }
            pulled = PulledSample.pull(from: sink, timeout: .milliseconds(100))
        }
        let sample = pulled!
        var info = GstVideoInfo()
        guard gst_video_info_from_caps(&info, sample.caps) != 0, info.width >= 16, info.height >= 16 else {
            throw PictureError(path: path, reason: "the picture is smaller than 16×16 or has no size")
        }
        let copied: I420Image? = withMappedI420(sample.buffer, info: &info) { view in try? I420Image(copying: view) } ?? nil
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
