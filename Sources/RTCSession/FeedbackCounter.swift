internal import CGStreamer
import CGstShim
import Synchronization

/// Counts, on the streaming threads, the RTP we send and what the receiver's RTCP says
/// about it (NACKs, reception reports, REMB); the RTCP we send (our sender
/// reports' NTP times, for round trips).
final class FeedbackCounter: Sendable {
    private struct Counts {
        var interval = FeedbackInterval(sent: 0, nacked: 0)
        var nacked: Set<UInt16> = []
    }
    private struct Reports {
        /// Our media SSRC (read from the packets on the send pad).
        var mediaSSRC: UInt32?
        /// The last report on it: extended highest sequence number, cumulative lost.
        var last: (highest: UInt32, lost: Int32)?
        /// The last `ReceptionReport` on it: highest sequence number, packets received.
        var lastReception: (highest: UInt64, received: UInt64)?
        /// Bytes each of the receiver's streams had in its last report.
        var receivedBytes: [UInt32: UInt64] = [:]
        /// When our receiver's previous report arrived (monotonic µs).
        var lastReportMicros: Int64?
        /// Our recent sender reports: NTP middle 32 bits → monotonic µs when sent.
        var senderReports: [(ntp: UInt32, sentMicros: Int64)] = []
        /// When transport-wide feedback last arrived (monotonic µs): while it flows, it
        /// counts the loss, and reception reports' blocks would count it twice.
        var transportFeedbackMicros: Int64?
    }
    private let counts = Mutex(Counts())
    private let reports = Mutex(Reports())
    let probeInstalled = Atomic<Bool>(false)
    /// Transport-wide sequence numbers and the receiver's feedback on them.
    let transport = TransportSequencer()
    /// How long transport-wide feedback stands in for reception reports' loss after it arrived.
    static let transportFeedbackFreshMicros: Int64 = 2_000_000

    func sent(_ packets: UInt64, bytes: UInt64, ssrc: UInt32?) {
        counts.withLock { $0.interval.sent += packets; $0.interval.bytes += bytes }
        if let ssrc {
            reports.withLock { r in if r.mediaSSRC != ssrc { r.mediaSSRC = ssrc; r.last = nil; r.lastReception = nil } }
        }
    }

    /// The counts since the last call, then zero; with what transport-wide feedback said.
    func take() -> FeedbackInterval {
        var interval = counts.withLock { c in
            defer { c = Counts() }
            var interval = c.interval
            interval.nacked = c.nacked.count
            return interval
        }
        let fromTransport = transport.take()
        // Our own receiver's reports, while they flow, stand instead of transport-wide
        // feedback: it runs webrtcbin, whose rtpsession reads the transport-wide number
        // only in the one-byte header form, so its feedback shows every packet carrying
        // the pose (two-byte form) as lost: 20–36 % "loss" on loopback, the rate on the
        // 150 kbit/s floor within 8 s of a call with voice. (Not counted then either: the
        // pacer's hold is taken off our receiver's queueing, `takeFeedback`.)
        let now = Int64(g_get_monotonic_time())
        let ownReports = reports.withLock { r in r.lastReportMicros.map { now - $0 < Self.transportFeedbackFreshMicros } ?? false }
        if fromTransport.messages > 0, !ownReports {
            interval.transportFeedbackMessages = fromTransport.messages
            interval.reportedExpected += fromTransport.expected
            interval.reportedLost += fromTransport.lost
            interval.receivedBytes += fromTransport.receivedBytes
            interval.receivedSpanNanos += fromTransport.receivedSpanNanos
            interval.queueingMs += fromTransport.queueingMs
        }
        return interval
    }

