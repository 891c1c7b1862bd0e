import RTCModel

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
/// - **The ceiling follows the path**: room for `roundTrips` retransmission round trips
///   plus `marginMs`, at least `shortPathCeilingMs` and at most `maximumMs`. Three round
///   trips are what a second try takes: the first request's round trip, the
///   retransmission timeout (about one more) before rtpjitterbuffer asks again, and the
///   second request's. A fixed 200 ms ceiling was shorter than an intercontinental round
///   trip (202–223 ms measured on a 200 ms path): no retransmission arrived in time and
///   every loss became a keyframe request. Two round trips left no room for a request or
///   a retransmission lost in turn (1 % loss each way: about 2 % of the repairs): 3 and 5
///   keyframe requests a minute on that path with 1 % loss and no queue at the
///   bottleneck, 1 with the latency held at 700 ms; packets in order pass at once, so the
///   latency's 95th percentile stayed 314–316 ms either way.
/// - **Held while retransmission repairs**: at least one retransmission round trip
///   plus `marginMs` while the jitter buffer asks for any packet again, and no way down
///   until `calmNanos` after the last request. Coming down after `calmNanos` without a
///   packet *lost* took a 1 % lossy 200 ms path back under its round trip every 10–15 s
///   (retransmission had been repairing every loss meanwhile): the next loss was lost
///   for good, a keyframe request and a freeze of up to 0.65 s, 4 a minute.
/// - **Down** after `calmNanos` without loss, lateness or a retransmission asked for:
///   `decay` of the way to the floor per update, so a clean link gets its low latency back.
/// - **Before the path is known** (`unknownPathMs`): a session starts there, not at the
///   floor, and holds it until the path's round trip is known. Started at the 50 ms
///   floor, the first keyframe's losses on an 80 ms path were never repaired (a
///   retransmission takes a round trip), and the latency learnt the path one keyframe
///   request at a time: 5 requests and a 1.5 s freeze in the first 8 s, none after. The
///   round trip comes from the sender's echo of our reception reports
///   (`notePathRoundTrip`), a few hundred milliseconds into the session; then the latency
///   goes to the ceiling, `roundTrips` round trips plus `marginMs` (the floor on a short
///   path): with one round trip plus the margin, a loss noticed only with the next frame,
///   or a retransmission lost in turn, still missed it (3 keyframe requests in the first
///   4 s on the 80 ms path with 3 % loss), and the latency then climbed there by steps
///   anyway. While the jitter buffer waits for a missing packet nothing passes, but
///   packets in order pass at once, so a high start costs only its first frame's wait
///   (rtpjitterbuffer holds the first packet for its latency) and repairs that would
///   otherwise be keyframe requests.
public struct JitterLatency: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var floorMs: Int
        /// The ceiling on a short path (or before a round trip is measured).
        public var shortPathCeilingMs = 200
        /// The ceiling whatever the path (`--max-jitter-latency`).
        public var maximumMs = 1000
        public var marginMs = 40.0
        /// Retransmission round trips the ceiling leaves room for (see the type's notes).
        public var roundTrips = 3.0
        public var growth = 1.5
        public var calmNanos: UInt64 = 10_000_000_000
        public var decay = 0.1
        /// Where a session starts, until the path's round trip is known (nil: the floor).
        public var unknownPathMs: Int?
        public init(floorMs: Int) { self.floorMs = floorMs }
    }

    public let configuration: Configuration
    public private(set) var latencyMs: Int
    private var last: JitterBufferStats?
    private var lastTroubleNanos: UInt64?
    /// When the jitter buffer last asked for a retransmission.
    private var lastRepairNanos: UInt64?
    /// The first update: the start counts as trouble for `calmNanos` (see `unknownPathMs`).
    private var startedNanos: UInt64?
    /// The path's round trip as the sender's echo measured it last (ms).
    public private(set) var pathRoundTripMs: Double?

    public init(configuration: Configuration) {
        self.configuration = configuration
        latencyMs = Self.clamp(configuration.unknownPathMs ?? configuration.floorMs, configuration)
    }

    private static func clamp(_ ms: Int, _ c: Configuration) -> Int {
        max(c.floorMs, min(ms, c.maximumMs))
    }

    /// The path's round trip as far as it is known: the retransmissions' (which includes
    /// a queue on the way) or the echo's, whichever is longer; 0 while neither is known.
    public func roundTripMs(_ stats: JitterBufferStats) -> Double {
        max(stats.retransmissionRoundTripMs, pathRoundTripMs ?? 0)
    }

    /// The most the latency may reach on the path `stats` measured (before any round trip
    /// is known, the start).
    public func ceilingMs(_ stats: JitterBufferStats) -> Int {
        let c = configuration
        let rtt = roundTripMs(stats)
        guard rtt > 0 else { return Self.clamp(max(c.shortPathCeilingMs, c.unknownPathMs ?? 0), c) }
        let path = c.roundTrips * rtt + c.marginMs
        return min(c.maximumMs, max(c.shortPathCeilingMs, Int(path.rounded())))
    }

    /// The path's round trip measured by the sender's echo of a reception report (ms).
    /// The first one ends the start: the latency goes to `roundTrips` of it plus `marginMs`
    /// unless trouble has raised it already. Returns the new latency when it changes.
    public mutating func notePathRoundTrip(_ ms: Double, nowNanos: UInt64) -> Int? {
        guard ms.isFinite, ms >= 0, ms < 10_000 else { return nil }
        let first = pathRoundTripMs == nil
        pathRoundTripMs = ms
        guard first, lastTroubleNanos == nil, configuration.unknownPathMs != nil else { return nil }
        let next = Self.clamp(Int((configuration.roundTrips * ms + configuration.marginMs).rounded()), configuration)
        startedNanos = nil
        guard next != latencyMs else { return nil }
        latencyMs = next
        return next
    }

    /// The new latency (ms) when it should change, else nil.
    public mutating func update(_ stats: JitterBufferStats, nowNanos: UInt64) -> Int? {
        let c = configuration
        defer { last = stats }
        guard let last else {
            // A path still unknown holds the start for `calmNanos`.
            if c.unknownPathMs != nil, pathRoundTripMs == nil { startedNanos = nowNanos }
            return nil
        }
        let trouble = stats.lost > last.lost || stats.late > last.late
        let repairing = stats.retransmissionsRequested > last.retransmissionsRequested
        if repairing { lastRepairNanos = nowNanos }
        let calmSince = max(lastTroubleNanos ?? 0, lastRepairNanos ?? 0, startedNanos ?? 0)
        let rtt = roundTripMs(stats)
        var target = Double(latencyMs)
        if trouble {
            lastTroubleNanos = nowNanos
            target = max(Double(latencyMs) * c.growth, rtt + c.marginMs)
        } else if repairing {
            target = max(target, rtt + c.marginMs)
        } else if nowNanos &- calmSince >= c.calmNanos, latencyMs > c.floorMs {
            target = Double(latencyMs) - max(1, (Double(latencyMs) - Double(c.floorMs)) * c.decay)
        }
        let next = min(max(Int(target.rounded()), c.floorMs), max(ceilingMs(stats), c.floorMs))
        guard next != latencyMs else { return nil }
        latencyMs = next
        return next
    }
}
