internal import CGStreamer

/// Turns on NACKs (`do-retransmission`) in every jitter buffer of a webrtcbin.
///
/// webrtcbin 1.22 sets `do-retransmission` from the transceiver's `do-nack` only when
/// it already knows which m-line the new SSRC belongs to. Our publisher's offer carries
/// no `a=ssrc` (its codec preferences leave the per-stream SSRC out), so when the first
/// packet creates the jitter buffer the SSRC is not yet mapped and webrtcbin leaves
/// retransmission off. A handler of our own on the internal rtpbin's `new-jitterbuffer`,
/// run after webrtcbin's, sets it. It captures nothing and lives as long as the rtpbin.
enum RetransmissionRequests {
    /// Connects the handler on `webrtc`'s rtpbin; false when webrtcbin has no rtpbin
    /// named "rtpbin" (a webrtcbin other than 1.22's).
    static func enable(on webrtc: Element) -> Bool {
        guard let rtpbin = gst_bin_get_by_name(UnsafeMutablePointer(OpaquePointer(webrtc.object)), "rtpbin") else {
            return false
        }
        defer { gst_object_unref(UnsafeMutableRawPointer(rtpbin)) }
        // `void handler(GstElement *rtpbin, GstElement *jitterbuffer, guint session, guint ssrc, gpointer)`
        let handler: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, guint, guint,
                                     UnsafeMutableRawPointer?) -> Void = { _, jitterBuffer, _, _, _ in
            guard let jitterBuffer else { return }
            gst_util_set_object_arg(UnsafeMutablePointer(OpaquePointer(jitterBuffer)), "do-retransmission", "true")
        }
        return g_signal_connect_data(UnsafeMutableRawPointer(rtpbin), "new-jitterbuffer",
                                     unsafeBitCast(handler, to: GCallback.self), nil, nil, GConnectFlags(rawValue: 0)) != 0
    }
}
