package import CGStreamer

/// When a buffer's timestamp says it was made, on the clock of the pipeline it is in: a
/// live source stamps each buffer with the running time of its capture, so the base time
/// plus that running time is the capture instant on the pipeline's clock.
package enum BufferTime {
    /// The running time of `pts` on `pad` (its sticky segment), or `pts` itself without one.
    package static func runningTime(_ pad: UnsafeMutablePointer<GstPad>, pts: UInt64) -> UInt64 {
        guard let event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0) else { return pts }
        defer { gst_event_unref(event) }
        var segment: UnsafePointer<GstSegment>?
        gst_event_parse_segment(event, &segment)
        guard let segment else { return pts }
        let running = UInt64(gst_segment_to_running_time(segment, GST_FORMAT_TIME, guint64(pts)))
        return running == UInt64.max ? pts : running
    }

    /// The base time of the pad's element (its pipeline's), 0 when it has no parent.
    package static func baseTime(_ pad: UnsafeMutablePointer<GstPad>) -> UInt64 {
        guard let parent = gst_pad_get_parent_element(pad) else { return 0 }
        defer { gst_object_unref(UnsafeMutableRawPointer(parent)) }
        return UInt64(gst_element_get_base_time(parent))
    }

    /// How long ago, in nanoseconds, `buffer` on `pad` was captured by its timestamp,
    /// measured on the element's own clock (whichever the pipeline chose: the system
    /// clock, or an audio device's). Nil without a timestamp or a clock, or for a
    /// timestamp in the future (a source that does not stamp capture times).
    package static func age(of buffer: UnsafeMutablePointer<GstBuffer>, on pad: UnsafeMutablePointer<GstPad>) -> UInt64? {
        let pts = UInt64(buffer.pointee.pts)
        guard pts != UInt64.max, let parent = gst_pad_get_parent_element(pad) else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(parent)) }
        guard let clock = gst_element_get_clock(parent) else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(clock)) }
        let now = UInt64(gst_clock_get_time(clock))
        let captured = UInt64(gst_element_get_base_time(parent)) &+ runningTime(pad, pts: pts)
        return now >= captured ? now - captured : nil
    }
}
