import RTCSession

/// One subscriber's bandwidth estimate, as a pure state machine: feed it what its
/// receiver reported since the last call (`WebRTCPeer.takeFeedback`), read
/// `estimateKbps`. `PublisherMedia` runs one per subscriber and gives the shared encoder
/// the lowest (the weakest link decides; docs/NETWORK.md).
///
/// Signals, judged over intervals of at least `minimumPackets` sent packets:
/// - **Loss**: the reception reports' fraction when the interval has any (RTCP's from
///   Chromium, about once a second; our receiver's own `ReceptionReport`s, five times
///   a second, since webrtcbin's RTCP stops carrying report blocks on a lossy link),
///   else the NACKed fraction (at once, but a GStreamer receiver undercounts long
///   runs and NACKs packets that are merely late).
/// - **Delay**: the round trip from our sender reports to its reports; a rise of
///   `queueingMs` over the lowest of the last `baseWindowNanos` means a queue is
///   building at a bottleneck before it drops. Our own receiver measures the one-way
///   queueing delay itself (`ReceptionReport.queueMs`): over `oneWayQueueingMs` is the
///   same signal, sooner.
/// - **REMB**, when the receiver sends it (Chromium with `goog-remb`): its delay-based
///   estimate caps ours while fresh.
///
/// Responses:
/// - **Down fast** on congestion (loss above `decreaseLoss`, or queueing), at most once
///   per `decreaseSpacingNanos` (the encoder needs that long to slow down, and its
///   backlog's loss is not counted twice). Heavy loss (over 20 %) means the sender is far
///   above the link: the estimate goes to what got through (the interval's sent rate
///   times 1 − loss) less 10 %. Lighter loss or queueing: −(half the loss), at least
///   −5 % and −15 % for queueing, never below that delivered rate less 10 %.
/// - **Up carefully**: under `increaseLoss` and without queueing. Near the rate that got
///   through at the last congestion (`capacityKbps`: the link is about there, and an
///   overshoot into a full link costs a keyframe): nothing for `holdAfterDecreaseNanos`
///   after a decrease, then +`nearGrowthPerSecond` up to `probeFrom` times it, there
///   nothing until `probeAfterNanos` after the decrease, then +`aboveCapacityGrowthPerSecond`
///   (a probe); `forgetCapacityNanos` past `nearCapacity` times it without loss the link
///   has grown: +`fastGrowthPerSecond` (600 kbit/s back to 2 Mbit/s in about 12 s). Never more than twice what the encoder actually sent plus
///   200 kbit/s (a still scene sends less than asked; the estimate must not run away
///   from what the link has been shown to carry).
/// - Between the two loss thresholds (the random loss of a radio link without
///   congestion, 2 % in the benchmark) it holds. (Cutting there when past the last
///   congestion point kept a probe from sitting in that band above the link, but in
///   the capped-link test it cut on retransmission bursts down to half the link and
///   never recovered within 15 s: left out.)
/// - Always within `floorKbps…ceilingKbps`.
public struct BitrateController: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var ceilingKbps: Int
        public var floorKbps: Int
        public var decreaseLoss = 0.06
        public var increaseLoss = 0.035
        public var fastGrowthPerSecond = 0.25
        public var nearGrowthPerSecond = 0.10
        /// Between the last congestion point and `nearCapacity` times it.
        public var aboveCapacityGrowthPerSecond = 0.05
        /// No growth this long after a decrease (the encoder and the link settle; the
        /// next probe comes later, so fewer probes overshoot into a full link).
        public var holdAfterDecreaseNanos: UInt64 = 2_000_000_000
        /// Up to `probeFrom` times the last congestion point growth is +`nearGrowthPerSecond`;
        /// beyond it only `probeAfterNanos` after the last decrease (each probe into a
        /// full link costs broken frames: fewer, further apart).
        public var probeFrom = 0.95
        public var probeAfterNanos: UInt64 = 6_000_000_000
        /// How far above the last congestion point growth stays careful, and how long
        /// beyond it without loss before the point is forgotten (the link grew).
        public var nearCapacity = 1.15
        public var forgetCapacityNanos: UInt64 = 1_000_000_000
        public var minimumPackets: UInt64 = 40
        public var decreaseSpacingNanos: UInt64 = 700_000_000
        public var queueingMs = 80.0
        public var oneWayQueueingMs = 50.0
        public var baseWindowNanos: UInt64 = 20_000_000_000
        public var rembLifetimeNanos: UInt64 = 2_000_000_000

        public init(ceilingKbps: Int, floorKbps: Int = 150) {
            self.ceilingKbps = ceilingKbps; self.floorKbps = min(floorKbps, ceilingKbps)
        }
    }

    /// Why the estimate last moved (for the `congestion` event and the benchmark).
    public enum Reason: String, Sendable {
        case start, loss, heavyLoss, queueing, remb, growth, careful, hold
    }

    public let configuration: Configuration
    public private(set) var estimateKbps: Double
    /// The last interval judged: its loss, the rate sent in it, its lowest round trip.
    public private(set) var lastLoss: Double?
    public private(set) var lastSentKbps: Double?
    public private(set) var lastRoundTripMs: Double?
    public private(set) var baseRoundTripMs: Double?
    public private(set) var lastREMBKbps: Double?
    public private(set) var lastReason = Reason.start
    /// What got through at the last congestion (kbit/s): the link's capacity as last
    /// seen; growth is careful up to `nearCapacity` times it, then the link may have
    /// grown and it is forgotten.
    public private(set) var capacityKbps: Double?
    private var aboveCapacitySince: UInt64?
    private var pending = FeedbackInterval(sent: 0, nacked: 0)
    private var pendingSince: UInt64?
    /// The lowest round trip reported in the pending interval.
    private var pendingRoundTripMs: Double?
    /// The highest one-way queueing delay our receiver reported in the pending interval.
    private var pendingQueueMs: Double?
    /// The last one-way queueing delay judged.
    public private(set) var lastQueueMs: Double?
    private var lastDecreaseNanos: UInt64?
    private var roundTrips: [(nanos: UInt64, ms: Double)] = []
    private var rembAt: UInt64?

    /// `startKbps`: where the estimate starts (the encoder's current target, so a new
    /// subscriber does not first push the others' rate up), within the bounds.
    public init(configuration: Configuration, startKbps: Int? = nil) {
        self.configuration = configuration
        estimateKbps = Double(min(max(startKbps ?? configuration.ceilingKbps, configuration.floorKbps), configuration.ceilingKbps))
    }

    /// Feeds what was reported since the last call, at `nowNanos`; returns the estimate
    /// in kbit/s.
    @discardableResult
    public mutating func update(_ interval: FeedbackInterval, nowNanos: UInt64) -> Int {
        let c = configuration
        if pendingSince == nil { pendingSince = nowNanos }
        let since = pendingSince ?? nowNanos
        pending.sent += interval.sent
        pending.bytes += interval.bytes
        pending.nacked += interval.nacked
        pending.reportedExpected += interval.reportedExpected
        pending.reportedLost += interval.reportedLost
        pending.receivedBytes += interval.receivedBytes
        if let remb = interval.rembKbps { lastREMBKbps = remb; rembAt = nowNanos }
        // The receiver's queueing delay is relative to the lowest transit it saw; our
        // pacer's share is what its packets' age exceeds the lowest age it let out.
        if let age = interval.pacerAgeMs { notePacerAge(age, at: nowNanos) }
        let ownQueue = interval.pacerAgeMs.map { max(0, $0 - (pacerBaseMs ?? $0)) } ?? 0
        if let queue = interval.queueingMs.max().map({ max(0, $0 - ownQueue) }) {
            pendingQueueMs = max(pendingQueueMs ?? queue, queue)
        }
        if let rtt = interval.roundTripsMs.min() {
            noteRoundTrip(rtt, at: nowNanos)
            pendingRoundTripMs = min(pendingRoundTripMs ?? rtt, rtt)
        }
        // REMB applies at once, whatever the interval.
        if let remb = lastREMBKbps, let at = rembAt, nowNanos &- at <= c.rembLifetimeNanos, remb < estimateKbps {
            estimateKbps = max(remb, Double(c.floorKbps))
            lastReason = .remb
        }
        guard pending.sent >= c.minimumPackets else { return clamp() }
        // Reports when there are any (exact); NACKs otherwise. A GStreamer receiver NACKs
        // on a timer as well as on gaps, so a packet our pacer held back is NACKed too.
        let nackLoss = min(1, Double(pending.nacked) / Double(pending.sent))
        let loss = pending.reportedLoss(minimum: 1) ?? nackLoss
        let seconds = Double(nowNanos &- since) / 1e9
        let sentKbps = seconds > 0.05 ? Double(pending.bytes) * 8 / seconds / 1000 : nil
        // What got through: what our receiver says it received, else what was sent less the loss.
        let received = seconds > 0.05 && pending.receivedBytes > 0 ? Double(pending.receivedBytes) * 8 / seconds / 1000 : nil
        let delivered = received ?? sentKbps.map { $0 * (1 - loss) }
        pending = FeedbackInterval(sent: 0, nacked: 0)
        pendingSince = nowNanos
        lastLoss = loss
        lastSentKbps = sentKbps
        // Only a round trip measured in this interval counts (a stale one would cut again and again).
        let rttRise = pendingRoundTripMs.flatMap { rtt in baseRoundTripMs.map { rtt - $0 > c.queueingMs } } ?? false
        let queueing = rttRise || (pendingQueueMs ?? 0) > c.oneWayQueueingMs
        lastQueueMs = pendingQueueMs
        pendingRoundTripMs = nil
        pendingQueueMs = nil
        let lossy = loss > c.decreaseLoss
        if lossy || queueing {
            guard lastDecreaseNanos.map({ nowNanos &- $0 >= c.decreaseSpacingNanos }) ?? true else { return clamp() }
            var target: Double
            if loss > 0.2, let delivered {
                target = 0.9 * delivered
                lastReason = .heavyLoss
            } else {
                target = estimateKbps * (1 - max(queueing ? 0.15 : 0.05, 0.5 * loss))
                // Loss: never below what got through less 10 %. A queue must drain: below it.
                if let delivered, !queueing { target = max(target, 0.9 * delivered) }
                lastReason = queueing && !lossy ? .queueing : .loss
            }
            // The link as last seen: what our receiver got (media and retransmissions);
            // from RTCP alone, the larger of what was sent less the loss and the rate
            // allowed when the loss began less half of it.
            if lossy {
                capacityKbps = received ?? max(delivered ?? 0, estimateKbps * (1 - 0.5 * loss))
            }
            estimateKbps = min(estimateKbps, target)
            aboveCapacitySince = nil
            lastDecreaseNanos = nowNanos
        } else if loss < c.increaseLoss {
            if let capacity = capacityKbps, estimateKbps > capacity * c.nearCapacity {
                if let since = aboveCapacitySince {
                    if nowNanos &- since >= c.forgetCapacityNanos { capacityKbps = nil; aboveCapacitySince = nil }
                } else {
                    aboveCapacitySince = nowNanos
                }
            }
            let careful = capacityKbps != nil
            var rate = careful ? c.nearGrowthPerSecond : c.fastGrowthPerSecond
            if let capacity = capacityKbps, estimateKbps >= capacity * c.probeFrom {
                let probing = lastDecreaseNanos.map { nowNanos &- $0 >= c.probeAfterNanos } ?? true
                rate = probing ? c.aboveCapacityGrowthPerSecond : 0
            }
            if careful, let last = lastDecreaseNanos, nowNanos &- last < c.holdAfterDecreaseNanos { rate = 0 }
            var grown = estimateKbps * (1 + rate * min(seconds, 2))
            if let sentKbps { grown = min(grown, max(estimateKbps, 2 * sentKbps + 200)) }
            estimateKbps = grown
            lastReason = careful ? .careful : .growth
        } else {
            lastReason = .hold
        }
        if let remb = lastREMBKbps, let at = rembAt, nowNanos &- at <= c.rembLifetimeNanos, remb < estimateKbps {
            estimateKbps = remb
            lastReason = .remb
        }
        return clamp()
    }

    private mutating func clamp() -> Int {
        estimateKbps = min(max(estimateKbps, Double(configuration.floorKbps)), Double(configuration.ceilingKbps))
        return Int(estimateKbps)
    }

    private var pacerAges: [(nanos: UInt64, ms: Double)] = []
    private var pacerBaseMs: Double?

    /// The lowest age our pacer let a packet out at, over the last `baseWindowNanos`.
    private mutating func notePacerAge(_ ms: Double, at nowNanos: UInt64) {
        pacerAges.append((nowNanos, ms))
        pacerAges.removeAll { nowNanos &- $0.nanos > configuration.baseWindowNanos }
        pacerBaseMs = pacerAges.map(\.ms).min()
    }

    /// Keeps the round trips of the last `baseWindowNanos`; the base is their lowest.
    private mutating func noteRoundTrip(_ ms: Double, at nowNanos: UInt64) {
        lastRoundTripMs = ms
        roundTrips.append((nowNanos, ms))
        let window = configuration.baseWindowNanos
        if let first = roundTrips.first, nowNanos &- first.nanos > window {
            roundTrips.removeAll { nowNanos &- $0.nanos > window }
        }
        baseRoundTripMs = roundTrips.map(\.ms).min()
    }
}
