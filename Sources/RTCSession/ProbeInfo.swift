package import CGStreamer

/// What a pad probe's info holds, beyond the accessors GStreamer exports
/// (`gst_pad_probe_info_get_buffer`, `_get_buffer_list`, `_get_event`, used directly).
package enum ProbeInfo {
    /// The probe's buffer made writable (`gst_buffer_make_writable`, a macro in C): a copy
    /// when someone else holds a reference, stored back into the info so downstream gets
    /// it. Returns it borrowed (the info owns it), or nil when the probe has no buffer.
    package static func writableBuffer(_ info: UnsafeMutablePointer<GstPadProbeInfo>) -> UnsafeMutablePointer<GstBuffer>? {
        guard let buffer = gst_pad_probe_info_get_buffer(info),
              let writable = gst_mini_object_make_writable(gcast(buffer, to: GstMiniObject.self)) else { return nil }
        info.pointee.data = UnsafeMutableRawPointer(writable)
        return gcast(writable, to: GstBuffer.self)
    }

    /// An RTP packet's payload type, from its second byte (no map): nil when shorter.
    package static func rtpPayloadType(_ buffer: UnsafeMutablePointer<GstBuffer>) -> Int? {
        var header: (UInt8, UInt8) = (0, 0)
        let copied = withUnsafeMutableBytes(of: &header) { gst_buffer_extract(buffer, 0, $0.baseAddress, 2) }
        return copied == 2 ? Int(header.1 & 0x7F) : nil
    }

    /// Bytes in a buffer or buffer-list probe (payloaders push lists); 0 for anything else.
    package static func dataSize(_ info: UnsafeMutablePointer<GstPadProbeInfo>) -> Int {
        let type = info.pointee.type.rawValue
        if type & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0, let buffer = gst_pad_probe_info_get_buffer(info) {
            return Int(gst_buffer_get_size(buffer))
        }
        if type & GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue != 0, let list = gst_pad_probe_info_get_buffer_list(info) {
            return Int(gst_buffer_list_calculate_size(list))
        }
        return 0
    }
}
