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
/// A second handler, on rtpbin's `element-added`, shortens each new session's regular
/// RTCP interval before its first report is scheduled: under AVPF a receiver may send
/// one early feedback packet (NACK, PLI, FIR) per regular interval, and rtpsession's
/// defaults (receivers' share of 5 % of an estimated bandwidth, and a 5 s
/// `rtcp-min-interval`, which AVPF uses as T_rr_interval) put that interval at 0.5 to
/// 5 s, so a repeated NACK (after a lost retransmission) waits for it and reaches the
/// sender after the jitter buffer gave the packet up. 8 kB/s and 20 ms bring it to
/// tens of milliseconds (receiver reports of ~100 bytes: a few kB/s, well under 1 %
/// of a 2 Mbit/s stream).
///
/// Both handlers capture nothing and live as long as the rtpbin.
enum RetransmissionRequests {
    /// Receiver RTCP bandwidth in bytes per second (rtpsession's `rtcp-rr-bandwidth`).
    static let receiverReportBandwidth = 8000
    /// Minimum regular RTCP interval in nanoseconds (rtpsession's `rtcp-min-interval`).
    static let minimumReportInterval = 20_000_000

    /// Connects the handlers on `webrtc`'s rtpbin; false when webrtcbin has no rtpbin
    /// named "rtpbin" (a webrtcbin other than 1.22's). Call before the remote
    /// description is applied (the sessions are made then).
    static func enable(on webrtc: Element) -> Bool {
        guard let rtpbin = gst_bin_get_by_name(UnsafeMutablePointer(OpaquePointer(webrtc.object)), "rtpbin") else {
            return false
        }
        defer { gst_object_unref(UnsafeMutableRawPointer(rtpbin)) }
        let jitterBuffers = g_signal_connect_data(UnsafeMutableRawPointer(rtpbin), "new-jitterbuffer",
                                                  unsafeBitCast(newJitterBufferHandler, to: GCallback.self), nil, nil,
                                                  GConnectFlags(rawValue: 0))
        let sessions = g_signal_connect_data(UnsafeMutableRawPointer(rtpbin), "element-added",
                                             unsafeBitCast(elementAddedHandler, to: GCallback.self), nil, nil,
                                             GConnectFlags(rawValue: 0))
        return jitterBuffers != 0 && sessions != 0
    }

    fileprivate static func configure(jitterBuffer: UnsafeMutableRawPointer) {
        gst_util_set_object_arg(UnsafeMutablePointer(OpaquePointer(jitterBuffer)), "do-retransmission", "true")
    }

    fileprivate static func configure(element: UnsafeMutablePointer<GstElement>) {
        guard let factory = gst_element_get_factory(element),
              String(cString: pcg_object_name(UnsafeMutableRawPointer(factory))) == "rtpsession" else { return }
        let object = UnsafeMutablePointer<GObject>(OpaquePointer(element))
        gst_util_set_object_arg(object, "rtcp-rr-bandwidth", String(receiverReportBandwidth))
        gst_util_set_object_arg(object, "rtcp-min-interval", String(minimumReportInterval))
    }
}

/// `void handler(GstElement *rtpbin, GstElement *jitterbuffer, guint session, guint ssrc, gpointer)`
private let newJitterBufferHandler: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, guint, guint,
                                                    UnsafeMutableRawPointer?) -> Void = { _, jitterBuffer, _, _, _ in
    guard let jitterBuffer else { return }
    RetransmissionRequests.configure(jitterBuffer: jitterBuffer)
}

/// `void handler(GstBin *bin, GstElement *element, gpointer)`
private let elementAddedHandler: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<GstElement>?,
                                                 UnsafeMutableRawPointer?) -> Void = { _, element, _ in
    guard let element else { return }
    RetransmissionRequests.configure(element: element)
}
