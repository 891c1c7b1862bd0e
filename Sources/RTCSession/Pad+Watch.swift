package import CGStreamer

/// What a watch on a pad sees (`Pad.watch`).
package struct PadTraffic: OptionSet, Sendable {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }
    package static let buffers = PadTraffic(rawValue: GST_PAD_PROBE_TYPE_BUFFER.rawValue)
    package static let bufferLists = PadTraffic(rawValue: GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
    package static let downstreamEvents = PadTraffic(rawValue: GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue)
    package static let upstreamEvents = PadTraffic(rawValue: GST_PAD_PROBE_TYPE_EVENT_UPSTREAM.rawValue)
    /// Media as it flows: buffers, and the lists payloaders push.
    package static let media: PadTraffic = [.buffers, .bufferLists]
}

/// What a watch does with what it saw.
package enum PadVerdict: Sendable {
    case pass
    /// Not passed on (and not an error: the stream goes on).
    case drop
}

/// One item a watch sees, borrowed for the call: keep nothing of it past the call.
package struct PadItem {
    private let info: UnsafeMutablePointer<GstPadProbeInfo>

    fileprivate init(_ info: UnsafeMutablePointer<GstPadProbeInfo>) { self.info = info }

    /// Bytes of a buffer or a buffer list; 0 for an event.
    package var byteSize: Int { ProbeInfo.dataSize(info) }

    /// The buffer, borrowed (nil for events and lists).
    package var buffer: UnsafeMutablePointer<GstBuffer>? { gst_pad_probe_info_get_buffer(info) }

    /// An upstream request for a keyframe (a force-key-unit event: a subscriber's PLI or
    /// FIR as its webrtcbin passes it on, or a branch opening).
    package var isKeyframeRequest: Bool {
        guard let event = gst_pad_probe_info_get_event(info) else { return false }
        return gst_video_event_is_force_key_unit(event) != 0
    }

    /// Replaces a caps event with one saying `caps` (a caps string); false when this is
    /// no caps event or `caps` does not parse, and the event then passes as it was.
    @discardableResult
    package func replaceCaps(with caps: String) -> Bool {
        guard let event = gst_pad_probe_info_get_event(info), event.pointee.type == GST_EVENT_CAPS,
              let parsed = gst_caps_from_string(caps) else { return false }
        let replacement = gst_event_new_caps(parsed)
        gst_caps_unref(parsed)
        // The info owns the event it holds: the old one goes, the new one takes its place.
        gst_event_unref(event)
        info.pointee.data = UnsafeMutableRawPointer(replacement)
        return true
    }

    /// The buffer's bytes, mapped for reading during `body`; nil for events and lists, or
    /// when the buffer cannot be mapped.
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R? {
        guard let buffer else { return nil }
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0, let data = map.data else { return nil }
        defer { gst_buffer_unmap(buffer, &map) }
        return body(UnsafeRawBufferPointer(start: data, count: Int(map.size)))
    }
}

extension Pad {
    /// Watches `traffic` on this pad: `body` runs on the streaming thread for each item, so
    /// it must not block, and says whether the item goes on. The closure is the pad's
    /// (boxed, freed by the probe's destroy notify): capture the pad itself weakly.
    /// Returns the probe's id (remove with `removeProbe`).
    @discardableResult
    package func watch(_ traffic: PadTraffic, _ body: @escaping @Sendable (PadItem) -> PadVerdict) -> UInt {
        addProbe(GstPadProbeType(traffic.rawValue)) { info in
            body(PadItem(info)) == .pass ? GST_PAD_PROBE_OK : GST_PAD_PROBE_DROP
        }
    }
}
