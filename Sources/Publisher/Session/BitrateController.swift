import RTCSession

/// One subscriber's bandwidth estimate from the loss its receiver reports, as a pure
/// state machine: feed it what was sent and NACKed since the last call
/// (`WebRTCPeer.takeFeedback`), read `estimateKbps`. `PublisherMedia` runs one per
/// subscriber and gives the shared encoder the lowest (the weakest link decides;
/// docs/NETWORK.md).
///
/// Loss is judged over intervals of at least `minimumPackets` sent packets:
/// - **Down fast**: above `decreaseLoss`, the estimate drops by half the loss fraction
///   (70 % loss: −35 %), and at once to what got through (the interval's sent rate
///   times 1 − loss, less 5 %) when that is lower; at most once per
///   `decreaseSpacingNanos`, so one congestion episode is not counted twice while its
///   NACKs arrive and the encoder slows down.
/// - **Up carefully**: under `increaseLoss`, it grows `increasePerSecond` (10 %/s: from
///   600 kbit/s back to 2 Mbit/s in about 13 s).
/// - In between (a little loss, which a radio link has without congestion) it holds.
/// - Always within `floorKbps…ceilingKbps`.
///
/// Loss only: there is no delay signal yet (a bottleneck that queues before it drops
/// is seen late), see docs/NETWORK.md.
public struct BitrateController: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var ceilingKbps: Int
        public var floorKbps: Int
        public var decreaseLoss = 0.04
        public var increaseLoss = 0.01
        public var increasePerSecond = 0.10
        public var minimumPackets: UInt64 = 20
        /// About the encoder's reaction time (its one-second rate buffer): the loss that
        /// follows a cut until the sent rate comes down is not counted again.
        public var decreaseSpacingNanos: UInt64 = 800_000_000

        public init(ceilingKbps: Int, floorKbps: Int = 150) {
            self.ceilingKbps = ceilingKbps; self.floorKbps = min(floorKbps, ceilingKbps)
        }
    }

    public let configuration: Configuration
    public private(set) var estimateKbps: Double
    /// The loss fraction of the last interval judged (nil before the first).
    public private(set) var lastLoss: Double?
    /// Packets sent and NACKed since the last judgement, and when that was.
    private var pending = FeedbackInterval(sent: 0, nacked: 0)
    private var pendingSince: UInt64?
    private var lastDecreaseNanos: UInt64?

    /// `startKbps`: where the estimate starts (the encoder's current target, so a new
    /// subscriber does not first push the others' rate up), within the bounds.
    public init(configuration: Configuration, startKbps: Int? = nil) {
        self.configuration = configuration
        estimateKbps = Double(min(max(startKbps ?? configuration.ceilingKbps, configuration.floorKbps), configuration.ceilingKbps))
    }

    /// Feeds the packets sent and NACKed since the last call, at `nowNanos`; returns the
    /// estimate in kbit/s.
    @discardableResult
    public mutating func update(_ interval: FeedbackInterval, nowNanos: UInt64) -> Int {
        let since = pendingSince ?? nowNanos
        if pendingSince == nil { pendingSince = nowNanos }
        pending.sent += interval.sent
        pending.bytes += interval.bytes
        pending.nacked += interval.nacked
        guard pending.sent >= configuration.minimumPackets else { return Int(estimateKbps) }
        let loss = min(1, Double(pending.nacked) / Double(pending.sent))
        let seconds = Double(nowNanos &- since) / 1e9
        let deliveredKbps = seconds > 0.05 ? Double(pending.bytes) * 8 * (1 - loss) / seconds / 1000 : nil
        pending = FeedbackInterval(sent: 0, nacked: 0)
        pendingSince = nowNanos
        lastLoss = loss
        if loss > configuration.decreaseLoss {
            if lastDecreaseNanos.map({ nowNanos &- $0 >= configuration.decreaseSpacingNanos }) ?? true {
                estimateKbps *= 1 - 0.5 * loss
                if let deliveredKbps, deliveredKbps > 0 { estimateKbps = min(estimateKbps, 0.95 * deliveredKbps) }
                lastDecreaseNanos = nowNanos
            }
        } else if loss < configuration.increaseLoss {
            // Growth over the interval judged.
            estimateKbps *= 1 + configuration.increasePerSecond * min(seconds, 2)
        }
        estimateKbps = min(max(estimateKbps, Double(configuration.floorKbps)), Double(configuration.ceilingKbps))
        return Int(estimateKbps)
    }
}