    /// Reads one incoming RTCP buffer: generic NACKs (RTPFB FMT 1: PID and a bitmask of
    /// the 16 packets after it, RFC 4585 §6.2.1), report blocks on our media SSRC (in
    /// RR and SR) and REMB (PSFB FMT 15, "REMB": 6-bit exponent, 18-bit mantissa, in
    /// bit/s) and transport-wide feedback (RTPFB FMT 15, to `transport`). Keyframe
    /// requests (PLI, FIR) are counted where they reach the encoder
    /// (`PublisherMedia.keyframeRequests`).
    func record(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        var rtcp = GstRTCPBuffer()
        guard gst_rtcp_buffer_map(buffer, GST_MAP_READ, &rtcp) != 0 else { return }
        defer { gst_rtcp_buffer_unmap(&rtcp) }
        let now = g_get_monotonic_time()
        var packet = GstRTCPPacket()
        var more = gst_rtcp_buffer_get_first_packet(&rtcp, &packet) != 0
        var missing: [UInt16] = []
        var blocks: [(ssrc: UInt32, highest: UInt32, lost: Int32, lsr: UInt32, dlsr: UInt32)] = []
        var remb: Double?
        var transportFeedback: [[UInt8]] = []
        while more {
            let type = gst_rtcp_packet_get_type(&packet)
            if type == GST_RTCP_TYPE_RTPFB, gst_rtcp_packet_fb_get_type(&packet) == GST_RTCP_RTPFB_TYPE_TWCC,
               let fci = gst_rtcp_packet_fb_get_fci(&packet) {
                transportFeedback.append(Array(UnsafeBufferPointer(start: fci, count: 4 * Int(gst_rtcp_packet_fb_get_fci_length(&packet)))))
            } else if type == GST_RTCP_TYPE_RTPFB, gst_rtcp_packet_fb_get_type(&packet) == GST_RTCP_RTPFB_TYPE_NACK,
               let fci = gst_rtcp_packet_fb_get_fci(&packet) {
                let words = Int(gst_rtcp_packet_fb_get_fci_length(&packet))
                for w in 0..<words {
                    let p = fci + 4 * w
                    let pid = UInt16(p[0]) << 8 | UInt16(p[1]), blp = UInt16(p[2]) << 8 | UInt16(p[3])
                    missing.append(pid)
                    for bit in 0..<16 where blp & (1 << bit) != 0 { missing.append(pid &+ UInt16(bit + 1)) }
                }
            } else if type == GST_RTCP_TYPE_RR || type == GST_RTCP_TYPE_SR {
                for n in 0..<gst_rtcp_packet_get_rb_count(&packet) {
                    var ssrc: guint32 = 0, fraction: guint8 = 0, lost: gint32 = 0, highest: guint32 = 0
                    var jitter: guint32 = 0, lsr: guint32 = 0, dlsr: guint32 = 0
                    gst_rtcp_packet_get_rb(&packet, n, &ssrc, &fraction, &lost, &highest, &jitter, &lsr, &dlsr)
                    blocks.append((ssrc, highest, lost, lsr, dlsr))
                }
            } else if type == GST_RTCP_TYPE_PSFB {
                if gst_rtcp_packet_fb_get_type(&packet) == GST_RTCP_PSFB_TYPE_AFB, let fci = gst_rtcp_packet_fb_get_fci(&packet),
                          gst_rtcp_packet_fb_get_fci_length(&packet) >= 2,
                          fci[0] == 0x52, fci[1] == 0x45, fci[2] == 0x4D, fci[3] == 0x42 {   // "REMB"
                    let exponent = Int(fci[5] >> 2)
                    let mantissa = (UInt64(fci[5] & 0x03) << 16) | (UInt64(fci[6]) << 8) | UInt64(fci[7])
                    remb = Double(mantissa << UInt64(min(exponent, 40))) / 1000
                }
            }
            more = gst_rtcp_packet_move_to_next(&packet) != 0
        }
        for fci in transportFeedback { transport.receive(fci: fci) }
        var expected: UInt64 = 0, lostDelta: Int64 = 0
        var roundTrips: [Double] = []
        if !transportFeedback.isEmpty { reports.withLock { $0.transportFeedbackMicros = Int64(now) } }
        if !blocks.isEmpty {
            reports.withLock { r in
                let transportCounts = r.transportFeedbackMicros.map { Int64(now) - $0 < Self.transportFeedbackFreshMicros } ?? false
                for block in blocks where block.ssrc == r.mediaSSRC {
                    if let last = r.last, !transportCounts {
                        let step = block.highest &- last.highest
                        // A step backwards or absurdly far is a reset, not loss.
                        if step > 0, step < 1 << 20 {
                            expected += UInt64(step)
                            lostDelta += Int64(block.lost) - Int64(last.lost)
                        }
                    }
                    r.last = (block.highest, block.lost)
                    if block.lsr != 0, let sr = r.senderReports.last(where: { $0.ntp == block.lsr }) {
                        let elapsedMs = Double(Int64(now) - sr.sentMicros) / 1000
                        let heldMs = Double(block.dlsr) * 1000 / 65536
                        if elapsedMs >= heldMs { roundTrips.append(elapsedMs - heldMs) }
                    }
                }
            }
        }
        guard !missing.isEmpty || expected > 0 || !roundTrips.isEmpty || remb != nil else { return }
        counts.withLock { c in
            c.nacked.formUnion(missing)
            c.interval.reportedExpected += expected
            c.interval.reportedLost += lostDelta
            c.interval.roundTripsMs += roundTrips
            if let remb { c.interval.rembKbps = remb }
        }
    }

