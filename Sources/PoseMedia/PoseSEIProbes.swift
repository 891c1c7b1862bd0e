internal import CGStreamer
import PoseCastKit
import RTCSession
import Synchronization

/// The SEI step of the publisher (`PoseSEI`), for H.264 through an SFU: a buffer probe
/// on the sink pad of the SEI branch's payloader (Annex B access units, as our encoder
/// caps say) that puts each frame's pose (from its pose meta) in a user-data SEI before
/// the first slice. GStreamer 1.22 has no element for it (h264seiinserter is 1.26). The
/// encoded buffer is shared with the other branches: the probe makes it writable (a new
/// header sharing the memories), cuts it at the slice and puts one new memory between,
/// so the other branches' frames are untouched.
package final class PoseSEIWriter: Sendable {
    private let counter = InBandPoseCounter()
    /// Branches taking the SEI stream: the writer works only while there is one, so an
    /// H.264 publisher with no SFU and no `sei` session pays nothing per frame for it.
    private let consumers = Atomic<Int>(0)
    package init() {}

    package func addConsumer() { consumers.add(1, ordering: .relaxed) }
    package func removeConsumer() { consumers.subtract(1, ordering: .relaxed) }

    package var stats: InBandPoseStats { counter.stats }

    package func install(on pad: Pad) {
        _ = pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [self] info in
            guard consumers.load(ordering: .relaxed) > 0 else { return GST_PAD_PROBE_OK }
            let started = MonotonicClock.nanos()
            guard let shared = gst_pad_probe_info_get_buffer(info) else { return GST_PAD_PROBE_OK }
            guard let element = PoseMeta.bytes(of: shared) else {
                counter.without("an access unit of \(gst_buffer_get_size(shared)) bytes came with no pose meta")
                return GST_PAD_PROBE_OK
            }
            let bytes = BufferBytes.copy(shared)
            guard let offset = PoseSEI.insertionOffset(in: bytes) else {
                counter.without("no slice found in an access unit of \(bytes.count) bytes (NAL types \(PoseSEI.nalTypes(in: bytes).prefix(8)))")
                return GST_PAD_PROBE_OK
            }
            guard let buffer = ProbeInfo.writableBuffer(info) else {
                counter.without("the access unit could not be made writable")
                return GST_PAD_PROBE_OK
            }
            let sei = PoseSEI.make(element: element)
            guard let memory = BufferBytes.memory(holding: sei),
                  let tail = gst_buffer_copy_region(buffer, GST_BUFFER_COPY_MEMORY, gsize(offset), gsize(bytes.count - offset))
            else { return GST_PAD_PROBE_OK }
            gst_buffer_resize(buffer, 0, gssize(offset))
            gst_buffer_append_memory(buffer, memory)        // takes the memory
            // Takes both buffers; returns the first (still the info's) with the tail's memories added.
            info.pointee.data = UnsafeMutableRawPointer(gst_buffer_append(buffer, tail))
            counter.wrote(sei.count, since: started)
            return GST_PAD_PROBE_OK
        }
    }
}

/// The SEI step of a GStreamer receiver: a buffer probe on the H.264 depayloader's source
/// pad that finds our pose SEI (by UUID, past x264's own) in each access unit and
/// attaches the element as pose meta, unless the frame already has one from the header
/// extension. The SEI stays in the stream: decoders skip user data. A pose that does not
/// decode is recorded as a rejection by reason.
package final class PoseSEIReader: Sendable {
    private let counter = InBandPoseCounter()
    /// The depayloader's framing, from its caps (`stream-format`).
    private let framing = Mutex(PoseSEI.Framing.annexB)
    private let rejections: PoseRejectionCounter
    package init(rejections: PoseRejectionCounter) { self.rejections = rejections }

    package var stats: InBandPoseStats { counter.stats }

    package func install(on pad: Pad) {
        _ = pad.addProbe(GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) { [self] info in
            guard let event = gst_pad_probe_info_get_event(info), event.pointee.type == GST_EVENT_CAPS else { return GST_PAD_PROBE_OK }
            var caps: UnsafeMutablePointer<GstCaps>?
            gst_event_parse_caps(event, &caps)
            if let caps, gst_caps_get_size(caps) > 0, let s = gst_caps_get_structure(caps, 0) {
                let format = gst_structure_get_string(s, "stream-format").map { String(cString: $0) }
                framing.withLock { $0 = format == "avc" || format == "avc3" ? .lengthPrefixed(lengthSize: 4) : .annexB }
            }
            return GST_PAD_PROBE_OK
        }
        _ = pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [self] info in
            let started = MonotonicClock.nanos()
            guard let shared = gst_pad_probe_info_get_buffer(info) else { return GST_PAD_PROBE_OK }
            switch PoseSEI.find(in: BufferBytes.copy(shared), framing: framing.withLock { $0 }) {
            case .none:
                counter.without()
            case .malformed(let problem):
                counter.malformed(problem)
            case .element(let bytes):
                counter.read(bytes, carrier: "SEI", since: started, rejections: rejections) {
                    if PoseMeta.bytes(of: shared) == nil, let buffer = ProbeInfo.writableBuffer(info) {
                        _ = PoseMeta.attach(bytes, to: buffer)
                    }
                }
            }
            return GST_PAD_PROBE_OK
        }
    }
}

/// A buffer's bytes in and out of Swift arrays.
enum BufferBytes {
    /// All of a buffer's bytes (an access unit: a few kB a frame).
    static func copy(_ buffer: UnsafeMutablePointer<GstBuffer>) -> [UInt8] {
        let size = Int(gst_buffer_get_size(buffer))
        var bytes = [UInt8](repeating: 0, count: size)
        _ = bytes.withUnsafeMutableBytes { gst_buffer_extract(buffer, 0, $0.baseAddress, gsize(size)) }
        return bytes
    }

    /// A new system memory holding `bytes`, (full): the caller hands it on.
    static func memory(holding bytes: [UInt8]) -> UnsafeMutablePointer<GstMemory>? {
        guard let memory = gst_allocator_alloc(nil, gsize(bytes.count), nil) else { return nil }
        var map = GstMapInfo()
        guard gst_memory_map(memory, &map, GST_MAP_WRITE) != 0 else {
            gst_memory_unref(memory)
            return nil
        }
        bytes.withUnsafeBufferPointer { map.data.update(from: $0.baseAddress!, count: bytes.count) }
        gst_memory_unmap(memory, &map)
        return memory
    }
}
