internal import CGStreamer
import CGstShim

/// Makes a webrtcbin's receive sessions ask for lost packets (NACK) in time.
///
/// webrtcbin 1.22 sets a jitter buffer's `do-retransmission` from the transceiver's
/// `do-nack` only when it already knows which m-line the new SSRC belongs to. Our
/// publisher's offer carries no `a=ssrc` (its codec preferences leave the per-stream
/// SSRC out), so when the first packet creates the jitter buffer the SSRC is not yet
/// mapped and webrtcbin leaves retransmission off. A handler of our own on the internal
/// rtpbin's `new-jitterbuffer`, run after webrtcbin's, turns it on.
///
/// Handlers on rtpbin's `element-added` and the same `new-jitterbuffer` (set again
/// there: values set before the stream starts did not always hold) shorten each
/// session's regular RTCP interval. Under AVPF a receiver may send one early feedback
/// packet (NACK, PLI, FIR) per regular interval, and rtpsession's defaults (receivers'
/// share of 5 % of an estimated bandwidth, and a 5 s `rtcp-min-interval`, which AVPF
/// uses as T_rr_interval) put that interval at 0.5 to 5 s, so a repeated NACK (after a
/// lost retransmission) waits for it and reaches the sender after the jitter buffer
/// gave the packet up. 40 kB/s for receiver reports and a 20 ms minimum bring it to
/// 10 to 30 ms: some 50 reports of 70 to 100 bytes a second (about 30 kbit/s, 1.5 %
/// of a 2 Mbit/s stream) from the receiver.
///
/// The same `new-jitterbuffer` handler lets each jitter buffer start on its first packets
/// (`faststart-min-packets`): by default it holds the first packet for its whole latency
/// (200 ms in the baseline profile), then releases what piled up at once, so the first
/// ten frames of a session were shown 270 down to 35 ms after capture, one every few
/// milliseconds (a start-up burst). Packets in sequence are pushed at once
/// anyway after the start; the latency still bounds the wait for a missing one.
///
/// The handlers capture nothing and live as long as the rtpbin.
enum RetransmissionRequests {
    /// Receiver RTCP bandwidth in bytes per second (rtpsession's `rtcp-rr-bandwidth`).
    static let receiverReportBandwidth = 40000
    /// Minimum regular RTCP interval in nanoseconds (rtpsession's `rtcp-min-interval`).
    static let minimumReportInterval = 20_000_000
    /// Consecutive packets after which a new jitter buffer starts pushing.
    static let fastStartPackets = 2

    /// Connects the handler on `webrtc`'s rtpbin; false when webrtcbin has no rtpbin
    /// named "rtpbin" (a webrtcbin other than 1.22's).
    static func enable(on webrtc: Element) -> Bool {
        guard let rtpbin = gst_bin_get_by_name(gcast(webrtc.object, to: GstBin.self), "rtpbin") else {
            return false
        }
        defer { gst_object_unref(UnsafeMutableRawPointer(rtpbin)) }
        configureSessions(in: UnsafeMutableRawPointer(rtpbin))
        // rtpbin outlives its handlers (they go with it), so its address is safe to keep.
        let address = Int(bitPattern: UnsafeMutableRawPointer(rtpbin))
        let sessions = Signal.connect(UnsafeMutableRawPointer(rtpbin), "element-added") { (_: UnsafeMutableRawPointer?) in
            configureSessions(in: UnsafeMutableRawPointer(bitPattern: address)!)
        }
        // void new-jitterbuffer(GstElement *rtpbin, GstElement *jitterbuffer, guint session, guint ssrc)
        let jitterBuffers = Signal.connect(UnsafeMutableRawPointer(rtpbin), "new-jitterbuffer") { (jitterBuffer: UnsafeMutableRawPointer?, _: UInt32, _: UInt32) in
            guard let jitterBuffer else { return }
            configure(rtpbin: UnsafeMutableRawPointer(bitPattern: address)!, jitterBuffer: jitterBuffer)
        }
        return sessions != 0 && jitterBuffers != 0
    }

    fileprivate static func configure(rtpbin: UnsafeMutableRawPointer, jitterBuffer: UnsafeMutableRawPointer) {
        gst_util_set_object_arg(gcast(jitterBuffer, to: GObject.self), "do-retransmission", "true")
        gst_util_set_object_arg(gcast(jitterBuffer, to: GObject.self), "faststart-min-packets", String(fastStartPackets))
        // NACK a packet when a later one shows it missing, not when it is merely later than
        // the jitter buffer expected: a queue filling at a bottleneck delays every packet,
        // and asking for each again added a fifth to the load of a full link.
        gst_util_set_object_arg(gcast(jitterBuffer, to: GObject.self), "rtx-next-seqnum", "false")
        configureSessions(in: rtpbin)
    }

    /// Sets the RTCP timing on every rtpsession element in `rtpbin`.
    fileprivate static func configureSessions(in rtpbin: UnsafeMutableRawPointer) {
        guard let children = gst_bin_iterate_elements(gcast(rtpbin, to: GstBin.self)) else { return }
        defer { gst_iterator_free(children) }
        var item = GValue()
        defer { g_value_unset(&item) }
        while gst_iterator_next(children, &item) == GST_ITERATOR_OK {
            if let child = g_value_get_object(&item),
               let factory = gst_element_get_factory(gcast(child, to: GstElement.self)),
               objectName(UnsafeMutableRawPointer(factory)) == "rtpsession" {
                let object = gcast(child, to: GObject.self)
                gst_util_set_object_arg(object, "rtcp-rr-bandwidth", String(receiverReportBandwidth))
                gst_util_set_object_arg(object, "rtcp-min-interval", String(minimumReportInterval))
            }
            g_value_reset(&item)
        }
    }
}