    /// Our receiver's own reports (the `feedback` data channel): the media stream's
    /// packets expected and lost since its previous report, and its queueing delay.
    func received(_ streams: [ReceptionReport]) {
        var expected: UInt64 = 0, lost: Int64 = 0, bytes: UInt64 = 0, queue: Double?, span: UInt64 = 0
        var usage: DelayTrend.Usage?, trend: Double?
        let now = Int64(g_get_monotonic_time())
        reports.withLock { r in
            if let last = r.lastReportMicros, now > last { span = UInt64(now - last) * 1000 }
            r.lastReportMicros = now
            // Bytes: every stream (media and retransmissions share the link).
            for stream in streams {
                if let last = r.receivedBytes[stream.ssrc], stream.bytes >= last { bytes += stream.bytes - last }
                r.receivedBytes[stream.ssrc] = stream.bytes
            }
            if r.receivedBytes.count > 16 { r.receivedBytes = r.receivedBytes.filter { key, _ in streams.contains { $0.ssrc == key } } }
            guard let media = streams.first(where: { $0.ssrc == r.mediaSSRC }) else { return }
            if let last = r.lastReception, media.highestSeq > last.highest, media.highestSeq - last.highest < 1 << 20 {
                expected = media.highestSeq - last.highest
                lost = Int64(expected) - Int64(media.received &- last.received)
            }
            r.lastReception = (media.highestSeq, media.received)
            queue = media.queueMs
            usage = media.usage
            trend = media.trend
        }
        guard expected > 0 || bytes > 0 || queue != nil || usage != nil else { return }
        counts.withLock { c in
            c.interval.reportedExpected += expected
            c.interval.reportedLost += lost
            c.interval.receivedBytes += bytes
            c.interval.receivedSpanNanos += span
            if let queue { c.interval.queueingMs.append(queue) }
            if usage == .overusing { c.interval.overusing = true }
            if let trend { c.interval.delayTrend = max(c.interval.delayTrend ?? trend, trend) }
        }
    }

    /// Notes the NTP time of each sender report in one outgoing RTCP buffer.
    func recordOutgoing(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        var rtcp = GstRTCPBuffer()
        guard gst_rtcp_buffer_map(buffer, GST_MAP_READ, &rtcp) != 0 else { return }
        defer { gst_rtcp_buffer_unmap(&rtcp) }
        var packet = GstRTCPPacket()
        var more = gst_rtcp_buffer_get_first_packet(&rtcp, &packet) != 0
        while more {
            if gst_rtcp_packet_get_type(&packet) == GST_RTCP_TYPE_SR {
                var ssrc: guint32 = 0, ntp: guint64 = 0, rtpTime: guint32 = 0, packets: guint32 = 0, octets: guint32 = 0
                gst_rtcp_packet_sr_get_sender_info(&packet, &ssrc, &ntp, &rtpTime, &packets, &octets)
                let middle = UInt32(truncatingIfNeeded: ntp >> 16), now = Int64(g_get_monotonic_time())
                reports.withLock { r in
                    r.senderReports.append((middle, now))
                    if r.senderReports.count > 64 { r.senderReports.removeFirst(r.senderReports.count - 64) }
                }
            }
            more = gst_rtcp_packet_move_to_next(&packet) != 0
        }
    }
}

