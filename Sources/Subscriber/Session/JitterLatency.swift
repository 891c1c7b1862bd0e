import RTCSession

/// The receive jitter buffer's latency, following what retransmission needs, as a pure
/// state machine: feed it the jitter buffers' counters (`WebRTCPeer.jitterBufferStats`)
/// every second or so; it returns a new latency when one is due.
///
/// The jitter buffer's latency is the longest it waits for a missing packet; packets in
/// order pass at once. 50 ms (the tuned profile) is too short for a retransmission as
/// soon as the path has a queue or any distance: the retransmission arrives after the
/// frame was given up, the frame is dropped whole, and the picture waits for a keyframe
/// (measured: freezes of 0.3–2.4 s on a 600 kbit/s link with a 200 ms buffer, none with
/// a 200 ms latency; 8–21 fps against 30 on an 80 ms link with 2 % loss).
///
/// - **Up** at once when packets were lost or late since the last update: to the
///   retransmission round trip the jitter buffer measured plus `marginMs`, and at least
///   `growth` times the current latency, within the ceiling.
/// - **The ceiling follows the path**: room for two retransmission round trips (a
///   retransmission lost in turn is asked for again) plus `marginMs`, at least
///   `shortPathCeilingMs` and at most `maximumMs`. A fixed 200 ms ceiling was shorter than
///   an intercontinental round trip (202–223 ms measured on a 200 ms path): no
///   retransmission arrived in time and every loss became a keyframe request.
/// - **Held while retransmission repairs**: at least one retransmission round trip
///   plus `marginMs` while the jitter buffer asks for any packet again, and no way down
///   until `calmNanos` after the last request. Coming down after `calmNanos` without a
///   packet *lost* took a 1 % lossy 200 ms path back under its round trip every 10–15 s
///   (retransmission had been repairing every loss meanwhile): the next loss was lost
///   for good, a keyframe request and a freeze of up to 0.65 s, 4 a minute.
/// - **Down** after `calmNanos` without loss, lateness or a retransmission asked for:
///   `decay` of the way to the floor per update, so a clean link gets its low latency back.
public struct JitterLatency: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var floorMs: Int
        /// The ceiling on a short path (or before a round trip is measured).
        public var shortPathCeilingMs = 200
        /// The ceiling whatever the path (`--max-jitter-latency`).
        public var maximumMs = 1000
        public var marginMs = 40.0
        public var growth = 1.5
        public var calmNanos: UInt64 = 10_000_000_000
        public var decay = 0.1
        public init(floorMs: Int) { self.floorMs = floorMs }
    }

    public let configuration: Configuration
    public private(set) var latencyMs: Int
    private var last: JitterBufferStats?
    private var lastTroubleNanos: UInt64?
    /// When the jitter buffer last asked for a retransmission.
    private var lastRepairNanos: UInt64?

    public init(configuration: Configuration) {
        self.configuration = configuration
        latencyMs = configuration.floorMs
    }

    /// The most the latency may reach on the path `stats` measured.
    public func ceilingMs(_ stats: JitterBufferStats) -> Int {
        let c = configuration
        let path = 2 * stats.retransmissionRoundTripMs + c.marginMs
        return min(c.maximumMs, max(c.shortPathCeilingMs, Int(path.rounded())))
    }

    /// The new latency (ms) when it should change, else nil.
    public mutating func update(_ stats: JitterBufferStats, nowNanos: UInt64) -> Int? {
        let c = configuration
        defer { last = stats }
        guard let last else { return nil }
        let trouble = stats.lost > last.lost || stats.late > last.late
        let repairing = stats.retransmissionsRequested > last.retransmissionsRequested
        if repairing { lastRepairNanos = nowNanos }
        let calmSince = max(lastTroubleNanos ?? 0, lastRepairNanos ?? 0)
        var target = Double(latencyMs)
        if trouble {
            lastTroubleNanos = nowNanos
            target = max(Double(latencyMs) * c.growth, stats.retransmissionRoundTripMs + c.marginMs)
        } else if repairing {
            target = max(target, stats.retransmissionRoundTripMs + c.marginMs)
        } else if nowNanos &- calmSince >= c.calmNanos, latencyMs > c.floorMs {
            target = Double(latencyMs) - max(1, (Double(latencyMs) - Double(c.floorMs)) * c.decay)
        }
        let next = min(max(Int(target.rounded()), c.floorMs), max(ceilingMs(stats), c.floorMs))
        guard next != latencyMs else { return nil }
        latencyMs = next
        return next
    }
}
