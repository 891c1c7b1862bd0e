internal import CGStreamer
import CGstShim
import Foundation
import Synchronization

/// What a receiver got of one RTP stream, as it tells the sender on the `feedback` data
/// channel (docs/NETWORK.md): our own subscriber's substitute for RTCP reception reports,
/// which webrtcbin 1.22 stops sending while it sends early feedback. rtpsession leaves
/// report blocks out of early RTCP (NACK, PLI) and keeps rescheduling the regular
/// packet while early ones are pending, so on a lossy link, exactly when the sender
/// needs to know the loss, the reports stop (measured at 600 kbit/s: 47 RTCP packets
/// in 6 s, none with a report block) and NACKs undercount it (the jitter buffer gives
/// up on runs it cannot recover in time without asking).
///
/// - `highestSeq`: the extended highest sequence number received; `received` and
///   `bytes`: packets and RTP bytes received (cumulative), so the sender derives loss
///   over any interval as RFC 3550 does (expected − received).
/// - `queueMs`: one-way queueing delay (`OneWayQueue`): this window's lowest transit
///   time (arrival − RTP timestamp) over the lowest of the last 10 s, forgotten once a
///   longer path has held flat for 1.5 s: rises when a queue builds on the path,
///   whatever the clocks' offset.
/// - `trend` and `usage`: the delay gradient's trend (`DelayTrend.modifiedTrend`) and
///   usage since the last report (`overusing` when any frame since read so): a queue
///   starting, before `queueMs` shows it.
public struct ReceptionReport: Codable, Sendable, Hashable {
    public var ssrc: UInt32
    public var highestSeq: UInt64
    public var received: UInt64
    public var bytes: UInt64
    public var queueMs: Double?
    public var trend: Double?
    public var usage: DelayTrend.Usage?

    public init(ssrc: UInt32, highestSeq: UInt64, received: UInt64, bytes: UInt64, queueMs: Double? = nil,
                trend: Double? = nil, usage: DelayTrend.Usage? = nil) {
        self.ssrc = ssrc; self.highestSeq = highestSeq; self.received = received; self.bytes = bytes; self.queueMs = queueMs
        self.trend = trend; self.usage = usage
    }

    /// The feedback channel's label.
    public static let channelLabel = "feedback"
    /// The largest message accepted (a few streams).
    public static let maxMessageBytes = 2048

    /// One `feedback` message: the reports, and when the receiver sent it (µs of its own
    /// monotonic clock), which the sender echoes at once (`Echo`) so the receiver learns
    /// the path's round trip before any packet is lost.
    public struct Message: Codable, Sendable, Hashable {
        public var streams: [ReceptionReport]
        public var sentMicros: Int64?
        public init(streams: [ReceptionReport], sentMicros: Int64? = nil) { self.streams = streams; self.sentMicros = sentMicros }
    }

    /// The sender's answer to a message that carried `sentMicros`: that time, unchanged.
    public struct Echo: Codable, Sendable, Hashable {
        public var echo: Int64
        public init(echo: Int64) { self.echo = echo }
    }

    public static func encode(_ reports: [ReceptionReport], sentMicros: Int64? = nil) -> String {
        let data = (try? JSONEncoder().encode(Message(streams: reports, sentMicros: sentMicros))) ?? Data("{\"streams\":[]}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The reports of one message; nil for anything else (too large, not JSON, wrong shape).
    public static func decode(_ text: String) -> [ReceptionReport]? {
        decodeMessage(text)?.streams
    }

    /// One whole message; nil for anything else.
    public static func decodeMessage(_ text: String) -> Message? {
        guard text.utf8.count <= maxMessageBytes,
              let message = try? JSONDecoder().decode(Message.self, from: Data(text.utf8)),
              message.streams.count <= 8,
              message.streams.allSatisfy({ ($0.queueMs ?? 0).isFinite && ($0.trend ?? 0).isFinite && $0.received <= $0.highestSeq + 1 << 20 }) else {
            return nil
        }
        return message
    }

    public static func encodeEcho(_ sentMicros: Int64) -> String {
        "{\"echo\":\(sentMicros)}"
    }

    /// The send time an echo returns; nil for anything else.
    public static func decodeEcho(_ text: String) -> Int64? {
        guard text.utf8.count <= 64, let echo = try? JSONDecoder().decode(Echo.self, from: Data(text.utf8)) else { return nil }
        return echo.echo
    }
}

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
