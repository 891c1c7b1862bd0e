import RTCSession

/// One subscriber's bandwidth estimate and the signals behind it, as last judged.
public struct CongestionSnapshot: Sendable {
    public var peer: String
    public var estimateKbps: Int
    public var encoderKbps: Int
    public var sentKbps: Double?
    public var loss: Double?
    public var roundTripMs: Double?
    public var baseRoundTripMs: Double?
    public var rembKbps: Double?
    public var queueMs: Double?
    /// Our receiver's delay trend, and whether it read a queue starting, in the last interval.
    public var delayTrend: Double?
    public var overusing = false
    /// Transport-wide feedback messages read so far.
    public var transportFeedback: Int
    public var reason: String
    /// Transport-wide feedback messages refused as malformed so far.
    public var transportFeedbackRefused: UInt64 = 0
    /// Packets the pacer held back so far.
    public var pacedPackets: UInt64?
    /// The simulated link's packet counts so far (with `--link`).
    public var link: LinkSimulatorStats?

    init(peer: String, controller c: BitrateController, encoderKbps: Int) {
        self.peer = peer; estimateKbps = Int(c.estimateKbps); self.encoderKbps = encoderKbps
        sentKbps = c.lastSentKbps; loss = c.lastLoss; roundTripMs = c.lastRoundTripMs
        baseRoundTripMs = c.baseRoundTripMs; rembKbps = c.lastREMBKbps; queueMs = c.lastQueueMs; reason = c.lastReason.rawValue
        delayTrend = c.lastDelayTrend; overusing = c.lastOverusing
        transportFeedback = c.transportFeedbackMessages
    }
}
