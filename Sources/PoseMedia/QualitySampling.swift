package import CGStreamer
import Dispatch
import Foundation
import Imaging
import PoseCastKit
import RTCSession
import Synchronization

/// The benchmarks' picture-quality check across processes: the publisher writes the luma
/// of every `every`-th frame as it enters the encoder (after any resolution step) into
/// `directory`, named by frame id and size; a subscriber compares each such frame it
/// decodes with that file (PSNR and SSIM, `PictureQuality`). The frame id comes from each
/// frame's own pose, so the two are the same frame. For measurements, not calls: it
/// writes a file per sampled frame.
public struct QualitySampling: Sendable, Hashable {
    public var directory: String
    public var every: Int
    public init(directory: String, every: Int = 15) { self.directory = directory; self.every = max(every, 1) }

    /// Whether `path` is a directory this process can write (checked at start-up).
    public static func isWritableDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
            && FileManager.default.isWritableFile(atPath: path)
    }

    func path(frameID: UInt32, width: Int, height: Int) -> String { "\(directory)/\(frameID)-\(width)x\(height).y" }

    func samples(_ frameID: UInt32) -> Bool { frameID % UInt32(every) == 0 }
}

/// One decoded frame compared with what was encoded.
public struct QualityResult: Sendable {
    public var frameID: UInt32
    public var width: Int, height: Int
    public var psnrDB: Double
    public var ssim: Double
}

/// The luma of a frame on a pad: its pose's frame id, size and tightly packed plane.
private func sampledLuma(_ buffer: UnsafeMutablePointer<GstBuffer>, pad: UnsafeMutablePointer<GstPad>,
                         sampling: QualitySampling) -> (frameID: UInt32, width: Int, height: Int, y: [UInt8])? {
    guard let bytes = PoseMeta.bytes(of: buffer), let pose = try? PoseWireFormat.decode(bytes),
          sampling.samples(pose.frameID), let caps = gst_pad_get_current_caps(pad) else { return nil }
    var info = GstVideoInfo()
    let ok = gst_video_info_from_caps(&info, caps) != 0
    gst_caps_unref(caps)
    guard ok, info.finfo.pointee.format == GST_VIDEO_FORMAT_I420 else { return nil }
    return withMappedI420(buffer, info: &info) { view in
        var y = [UInt8](repeating: 0, count: view.width * view.height)
        y.withUnsafeMutableBufferPointer { dst in
            for row in 0..<view.height { (dst.baseAddress! + row * view.width).update(from: view.y + row * view.yStride, count: view.width) }
        }
        return (pose.frameID, view.width, view.height, y)
    }
}

/// The publisher's half: writes each sampled frame's luma, off the streaming thread.
package final class QualityReferenceWriter: Sendable {
    private let sampling: QualitySampling
    private let queue = DispatchQueue(label: "posecast.quality-reference")

    package init(sampling: QualitySampling) { self.sampling = sampling }

    /// On the encoder's sink pad: the picture exactly as the encoder gets it.
    package func install(on pad: Pad) {
        let sampling = self.sampling, queue = self.queue
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            guard let buffer = gst_pad_probe_info_get_buffer(info),
                  let luma = sampledLuma(buffer, pad: pad.raw, sampling: sampling) else { return GST_PAD_PROBE_OK }
            queue.async {
                let path = sampling.path(frameID: luma.frameID, width: luma.width, height: luma.height)
                // A reference not written shows at the subscriber as a missing one.
                _ = FileManager.default.createFile(atPath: path, contents: Data(luma.y))
            }
            return GST_PAD_PROBE_OK
        }
    }
}

/// The subscriber's half: compares each sampled decoded frame with its reference, off
/// the streaming thread, and reports it (`onResult`); a reference not there yet is looked
/// for again for up to half a second (the publisher writes it as the frame is encoded).
package final class QualityProbe: Sendable {
    private let sampling: QualitySampling
    private let onResult: @Sendable (QualityResult) -> Void
    private let queue = DispatchQueue(label: "posecast.quality-check")
    private let missing = Atomic<UInt64>(0)

    package init(sampling: QualitySampling, onResult: @escaping @Sendable (QualityResult) -> Void) {
        self.sampling = sampling; self.onResult = onResult
    }

    /// Sampled frames whose reference never appeared (another size, or not written).
    package var referencesMissing: UInt64 { missing.load(ordering: .relaxed) }

    /// On the decoder's source pad.
    package func install(on pad: Pad) {
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [self] info in
            if let buffer = gst_pad_probe_info_get_buffer(info), let luma = sampledLuma(buffer, pad: pad.raw, sampling: sampling) {
                queue.async { self.compare(luma, attempt: 0) }
            }
            return GST_PAD_PROBE_OK
        }
    }

    private func compare(_ luma: (frameID: UInt32, width: Int, height: Int, y: [UInt8]), attempt: Int) {
        let path = sampling.path(frameID: luma.frameID, width: luma.width, height: luma.height)
        guard let data = FileManager.default.contents(atPath: path), data.count == luma.y.count else {
            if attempt < 10 {
                queue.asyncAfter(deadline: .now() + .milliseconds(50)) { self.compare(luma, attempt: attempt + 1) }
            } else {
                missing.add(1, ordering: .relaxed)
            }
            return
        }
        let reference = [UInt8](data)
        onResult(QualityResult(frameID: luma.frameID, width: luma.width, height: luma.height,
                               psnrDB: PictureQuality.psnr(reference, luma.y),
                               ssim: PictureQuality.ssim(reference, luma.y, width: luma.width, height: luma.height)))
    }
}
