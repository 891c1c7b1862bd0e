import Foundation

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