extension WebRTCPeer {
    /// The static pads of webrtcbin's internal rtpbin named `names` (nil where there is
    /// none), once: nil when there is no rtpbin yet, no first pad yet, or `once` was
    /// already set (another caller has them). The probes' installers share this.
    func claimRTPBinPads(_ names: [String], once: borrowing Atomic<Bool>) -> [Pad?]? {
        guard let rtpbin = gst_bin_get_by_name(gcast(webrtc.object, to: GstBin.self), "rtpbin") else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(rtpbin)) }
        let pads = names.map { name in gst_element_get_static_pad(rtpbin, name).map { Pad(takingOwnership: $0) } }
        guard pads.first.flatMap({ $0 }) != nil,
              once.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return nil }
        return pads
    }

    /// What the receiver reported since the last call (the first call starts the
    /// counting: probes on the session's RTCP input and output, once the session exists).
    package func takeFeedback() -> FeedbackInterval {
        if !feedback.probeInstalled.load(ordering: .acquiring) { installFeedbackProbe() }
        var interval = feedback.take()
        let pacerAge = pacer?.takeLowestAgeMs()
        // Transport-wide feedback measures the queue from the packets' departure, after
        // the pacer's hold: nothing of it to take off.
        interval.pacerAgeMs = interval.transportFeedbackMessages > 0 ? nil : pacerAge
        return interval
    }

    /// Transport-wide feedback messages from this peer refused as malformed so far.
    package var transportFeedbackRefused: UInt64 { feedback.transport.malformedFeedback }

    /// Counts the RTP packets that go into `pad` (a send pad of this peer) and notes their SSRC.
    func countSentPackets(on pad: Pad) {
        let counter = feedback
        @Sendable func ssrc(_ buffer: UnsafeMutablePointer<GstBuffer>) -> UInt32? {
            var header = [UInt8](repeating: 0, count: 12)
            let copied = header.withUnsafeMutableBytes { gst_buffer_extract(buffer, 0, $0.baseAddress, 12) }
            guard copied == 12 else { return nil }
            return header[8...11].reduce(0) { $0 << 8 | UInt32($1) }
        }
        let data = GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
        pad.addProbe(data) { info in
            if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue != 0,
               let list = gst_pad_probe_info_get_buffer_list(info) {
                let first = gst_buffer_list_length(list) > 0 ? gst_buffer_list_get(list, 0).flatMap(ssrc) : nil
                counter.sent(UInt64(gst_buffer_list_length(list)), bytes: UInt64(gst_buffer_list_calculate_size(list)), ssrc: first)
            } else if let buffer = gst_pad_probe_info_get_buffer(info) {
                counter.sent(1, bytes: UInt64(gst_buffer_get_size(buffer)), ssrc: ssrc(buffer))
            }
            return GST_PAD_PROBE_OK
        }
    }

    private func installFeedbackProbe() {
        guard let pads = claimRTPBinPads(["recv_rtcp_sink_0", "send_rtcp_src_0"], once: feedback.probeInstalled),
              let incoming = pads[0] else { return }
        let counter = feedback
        incoming.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            if let buffer = gst_pad_probe_info_get_buffer(info) { counter.record(buffer) }
            return GST_PAD_PROBE_OK
        }
        pads[1]?.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            if let buffer = gst_pad_probe_info_get_buffer(info) { counter.recordOutgoing(buffer) }
            return GST_PAD_PROBE_OK
        }
        // Counting starts now: what was sent before the probe saw any NACK does not count.
        _ = feedback.take()
    }
}
