internal import CGStreamer
import PoseCastKit
import RTCSession
import Synchronization

/// The trailer step of the publisher (`PoseTrailer`): a buffer probe on the sink pad of
/// the trailer branch's payloader that appends each encoded frame's pose (from its pose
/// meta) as a trailer. The encoded buffer is shared with the header-extension branch:
/// the probe makes it writable, which copies the buffer's small header and shares its
/// memories, then appends one new memory. So the other branch's frame is untouched.
package final class PoseTrailerWriter: Sendable {
    private let counter = InBandPoseCounter()
    package init() {}

    package var stats: InBandPoseStats { counter.stats }

    package func install(on pad: Pad) {
        _ = pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [self] info in
            let started = MonotonicClock.nanos()
            guard let shared = gst_pad_probe_info_get_buffer(info), let element = PoseMeta.bytes(of: shared) else {
                counter.without()
                return GST_PAD_PROBE_OK
            }
            guard let buffer = ProbeInfo.writableBuffer(info) else { return GST_PAD_PROBE_OK }
            // The media's last two bytes: zeros there count towards a start code.
            let size = Int(gst_buffer_get_size(buffer))
            var tail: [UInt8] = [0, 0]
            let tailCount = min(2, size)
            _ = tail.withUnsafeMutableBytes { gst_buffer_extract(buffer, gsize(size - tailCount), $0.baseAddress, gsize(tailCount)) }
            let trailer = PoseTrailer.make(element: element, mediaTail: tail.suffix(tailCount))
            guard let memory = BufferBytes.memory(holding: trailer) else { return GST_PAD_PROBE_OK }
            gst_buffer_append_memory(buffer, memory)   // takes the memory
            counter.wrote(trailer.count, since: started)
            return GST_PAD_PROBE_OK
        }
    }
}

/// The trailer step of a GStreamer receiver: a buffer probe on the depayloader's source
/// pad that strips each frame's trailer before the decoder sees it and attaches the
/// element as pose meta, so everything after (the pose reader, the window, placement)
/// works as with the header extension. A frame whose trailer is malformed is left as it
/// is (the decoder may then fail on it), counted and reported; a pose that does not
/// decode is stripped and recorded as a rejection by reason.
package final class PoseTrailerReader: Sendable {
    private let counter = InBandPoseCounter()
    private let rejections: PoseRejectionCounter
    package init(rejections: PoseRejectionCounter) { self.rejections = rejections }

    package var stats: InBandPoseStats { counter.stats }

    package func install(on pad: Pad) {
        _ = pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [self] info in
            let started = MonotonicClock.nanos()
            guard let shared = gst_pad_probe_info_get_buffer(info) else { return GST_PAD_PROBE_OK }
            let size = Int(gst_buffer_get_size(shared))
            let tailCount = min(size, PoseTrailer.maxEscapedSize + PoseTrailer.footerSize + 2)   // + the media's last two
            var tail = [UInt8](repeating: 0, count: tailCount)
            _ = tail.withUnsafeMutableBytes { gst_buffer_extract(shared, gsize(size - tailCount), $0.baseAddress, gsize(tailCount)) }
            switch PoseTrailer.find(in: tail) {
            case .none:
                counter.without()
            case .malformed(let problem):
                counter.malformed(problem)
            case let .trailer(element, mediaCount):
                guard let buffer = ProbeInfo.writableBuffer(info) else { return GST_PAD_PROBE_OK }
                let before = tail[max(0, element.lowerBound - 2)..<element.lowerBound]
                let bytes = PoseTrailer.unescape(tail[element], precedingZeros: PoseTrailer.trailingZeros(before))
                gst_buffer_resize(buffer, 0, gssize(size - tailCount + mediaCount))
                counter.read(bytes, carrier: "trailer", since: started, rejections: rejections) { _ = PoseMeta.attach(bytes, to: buffer) }
            }
            return GST_PAD_PROBE_OK
        }
    }
}
