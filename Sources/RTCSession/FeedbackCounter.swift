internal import CGStreamer
import CGstShim
import Synchronization

/// What a peer's receiver told us about the RTP we sent it over one interval: packets we
/// sent on its send pad and distinct packets it asked again for (generic NACK). A
/// receiver that NACKs (ours, Chromium, aiortc) asks for every packet it misses, at
/// once, so `nacked / sent` is the interval's loss long before a full reception report
/// would say it.
public struct FeedbackInterval: Sendable, Hashable {
    public var sent: UInt64
    /// The RTP bytes of those packets.
    public var bytes: UInt64
    public var nacked: Int
    public init(sent: UInt64, bytes: UInt64 = 0, nacked: Int) { self.sent = sent; self.bytes = bytes; self.nacked = nacked }
}

/// Counts, on the streaming threads, RTP packets sent and NACKed sequence numbers.
final class FeedbackCounter: Sendable {
    private struct Counts { var sent: UInt64 = 0; var bytes: UInt64 = 0; var nacked: Set<UInt16> = [] }
    private let counts = Mutex(Counts())
    let probeInstalled = Atomic<Bool>(false)

    func sent(_ packets: UInt64, bytes: UInt64) { counts.withLock { $0.sent += packets; $0.bytes += bytes } }

    /// The counts since the last call, then zero.
    func take() -> FeedbackInterval {
        counts.withLock { c in
            defer { c = Counts() }
            return FeedbackInterval(sent: c.sent, bytes: c.bytes, nacked: c.nacked.count)
        }
    }

    /// Reads the generic NACKs (RTPFB, FMT 1: PID and a bitmask of the 16 packets after
    /// it, RFC 4585 §6.2.1) of one incoming RTCP buffer.
    func record(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        var rtcp = GstRTCPBuffer()
        guard gst_rtcp_buffer_map(buffer, GST_MAP_READ, &rtcp) != 0 else { return }
        defer { gst_rtcp_buffer_unmap(&rtcp) }
        var packet = GstRTCPPacket()
        var more = gst_rtcp_buffer_get_first_packet(&rtcp, &packet) != 0
        var missing: [UInt16] = []
        while more {
            if gst_rtcp_packet_get_type(&packet) == GST_RTCP_TYPE_RTPFB,
               gst_rtcp_packet_fb_get_type(&packet) == GST_RTCP_RTPFB_TYPE_NACK,
               let fci = gst_rtcp_packet_fb_get_fci(&packet) {
                let words = Int(gst_rtcp_packet_fb_get_fci_length(&packet))
                for w in 0..<words {
                    let p = fci + 4 * w
                    let pid = UInt16(p[0]) << 8 | UInt16(p[1]), blp = UInt16(p[2]) << 8 | UInt16(p[3])
                    missing.append(pid)
                    for bit in 0..<16 where blp & (1 << bit) != 0 { missing.append(pid &+ UInt16(bit + 1)) }
                }
            }
            more = gst_rtcp_packet_move_to_next(&packet) != 0
        }
        guard !missing.isEmpty else { return }
        counts.withLock { $0.nacked.formUnion(missing) }
    }
}

extension WebRTCPeer {
    /// Packets sent and NACKed since the last call (the first call starts the counting of
    /// NACKs: a probe on the session's RTCP input, after SRTP, once the session exists).
    package func takeFeedback() -> FeedbackInterval {
        if !feedback.probeInstalled.load(ordering: .acquiring) { installFeedbackProbe() }
        return feedback.take()
    }

    /// Counts the RTP packets that go into `pad` (a send pad of this peer).
    func countSentPackets(on pad: Pad) {
        let counter = feedback
        let data = GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
        pad.addProbe(data) { info in
            if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue != 0,
               let list = gst_pad_probe_info_get_buffer_list(info) {
                counter.sent(UInt64(gst_buffer_list_length(list)), bytes: UInt64(gst_buffer_list_calculate_size(list)))
            } else if let buffer = gst_pad_probe_info_get_buffer(info) {
                counter.sent(1, bytes: UInt64(gst_buffer_get_size(buffer)))
            }
            return GST_PAD_PROBE_OK
        }
    }

    private func installFeedbackProbe() {
        guard let rtpbin = gst_bin_get_by_name(gcast(webrtc.object, to: GstBin.self), "rtpbin") else { return }
        defer { gst_object_unref(UnsafeMutableRawPointer(rtpbin)) }
        guard let raw = gst_element_get_static_pad(rtpbin, "recv_rtcp_sink_0") else { return }
        guard feedback.probeInstalled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            gst_object_unref(UnsafeMutableRawPointer(raw))
            return
        }
        let pad = Pad(takingOwnership: raw)
        let counter = feedback
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            if let buffer = gst_pad_probe_info_get_buffer(info) { counter.record(buffer) }
            return GST_PAD_PROBE_OK
        }
        // Counting starts now: what was sent before the probe saw any NACK does not count.
        _ = feedback.take()
    }
}
