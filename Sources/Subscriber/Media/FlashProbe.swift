internal import CGStreamer
import PoseCastKit
import PoseMedia
import RTCSession

/// Finds the publisher's flash frames (`--flash`: all white) among decoded I420 frames,
/// by the mean of 64 luma samples, and reports each with its pose's capture instant.
enum FlashProbe {
    static func install(on pad: Pad, report: @escaping @Sendable (_ captureNanos: UInt64, _ shownNanos: UInt64) -> Void) {
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            guard let buffer = gst_pad_probe_info_get_buffer(info),
                  let bytes = PoseMeta.bytes(of: buffer), let pose = try? PoseWireFormat.decode(bytes) else { return GST_PAD_PROBE_OK }
            var map = GstMapInfo()
            guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0, let data = map.data else { return GST_PAD_PROBE_OK }
            defer { gst_buffer_unmap(buffer, &map) }
            // The luma plane is the first two thirds of an I420 frame: sample its first half evenly.
            let luma = Int(map.size) * 2 / 3, step = max(luma / 2 / 64, 1)
            var sum = 0
            for i in 0..<64 { sum += Int(data[min(i * step, luma - 1)]) }
            if sum / 64 > 200 { report(pose.captureTimeNanos, WallClock.nowNanos()) }
            return GST_PAD_PROBE_OK
        }
    }
}
