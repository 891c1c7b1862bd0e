/// What a peer's receiver told us about the RTP we sent it over one interval.
///
/// - `sent`/`bytes`: packets (and their bytes) we sent on its send pad.
/// - `nacked`: distinct packets it asked again for (generic NACK). A receiver that NACKs
///   (ours, Chromium, aiortc) asks for every packet it misses at once, so `nacked / sent`
///   is the interval's loss before any reception report says it.
/// - `reportedExpected`/`reportedLost`: from its reception reports on our media stream,
///   the packets expected and lost between consecutive reports that arrived in the
///   interval (exact network loss: retransmissions travel on the RTX stream and do not
///   count).
/// - `roundTripsMs`: round-trip times, one per report naming one of our sender reports
///   (RFC 3550 §6.4.1: arrival − LSR − DLSR).
/// - `rembKbps`: the last receiver-estimated maximum bitrate it sent (REMB, Chromium's
///   delay-based estimate when `goog-remb` is negotiated).
/// - `queueingMs`: one-way queueing delays our own receiver measured (`ReceptionReport`,
///   whose counts also add to `reportedExpected`/`reportedLost`).
public struct FeedbackInterval: Sendable, Hashable {
    public var sent: UInt64
    public var bytes: UInt64
    public var nacked: Int
    public var reportedExpected: UInt64 = 0
    public var reportedLost: Int64 = 0
    public var roundTripsMs: [Double] = []
    public var rembKbps: Double?
    public var queueingMs: [Double] = []
    /// Our own receiver's delay trend read a queue starting (`ReceptionReport.usage`) in
    /// a report of the interval.
    public var overusing = false
    /// The highest delay trend our receiver reported in the interval.
    public var delayTrend: Double?
    /// RTP bytes (media and retransmissions) our own receiver reported receiving in the
    /// interval (`ReceptionReport`): what got through.
    public var receivedBytes: UInt64 = 0
    /// The time those bytes took (ns): from the report before the first one counted to
    /// the last one, as they arrived here (`receivedBytes` over it is the rate that got
    /// through, exact whatever the number of reports in the interval).
    public var receivedSpanNanos: UInt64 = 0
    /// The lowest age (since capture) at which our pacer let a packet out in the
    /// interval: what it adds to `queueingMs` is how far this exceeds its usual. nil when
    /// the queueing came from transport-wide feedback, measured after the pacer.
    public var pacerAgeMs: Double?
    /// Transport-wide feedback messages read in the interval (`TransportFeedbackTracker`:
    /// then the loss, bytes, span and queueing above come from them, not from RTCP
    /// reception reports).
    public var transportFeedbackMessages = 0
    public init(sent: UInt64, bytes: UInt64 = 0, nacked: Int, reportedExpected: UInt64 = 0, reportedLost: Int64 = 0,
                roundTripsMs: [Double] = [], rembKbps: Double? = nil) {
        self.sent = sent; self.bytes = bytes; self.nacked = nacked
        self.reportedExpected = reportedExpected; self.reportedLost = reportedLost
        self.roundTripsMs = roundTripsMs; self.rembKbps = rembKbps
    }

    /// The loss the reports give, when they cover at least `minimum` packets.
    public func reportedLoss(minimum: UInt64) -> Double? {
        guard reportedExpected >= minimum, reportedExpected > 0 else { return nil }
        return min(1, max(0, Double(reportedLost) / Double(reportedExpected)))
    }
}
