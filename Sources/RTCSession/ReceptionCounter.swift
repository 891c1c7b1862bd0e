internal import CGStreamer
import CGstShim
import Foundation
import Synchronization

/// Counts, on the receiving streaming thread, the RTP packets of each SSRC (after SRTP).
final class ReceptionCounter: Sendable {
    private struct Stream {
        var highest: UInt64
        var received: UInt64 = 0
        var bytes: UInt64 = 0
        var clockRate: Double = 90_000
        var queue = OneWayQueue()
        var trend = DelayTrend()
        /// The RTP timestamp extended past its wraps (the trend's send times must grow).
        var timestamp: Int64?
        /// The worst usage since the last report.
        var usage: DelayTrend.Usage?
    }
    private let streams = Mutex([UInt32: Stream]())
    let installed = Atomic<Bool>(false)

    func record(_ buffer: UnsafeMutablePointer<GstBuffer>, nowMicros: Int64) {
        var header = (UInt64(0), UInt32(0))   // 12 bytes fit in these two words
        let copied = withUnsafeMutableBytes(of: &header) { gst_buffer_extract(buffer, 0, $0.baseAddress, 12) }
        guard copied == 12 else { return }
        let bytes = withUnsafeBytes(of: header) { Array($0.prefix(12)) }
        guard bytes[0] >> 6 == 2 else { return }
        let seq = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        let timestamp = bytes[4...7].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let ssrc = bytes[8...11].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let size = UInt64(gst_buffer_get_size(buffer))
        streams.withLock { all in
            var s = all[ssrc] ?? Stream(highest: UInt64(seq))
            // Extend the sequence number around the highest seen (RFC 3550 A.1, simplified).
            let last = UInt16(truncatingIfNeeded: s.highest)
            let delta = Int16(bitPattern: seq &- last)
            if delta > 0 { s.highest += UInt64(delta) }
            s.received += 1
            s.bytes += size
            let transit = Double(nowMicros) / 1000 - Double(timestamp) / s.clockRate * 1000
            s.queue.add(transitMs: transit)
            let extended = s.timestamp.map { $0 + Int64(Int32(bitPattern: timestamp &- UInt32(truncatingIfNeeded: $0))) } ?? Int64(timestamp)
            if extended > s.timestamp ?? .min { s.timestamp = extended }
            if let usage = s.trend.add(sendMs: Double(extended) / s.clockRate * 1000, arrivalMs: Double(nowMicros) / 1000) {
                s.usage = s.usage == .overusing ? .overusing : usage
            }
            all[ssrc] = s
        }
    }

    /// Every stream's counts; closes the transit window (call every few hundred ms).
    func reports(nowMicros: Int64) -> [ReceptionReport] {
        streams.withLock { all in
            all.map { ssrc, stream in
                var s = stream
                let queue = s.queue.close(nowMicros: nowMicros)
                let usage = s.usage
                s.usage = nil
                all[ssrc] = s
                return ReceptionReport(ssrc: ssrc, highestSeq: s.highest, received: s.received, bytes: s.bytes,
                                       queueMs: queue.map { ($0 * 10).rounded() / 10 },
                                       trend: usage == nil ? nil : (s.trend.modifiedTrend * 10).rounded() / 10, usage: usage)
            }.sorted { $0.received > $1.received }
        }
    }
}

extension WebRTCPeer {
    /// What this peer received of each incoming RTP stream so far (the first call starts
    /// the counting: a probe on the session's RTP input, once the session exists).
    package func receptionReports() -> [ReceptionReport] {
        if !reception.installed.load(ordering: .acquiring) { installReceptionProbe() }
        return reception.reports(nowMicros: Int64(g_get_monotonic_time()))
    }

    /// A receiver's `ReceptionReport`s (the text of one `feedback` message): they count
    /// towards the next `takeFeedback`. Nil when the text is not a report; else the
    /// message, whose `sentMicros` the caller echoes (`ReceptionReport.encodeEcho`).
    @discardableResult
    package func receiveReceptionReport(_ text: String) -> ReceptionReport.Message? {
        guard let message = ReceptionReport.decodeMessage(text) else { return nil }
        feedback.received(message.streams)
        return message
    }

    private func installReceptionProbe() {
        guard let pads = claimRTPBinPads(["recv_rtp_sink_0"], once: reception.installed), let pad = pads[0] else { return }
        let counter = reception
        let data = GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
        pad.addProbe(data) { info in
            let now = Int64(g_get_monotonic_time())
            if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue != 0,
               let list = gst_pad_probe_info_get_buffer_list(info) {
                for i in 0..<gst_buffer_list_length(list) {
                    if let buffer = gst_buffer_list_get(list, i) { counter.record(buffer, nowMicros: now) }
                }
            } else if let buffer = gst_pad_probe_info_get_buffer(info) {
                counter.record(buffer, nowMicros: now)
            }
            return GST_PAD_PROBE_OK
        }
    }
}
