import RTCModel

/// One subscriber's bandwidth estimate, as a pure state machine: feed it what its
/// receiver reported since the last call (`WebRTCPeer.takeFeedback`), read
/// `estimateKbps`. `PublisherMedia` runs one per subscriber and gives the shared encoder
/// the lowest (the weakest link decides; docs/NETWORK.md).
///
/// Signals, judged over intervals of at least `minimumPackets` sent packets, but for
/// our receiver's queueing delay, judged at each report:
/// - **Loss**: the reception reports' fraction when the interval has any (RTCP's from
///   Chromium, about once a second; our receiver's own `ReceptionReport`s, five times
///   a second, since webrtcbin's RTCP stops carrying report blocks on a lossy link),
///   else the NACKed fraction (at once, but a GStreamer receiver undercounts long
///   runs and NACKs packets that are merely late).
/// - **Queueing**: our own receiver's one-way queueing delay (`ReceptionReport.queueMs`,
///   less our pacer's own share): over `oneWayHoldMs` no growth; a cut
///   (`cutOnQueueing`) when two reports in a row are over `oneWayQueueingMs` and the
///   second is `risingMs` higher than the first. A queue that fills keeps rising; a path
///   that got longer rises once and stays flat (the receiver then forgets its old base,
///   `OneWayQueue`), so one high report is not yet a queue. Sooner when the receiver's
///   delay trend (`DelayTrend`, a trendline over the delay's change from frame to frame)
///   reads a queue starting: no growth in that interval, and the cut comes once two
///   reports in a row are over `trendQueueMs` and still rising. For receivers that only send
///   RTCP, the round trip from our sender reports to its reports: `queueingMs` over the
///   lowest of the last `baseWindowNanos`.
/// - **What got through**: the bytes our receiver reported over the time its reports
///   took (`recentReceivedKbps`), else the sent rate times 1 − loss.
/// - **REMB**, when the receiver sends it (Chromium with `goog-remb`): its delay-based
///   estimate caps ours while fresh.
///
/// Responses:
/// - **Down on a queue** (`cutOnQueueing`): under what got through, which is then the
///   link's rate.
/// - **Down on loss** (over `decreaseLoss`, or the round trip's queueing), at most once
///   per `decreaseSpacingNanos` (`rtcpDecreaseSpacingNanos` from RTCP alone; the encoder
///   needs that long to slow down, and its backlog's loss is not counted twice). Heavy
///   loss (over 20 %) means the sender is far above the link: the estimate goes to what
///   got through less 10 % (from RTCP alone, no lower than 85 % of a fresh REMB).
///   Lighter: −(half the loss), at least −5 % (−15 % on the round trip), never below what
///   got through less 10 %. Loss under 20 % while our receiver's queue is not growing is
///   random, not congestion: it is judged over the last `randomLossWindowNanos`, not per
///   interval (3 % random loss over 40 packets often reads over 6 %).
/// - **Up carefully**: under `increaseLoss` and without queueing. Near the rate that got
///   through at the last congestion (`capacityKbps`, from a loss learnt only
///   `learnCapacityAfterNanos` after the start: the link is about there, and an
///   overshoot into a full link costs a keyframe): nothing for `holdAfterDecreaseNanos` after a decrease, then
///   +`nearGrowthPerSecond` up to `probeFrom` times it, there nothing until
///   `probeAfterNanos` after the decrease, then +`aboveCapacityGrowthPerSecond` (a
///   probe; +`pastCapacityGrowthPerSecond` once what got through is past that point);
///   once what got through has been `nearCapacity` times it for `forgetCapacityNanos`,
///   the link has grown: +`fastGrowthPerSecond`. Never more than `growthOverSent` times
///   what the encoder actually sent plus 40 kbit/s, or what it sent divided by
///   `encoderFill`, whichever allows more.
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
        public var aboveCapacityGrowthPerSecond = 0.08
        /// The same once what got through is past the last congestion point with neither
        /// loss (none at all) nor a queue: the link is no longer where it was.
        public var pastCapacityGrowthPerSecond = 0.16
        /// No growth this long after a decrease (the encoder and the link settle).
        public var holdAfterDecreaseNanos: UInt64 = 1_500_000_000
        /// Up to `probeFrom` times the last congestion point growth is +`nearGrowthPerSecond`;
        /// beyond it only `probeAfterNanos` after the last decrease. A probe ends on a
        /// 20 ms queue, before the link's buffer overflows, so probes are cheap; sooner
        /// ones find a grown link sooner (back near the ceiling in 8–13 s, against about
        /// 15.5 s at 2 s and 6 s).
        public var probeFrom = 0.95
        public var probeAfterNanos: UInt64 = 4_000_000_000
        /// How far above the last congestion point growth stays careful, and how long
        /// beyond it without loss before the point is forgotten (the link grew).
        public var nearCapacity = 1.1
        public var forgetCapacityNanos: UInt64 = 500_000_000
        public var minimumPackets: UInt64 = 40
        public var decreaseSpacingNanos: UInt64 = 700_000_000
        /// The same when only RTCP reports the loss (see `update`).
        public var rtcpDecreaseSpacingNanos: UInt64 = 1_500_000_000
        public var queueingMs = 80.0
        /// Our receiver's one-way queueing delay over this cuts, at the report that shows
        /// it (a 200 ms bottleneck buffer at 600 kbit/s fills in about a second from a
        /// 20 % overshoot: judging it only with the loss interval was too late).
        public var oneWayQueueingMs = 20.0
        /// Over this, no growth: the link is full and a queue is starting.
        public var oneWayHoldMs = 8.0
        /// How much higher than the report before a queue over `oneWayQueueingMs` must be
        /// to count as filling (more than the window minima's jitter).
        public var risingMs = 5.0
        /// When our receiver's delay trend reads a queue starting (`DelayTrend`), a queue
        /// over this in two reports in a row, still rising, cuts (instead of over
        /// `oneWayQueueingMs`).
        public var trendQueueMs = 8.0
        /// A queue that jumps in one report from under `oneWayHoldMs` to over
        /// `oneWayQueueingMs` may be a path that got longer (a route change): until it
        /// falls back under `oneWayHoldMs`, rising means more than this share of the jump
        /// in one report (and at least `risingMs`). A queue filling at the rate that made
        /// the jump keeps rising by as much again; a longer path stays flat but for its
        /// jitter, and on a busy machine the window minima of a 40 ms step jittered by
        /// 5.5 ms, past `risingMs`: a cut for queueing on a path with no queue.
        public var stepRiseShare = 0.25
        /// After a cut on queueing, the queue needs this long to drain before a second
        /// cut on queueing (unless it is higher than every report since the cut).
        public var queueDrainNanos: UInt64 = 1_500_000_000
        /// Growth stops at this multiple of what was sent (plus 40 kbit/s): the encoder
        /// takes a second to follow, and an estimate far ahead of it bursts into the
        /// link at once when the picture moves (at 2 × + 200, 1 Mbit/s went into a
        /// 600 kbit/s link and filled its 200 ms buffer in 0.3 s; at 1.2 ×, 755 kbit/s
        /// into it overflowed it before the cut took effect).
        public var growthOverSent = 1.1
        /// An encoder that has caught up still sends only about this much of its target
        /// (the synthetic scene: 0.86–0.92 from 500 kbit/s to 2 Mbit/s), so growth may go
        /// to what was sent divided by it. With `growthOverSent` alone, 1.1 × 0.88 of the
        /// estimate plus 40 barely exceeds it above 1 Mbit/s: after a lifted cap the
        /// climb stalled there for seconds and reached the ceiling in 12–15 s, once not
        /// within the 15 s allowed. At 600 kbit/s this allows no more lead than before.
        public var encoderFill = 0.85
        /// How long our receiver's byte counts are kept (`recentReceivedKbps` reads the
        /// last half second of them).
        public var receivedWindowNanos: UInt64 = 2_000_000_000
        /// See `learnsCapacity`.
        public var learnCapacityAfterNanos: UInt64 = 3_000_000_000
        public var baseWindowNanos: UInt64 = 20_000_000_000
        public var rembLifetimeNanos: UInt64 = 2_000_000_000
        /// Loss without a queue is judged over this long (see `update`): one interval of
        /// 40 packets that loses 3 on a 3 % random-loss link reads 7.5 %.
        public var randomLossWindowNanos: UInt64 = 2_000_000_000

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
    /// Transport-wide feedback messages read so far (a browser that negotiated it).
    public private(set) var transportFeedbackMessages = 0
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
    /// Our receiver's delay trend in the last interval judged, and whether it read a
    /// queue starting (overuse) in it.
    public private(set) var lastDelayTrend: Double?
    public private(set) var lastOverusing = false
    /// Overuse read in the pending interval.
    private var pendingOverusing = false
    /// Our receiver's queueing delay in its previous report (less our pacer's share).
    private var previousReportQueueMs: Double?
    /// The jump that started the present raised reading, while it may be a longer path
    /// (see `Configuration.stepRiseShare`).
    private var queueStepMs: Double?
    /// The receiver reports its one-way queueing delay (ours does): then the round trip
    /// is no queueing signal. It also rises with the way back, and a path 40 ms longer
    /// each way put it 80 ms over its 20 s base: a cut every interval for 20 s.
    private var reportsOneWayQueue = false
    private var lastDecreaseNanos: UInt64?
    /// The first update: the link's capacity is learnt only `learnCapacityAfterNanos` later.
    private var startedNanos: UInt64?
    /// When the last cut on queueing was, and the highest queueing delay reported since.
    private var queueCut: (nanos: UInt64, peakMs: Double)?
    /// Received bytes per report over the last `receivedWindowNanos`.
    private var receivedSamples: [(nanos: UInt64, bytes: UInt64, spanNanos: UInt64)] = []
    private var roundTrips: [(nanos: UInt64, ms: Double)] = []
    /// Packets expected and lost per judged interval over `randomLossWindowNanos`.
    private var lossSamples: [(nanos: UInt64, expected: Double, lost: Double)] = []
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
        if startedNanos == nil { startedNanos = nowNanos }
        let since = pendingSince ?? nowNanos
        pending.sent += interval.sent
        pending.bytes += interval.bytes
        pending.nacked += interval.nacked
        pending.reportedExpected += interval.reportedExpected
        pending.reportedLost += interval.reportedLost
        pending.receivedBytes += interval.receivedBytes
        pending.receivedSpanNanos += interval.receivedSpanNanos
        if let remb = interval.rembKbps { lastREMBKbps = remb; rembAt = nowNanos }
        transportFeedbackMessages += interval.transportFeedbackMessages
        // The receiver's queueing delay is relative to the lowest transit it saw; our
        // pacer's share is what its packets' age exceeds the lowest age it let out.
        if let age = interval.pacerAgeMs { notePacerAge(age, at: nowNanos) }
        let ownQueue = interval.pacerAgeMs.map { max(0, $0 - (pacerBaseMs ?? $0)) } ?? 0
        noteReceived(interval, at: nowNanos)
        let reportQueue = interval.queueingMs.max().map { max(0, $0 - ownQueue) }
        if interval.overusing { pendingOverusing = true }
        if let trend = interval.delayTrend { lastDelayTrend = trend }
        if let queue = reportQueue {
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
        // A queue building: cut at once, whatever the interval (see `cutOnQueueing`).
        if let queue = reportQueue {
            reportsOneWayQueue = true
            let previous = previousReportQueueMs ?? 0
            if queue <= c.oneWayHoldMs {
                queueStepMs = nil
            } else if previous <= c.oneWayHoldMs && queue > c.oneWayQueueingMs {
                queueStepMs = queue - previous
            }
            let margin = max(c.risingMs, (queueStepMs ?? 0) * c.stepRiseShare)
            let rising = previousReportQueueMs.map { queue > $0 + margin } ?? false
            let filling = rising && (previousReportQueueMs ?? 0) > c.oneWayQueueingMs
            // The trend's reading, on a queue still rising: a path that got longer in a
            // few steps (the in-process link's delay step) also reads as overuse, once.
            let starting = interval.overusing && rising && (previousReportQueueMs ?? 0) > c.trendQueueMs
            previousReportQueueMs = queue
            let cut = (queue > c.oneWayQueueingMs && filling || starting) && cutOnQueueing(queue, at: nowNanos)
            if let last = queueCut { queueCut = (last.nanos, max(last.peakMs, queue)) }
            if cut { return clamp() }
        }
        guard pending.sent >= c.minimumPackets else { return clamp() }
        // Reports when there are any (exact); NACKs otherwise. A GStreamer receiver NACKs
        // on a timer as well as on gaps, so a packet our pacer held back is NACKed too.
        let nackLoss = min(1, Double(pending.nacked) / Double(pending.sent))
        let loss = pending.reportedLoss(minimum: 1) ?? nackLoss
        let windowLoss = noteLoss(loss, packets: pending.reportedExpected > 0 ? Double(pending.reportedExpected) : Double(pending.sent),
                                  at: nowNanos)
        let seconds = Double(nowNanos &- since) / 1e9
        let sentKbps = seconds > 0.05 ? Double(pending.bytes) * 8 / seconds / 1000 : nil
        // What got through: what our receiver says it received, else what was sent less the loss.
        let receivedSeconds = pending.receivedSpanNanos > 0 ? Double(pending.receivedSpanNanos) / 1e9 : seconds
        let received = receivedSeconds > 0.05 && pending.receivedBytes > 0 ? Double(pending.receivedBytes) * 8 / receivedSeconds / 1000 : nil
        let delivered = received ?? sentKbps.map { $0 * (1 - loss) }
        pending = FeedbackInterval(sent: 0, nacked: 0)
        pendingSince = nowNanos
        lastLoss = loss
        lastSentKbps = sentKbps
        // Only a round trip measured in this interval counts (a stale one would cut again and again).
        let rttRise = !reportsOneWayQueue
            && (pendingRoundTripMs.flatMap { rtt in baseRoundTripMs.map { rtt - $0 > c.queueingMs } } ?? false)
        // Our receiver's queueing is judged per report (above); here only the round trip's.
        let queueing = rttRise
        let filling = (pendingQueueMs ?? 0) > c.oneWayHoldMs || pendingOverusing
        let queued = (pendingQueueMs ?? 0) > c.oneWayQueueingMs || pendingOverusing
        lastOverusing = pendingOverusing
        pendingOverusing = false
        lastQueueMs = pendingQueueMs
        pendingRoundTripMs = nil
        pendingQueueMs = nil
        // Loss with no queue is random (a radio link), no sign the link is full: when our
        // receiver reports its queue and it is not growing, loss under 20 % counts only
        // as the last `randomLossWindowNanos` show it. Judged per interval, 3 % of random
        // loss read over 6 % every few seconds, and each light cut also made the rate's
        // last value the link's capacity: careful growth at 1000–1200 kbit/s on a 3 Mbit/s
        // link (CongestionSystemTests' lossy link). A sender over a policer (loss, no
        // queue) still loses as much over the window, and cuts. A queue under
        // `oneWayQueueingMs` that is not read as rising holds growth but leaves the loss
        // random: on a busy machine the receiver's own scheduling reads as 8–17 ms of
        // queue, and per interval the 3 % link's loss read 6.3–7.4 %, cutting it from
        // 1137 to 950 kbit/s (the lossy link with four busy loops beside it).
        let randomOnly = reportsOneWayQueue && !queued && loss <= 0.2
        let judgedLoss = randomOnly ? windowLoss : loss
        let lossy = judgedLoss > c.decreaseLoss
        if lossy || queueing {
            // RTCP alone (Chromium) reports about once a second, so the report after a cut
            // still counts the packets lost before it: wait longer.
            let spacing = received == nil ? c.rtcpDecreaseSpacingNanos : c.decreaseSpacingNanos
            guard lastDecreaseNanos.map({ nowNanos &- $0 >= spacing }) ?? true else { return clamp() }
            var target: Double
            if loss > 0.2, let delivered {
                target = 0.9 * delivered
                // From RTCP alone, what got through is the interval's sent rate times a
                // loss that may be older than it; a fresh REMB (the receiver's delay-based
                // estimate) bounds how far that can take the rate down.
                if received == nil, let remb = freshREMB(at: nowNanos) { target = max(target, min(0.85 * remb, estimateKbps)) }
                lastReason = .heavyLoss
            } else {
                target = estimateKbps * (1 - max(queueing ? 0.15 : 0.05, 0.5 * judgedLoss))
                // Loss: never below what got through less 10 %. A queue must drain: below it.
                if let delivered, !queueing { target = max(target, 0.9 * delivered) }
                lastReason = queueing && !lossy ? .queueing : .loss
            }
            // The link as last seen: what our receiver got (media and retransmissions);
            // from RTCP alone, the larger of what was sent less the loss and the rate
            // allowed when the loss began less half of it.
            if lossy, learnsCapacity(at: nowNanos) {
                capacityKbps = received ?? max(delivered ?? 0, estimateKbps * (1 - 0.5 * loss))
            }
            estimateKbps = min(estimateKbps, target)
            aboveCapacitySince = nil
            lastDecreaseNanos = nowNanos
        } else if judgedLoss < c.increaseLoss {
            // What got through, not the estimate, shows the link grew (an estimate above
            // what the encoder sends proves nothing).
            if let capacity = capacityKbps, let delivered, delivered > capacity * c.nearCapacity {
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
                // Past it with no loss at all: random loss (a radio link) is no sign of a
                // grown link, and with 2 % of it the faster probe overshot a 600 kbit/s
                // link whose capacity had been learnt low (bench-network: 731 kbit/s, p95 340 ms).
                let past = loss == 0 && (delivered.map { $0 > capacity } ?? false)
                rate = probing ? (past ? c.pastCapacityGrowthPerSecond : c.aboveCapacityGrowthPerSecond) : 0
            }
            if careful, let last = lastDecreaseNanos, nowNanos &- last < c.holdAfterDecreaseNanos { rate = 0 }
            if filling { rate = 0 }
            var grown = estimateKbps * (1 + rate * min(seconds, 2))
            if let sentKbps {
                grown = min(grown, max(estimateKbps, c.growthOverSent * sentKbps + 40, sentKbps / c.encoderFill))
            }
            estimateKbps = grown
            lastReason = filling ? .hold : careful ? .careful : .growth
        } else {
            lastReason = .hold
        }
        if let remb = lastREMBKbps, let at = rembAt, nowNanos &- at <= c.rembLifetimeNanos, remb < estimateKbps {
            estimateKbps = remb
            lastReason = .remb
        }
        return clamp()
    }

    /// A cut on our receiver's one-way queueing delay (`queue` ms over the threshold):
    /// the link is full and its buffer filling, so what the receiver got lately
    /// (`recentReceivedKbps`) is the link's rate: the estimate goes under it (−15 %, the
    /// queue drains) and it becomes the capacity (growth past it is careful, as after a
    /// loss). Not within `decreaseSpacingNanos` of any cut, nor within `queueDrainNanos`
    /// of the last cut on queueing unless the queue is higher than any report since. True
    /// when it cut.
    private mutating func cutOnQueueing(_ queue: Double, at nowNanos: UInt64) -> Bool {
        let c = configuration
        if let last = lastDecreaseNanos, nowNanos &- last < c.decreaseSpacingNanos { return false }
        // The encoder takes a moment to slow down, so the queue goes on rising for a few
        // hundred milliseconds after a cut: only one still rising past it cuts again.
        if let cut = queueCut, nowNanos &- cut.nanos < c.queueDrainNanos, queue <= cut.peakMs { return false }
        var target = estimateKbps * 0.85
        if let received = recentReceivedKbps(at: nowNanos) {
            // Never below half the estimate in one cut: a sender that sends less than it
            // may (a still scene) sees a queue from others' traffic, not from its own rate.
            target = min(target, max(0.85 * received, 0.5 * estimateKbps))
            // The link's rate only when the receiver got most of the estimate: far less,
            // and the queue was a burst (the first keyframes of a stream), not a full link.
            if received >= 0.7 * estimateKbps { capacityKbps = received }
        }
        estimateKbps = min(estimateKbps, target)
        lastQueueMs = queue
        lastReason = .queueing
        aboveCapacitySince = nil
        lastDecreaseNanos = nowNanos
        queueCut = (nowNanos, queue)
        queueStepMs = nil
        return true
    }

    private func freshREMB(at nowNanos: UInt64) -> Double? {
        guard let remb = lastREMBKbps, let at = rembAt, nowNanos &- at <= configuration.rembLifetimeNanos else { return nil }
        return remb
    }

    /// From loss, not in a stream's first seconds: its first keyframes are bursts that
    /// drop while the encoder still sends less than the link takes, so what got through
    /// then is not the link's rate (taken as it, it made growth careful far below the
    /// link, then fast, past it). A queue's reading needs no such wait: it counts only
    /// when the receiver got most of the estimate (`cutOnQueueing`).
    private func learnsCapacity(at nowNanos: UInt64) -> Bool {
        startedNanos.map { nowNanos &- $0 >= configuration.learnCapacityAfterNanos } ?? false
    }

    /// Records an interval's loss over `packets`; returns the loss over the last
    /// `randomLossWindowNanos` of intervals. With fewer than three intervals in it (a
    /// start), the interval's own loss, but never over `decreaseLoss`: it may hold the
    /// rate, not cut it.
    private mutating func noteLoss(_ loss: Double, packets: Double, at nowNanos: UInt64) -> Double {
        lossSamples.append((nowNanos, packets, loss * packets))
        lossSamples.removeAll { nowNanos &- $0.nanos > configuration.randomLossWindowNanos }
        let expected = lossSamples.reduce(0) { $0 + $1.expected }
        guard lossSamples.count >= 3, expected > 0 else { return min(loss, configuration.decreaseLoss) }
        return lossSamples.reduce(0) { $0 + $1.lost } / expected
    }

    private mutating func noteReceived(_ interval: FeedbackInterval, at nowNanos: UInt64) {
        if interval.receivedSpanNanos > 0 { receivedSamples.append((nowNanos, interval.receivedBytes, interval.receivedSpanNanos)) }
        receivedSamples.removeAll { nowNanos &- $0.nanos > configuration.receivedWindowNanos }
    }

    /// What our receiver got (kbit/s) lately: its bytes over the time they took, from
    /// its newest reports back to half a second. While a queue builds the link is full,
    /// so this is its rate (over a longer window it read the time before the queue too,
    /// and took a 600 kbit/s link for 470).
    private func recentReceivedKbps(at nowNanos: UInt64) -> Double? {
        var bytes: UInt64 = 0, span: UInt64 = 0
        for sample in receivedSamples.reversed() where span < 500_000_000 {
            bytes += sample.bytes
            span += sample.spanNanos
        }
        guard span >= 400_000_000, bytes > 0 else { return nil }
        return Double(bytes) * 8 / (Double(span) / 1e9) / 1000
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
