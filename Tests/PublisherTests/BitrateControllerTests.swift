import Publisher
import RTCSession
import Testing

/// The bandwidth estimate (`BitrateController`), on stepped time: loss from reception
/// reports or NACKs, one-way queueing and round trips, REMB, and the growth phases.
@Suite("congestion control: the bitrate controller")
struct BitrateControllerTests {
    static let ms: UInt64 = 1_000_000
    /// Judging every interval of 10 packets or more (the default 40 spans several of
    /// these 250 ms steps at these rates), learning the link's capacity from the first
    /// update (the start-up grace has its own test).
    static func controller(start: Int? = nil, learnCapacityAfterNanos: UInt64 = 0) -> BitrateController {
        var configuration = BitrateController.Configuration(ceilingKbps: 2000, floorKbps: 150)
        configuration.minimumPackets = 10
        configuration.learnCapacityAfterNanos = learnCapacityAfterNanos
        return BitrateController(configuration: configuration, startKbps: start)
    }
    /// An interval of `seconds` at `kbps` in 1000-byte packets, `loss` of them NACKed.
    static func interval(kbps: Double, seconds: Double, loss: Double) -> FeedbackInterval {
        let bytes = kbps * 1000 / 8 * seconds
        let packets = UInt64(bytes / 1000)
        return FeedbackInterval(sent: packets, bytes: UInt64(bytes), nacked: Int(Double(packets) * loss))
    }
    /// The same with our receiver's reports: `loss` of the packets expected lost, the
    /// rest received.
    static func reported(kbps: Double, seconds: Double, loss: Double, nacked: Double = 0, queueMs: Double? = nil) -> FeedbackInterval {
        var i = interval(kbps: kbps, seconds: seconds, loss: nacked)
        i.reportedExpected = i.sent
        i.reportedLost = Int64((Double(i.sent) * loss).rounded())
        i.receivedBytes = UInt64(Double(i.bytes) * (1 - loss))
        i.receivedSpanNanos = UInt64(seconds * 1e9)
        if let queueMs { i.queueingMs = [queueMs] }
        return i
    }

    /// Steps a controller through `seconds` of 250 ms intervals from `now`, each made by `make`.
    static func run(_ c: inout BitrateController, from now: inout UInt64, seconds: Double,
                    _ make: (Double) -> FeedbackInterval) {
        for _ in 0..<Int(seconds * 4) {
            now += 250 * ms
            c.update(make(c.estimateKbps), nowNanos: now)
        }
    }

    @Test("heavy loss cuts at once to what the receiver got, less 10 %")
    func heavyLoss() {
        var c = Self.controller()
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        // 2 Mbit/s into a 600 kbit/s link: 70 % lost.
        let kbps = c.update(Self.reported(kbps: 2000, seconds: 0.25, loss: 0.7), nowNanos: 250 * Self.ms)
        #expect(abs(c.lastLoss! - 0.7) < 0.01)
        #expect(abs(Double(kbps) - 0.9 * 600) <= 2, "\(kbps)")
        #expect(c.lastReason == .heavyLoss)
        #expect(c.capacityKbps.map { abs($0 - 600) < 2 } == true, "capacity: what the receiver got")
    }

    @Test("without reports, NACKs measure the loss; with them, NACKs of late packets do not count")
    func reportsOverNACKs() {
        var nacks = Self.controller(start: 1000)
        nacks.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        nacks.update(Self.interval(kbps: 1000, seconds: 0.25, loss: 0.3), nowNanos: 250 * Self.ms)
        #expect(abs(nacks.lastLoss! - 0.3) < 0.02)
        #expect(nacks.estimateKbps < 1000)
        // Our pacer held packets back and the receiver NACKed them, yet every one arrived.
        var reports = Self.controller(start: 1000)
        reports.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        reports.update(Self.reported(kbps: 1000, seconds: 0.25, loss: 0, nacked: 0.3), nowNanos: 250 * Self.ms)
        #expect(reports.lastLoss == 0)
        #expect(reports.estimateKbps > 1000)
    }

    @Test("one cut per spacing while the encoder slows down")
    func spacing() {
        var c = Self.controller()
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        let first = c.update(Self.reported(kbps: 2000, seconds: 0.25, loss: 0.5), nowNanos: 250 * Self.ms)
        let second = c.update(Self.reported(kbps: 2000, seconds: 0.25, loss: 0.5), nowNanos: 500 * Self.ms)
        #expect(second == first)
        let third = c.update(Self.reported(kbps: 1000, seconds: 1, loss: 0.5), nowNanos: 1500 * Self.ms)
        #expect(third < first)
    }

    @Test("a clean link without a known capacity: up 25 % a second, never beyond 1.1 × the sent rate + 40 or the sent rate / 0.85, to the ceiling")
    func growth() {
        var c = Self.controller(start: 600)
        var now: UInt64 = 0
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: now)
        Self.run(&c, from: &now, seconds: 1) { Self.reported(kbps: $0, seconds: 0.25, loss: 0) }
        #expect(abs(c.estimateKbps - 600 * 1.0625 * 1.0625 * 1.0625 * 1.0625) < 1)
        #expect(c.lastReason == .growth)
        // A still scene sends 200 kbit/s of the 765 allowed: the estimate grows no further.
        let before = c.estimateKbps
        Self.run(&c, from: &now, seconds: 5) { _ in Self.reported(kbps: 200, seconds: 0.25, loss: 0) }
        #expect(c.estimateKbps == before)
        // It sends 700: the estimate goes to 700 / 0.85 (above 1.1 × 700 + 40) and no further.
        Self.run(&c, from: &now, seconds: 5) { _ in Self.reported(kbps: 700, seconds: 0.25, loss: 0) }
        #expect(abs(c.estimateKbps - 700 / 0.85) < 1, "\(c.estimateKbps)")
        Self.run(&c, from: &now, seconds: 30) { Self.reported(kbps: $0, seconds: 0.25, loss: 0) }
        #expect(c.estimateKbps == 2000)
    }

    @Test("after congestion: hold 1.5 s, back to 95 % of the link, probe only 4 s after the cut, forget the link once well past it")
    func carefulPhases() {
        var c = Self.controller(start: 1000)
        var now: UInt64 = 0
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: now)
        // A 600 kbit/s link: what exceeds it is lost.
        func link(_ kbps: Double) -> FeedbackInterval {
            Self.reported(kbps: kbps, seconds: 0.25, loss: kbps > 600 ? max(0.1, 1 - 600 / kbps) : 0)
        }
        now += 500 * Self.ms
        c.update(Self.reported(kbps: 1000, seconds: 0.5, loss: 0.4), nowNanos: now)
        #expect(abs(c.estimateKbps - 540) < 2)
        guard let capacity = c.capacityKbps else { Issue.record("no capacity after the loss"); return }
        let cut = now
        Self.run(&c, from: &now, seconds: 1.25, link)
        #expect(abs(c.estimateKbps - 540) < 2, "held for 1.5 s after the cut")
        Self.run(&c, from: &now, seconds: 2, link)
        #expect(c.estimateKbps > 560 && c.estimateKbps <= capacity * 0.95 * 1.03, "\(c.estimateKbps)")
        #expect(c.lastReason == .careful)
        // Until 4 s after the cut it stays there; then it probes and finds the link (one
        // that loses 10 % or more beyond 600 kbit/s).
        while now < cut + 3_750 * Self.ms { now += 250 * Self.ms; c.update(link(c.estimateKbps), nowNanos: now) }
        #expect(c.estimateKbps <= capacity * 0.95 * 1.03)
        var cutAgain = false
        for _ in 0..<40 {
            now += 250 * Self.ms
            let before = c.estimateKbps
            c.update(link(c.estimateKbps), nowNanos: now)
            if c.estimateKbps < before { cutAgain = true; break }
        }
        #expect(cutAgain, "the probe past the link's rate found its loss")
        #expect(c.estimateKbps < 640)
        // The link grows to 3 Mbit/s: past 1.1 × the last capacity for 0.5 s, growth is fast again.
        Self.run(&c, from: &now, seconds: 20) { Self.reported(kbps: $0, seconds: 0.25, loss: 0) }
        #expect(c.capacityKbps == nil)
        #expect(c.estimateKbps == 2000)
    }

    @Test("random loss under 3.5 % does not hold the rate down; 3.5 to 6 % holds it")
    func randomLoss() {
        var c = Self.controller(start: 600)
        var now: UInt64 = 0
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: now)
        // One-second steps: enough packets for 2 % to be 2 %.
        for _ in 0..<10 {
            now += 1000 * Self.ms
            c.update(Self.reported(kbps: c.estimateKbps, seconds: 1, loss: 0.02), nowNanos: now)
        }
        #expect(c.estimateKbps == 2000)
        var held = Self.controller(start: 800)
        held.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        held.update(Self.reported(kbps: 800, seconds: 0.25, loss: 0.05), nowNanos: 250 * Self.ms)
        #expect(held.estimateKbps == 800)
        #expect(held.lastReason == .hold)
    }

    @Test("random loss with no queue is judged over 2 s: 3 % whose intervals read up to 8 % does not cut; 10 % held over the window does")
    func randomLossWithoutQueue() {
        var c = Self.controller(start: 2000)
        var now: UInt64 = 0
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: now)
        // Quarter-second reports of our receiver (its queue flat at 1 ms): 8 %, 0, 2 %, 2 %
        // over and over, 3 % on average.
        let pattern = [0.08, 0, 0.02, 0.02]
        for i in 0..<40 {
            now += 250 * Self.ms
            c.update(Self.reported(kbps: c.estimateKbps, seconds: 0.25, loss: pattern[i % 4], queueMs: 1), nowNanos: now)
            #expect(c.lastReason != .loss, "cut at report \(i) for random loss")
        }
        #expect(c.estimateKbps == 2000)
        #expect(c.capacityKbps == nil, "random loss is no capacity")
        // The same on a busy machine, where the receiver's scheduling reads as a queue of
        // 9–17 ms (under the 20 ms that counts as one): still random, no cut.
        var busy = Self.controller(start: 1100)
        var busyNow: UInt64 = 0
        busy.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: busyNow)
        let jitter = [9.0, 17, 12, 14]
        for i in 0..<40 {
            busyNow += 250 * Self.ms
            busy.update(Self.reported(kbps: busy.estimateKbps, seconds: 0.25, loss: pattern[i % 4], queueMs: jitter[(i / 2) % 4]),
                        nowNanos: busyNow)
            #expect(busy.lastReason != .loss, "cut at report \(i) for random loss on a busy machine")
        }
        #expect(busy.estimateKbps >= 1100)
        // A policer 10 % under what is sent: as much loss over the window, no queue: it cuts.
        var cut = false
        for _ in 0..<12 {
            now += 250 * Self.ms
            c.update(Self.reported(kbps: c.estimateKbps, seconds: 0.25, loss: 0.1, queueMs: 1), nowNanos: now)
            cut = cut || c.lastReason == .loss
        }
        #expect(cut)
        #expect(c.estimateKbps < 2000)
        // Without our receiver's queue (RTCP alone), the interval's loss decides as before.
        var rtcp = Self.controller(start: 2000)
        rtcp.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        rtcp.update(Self.reported(kbps: 2000, seconds: 0.25, loss: 0.08), nowNanos: 250 * Self.ms)
        #expect(rtcp.lastReason == .loss)
    }

    @Test("the receiver's delay trend reading overuse: growth holds, and a queue over 8 ms still rising cuts; a flat one does not")
    func delayTrend() {
        // Overuse on a queue of 10 then 16 ms: cut (the reports alone, under 20 ms, would not).
        var c = Self.controller(start: 1000)
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        var first = Self.reported(kbps: 1000, seconds: 0.25, loss: 0, queueMs: 10)
        first.overusing = true
        c.update(first, nowNanos: 250 * Self.ms)
        #expect(c.lastReason == .hold, "overuse holds growth: \(c.lastReason)")
        #expect(c.estimateKbps == 1000)
        var second = Self.reported(kbps: 1000, seconds: 0.25, loss: 0, queueMs: 16)
        second.overusing = true
        c.update(second, nowNanos: 500 * Self.ms)
        #expect(c.lastReason == .queueing)
        #expect(c.estimateKbps <= 850)
        // The same queue without the trend's overuse: no cut (under 20 ms).
        var quiet = Self.controller(start: 1000)
        quiet.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        quiet.update(Self.reported(kbps: 1000, seconds: 0.25, loss: 0, queueMs: 10), nowNanos: 250 * Self.ms)
        quiet.update(Self.reported(kbps: 1000, seconds: 0.25, loss: 0, queueMs: 16), nowNanos: 500 * Self.ms)
        #expect(quiet.lastReason != .queueing)
        // Overuse on a queue that jumped and stays flat (a longer path, reached in steps): no cut.
        var step = Self.controller(start: 1000)
        step.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        for (k, queue) in [40.0, 41, 40, 42].enumerated() {
            var i = Self.reported(kbps: 1000, seconds: 0.25, loss: 0, queueMs: queue)
            i.overusing = true
            step.update(i, nowNanos: UInt64(k + 1) * 250 * Self.ms)
            #expect(step.lastReason != .queueing, "a flat queue of \(queue) ms cut")
        }
    }

    @Test("a queue building on the path cuts before any loss; our pacer's own wait does not count")
    func queueing() {
        var c = Self.controller(start: 1000)
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        var paced = Self.reported(kbps: 1000, seconds: 0.25, loss: 0, queueMs: 60)
        paced.pacerAgeMs = 20
        c.update(paced, nowNanos: 250 * Self.ms)        // the pacer's base: 20 ms
        #expect(c.lastReason != .queueing, "one report over the threshold may be a longer path")
        paced.queueingMs = [120]
        c.update(paced, nowNanos: 500 * Self.ms)
        #expect(c.lastReason == .queueing)
        #expect(c.estimateKbps <= 850)
        var own = Self.controller(start: 1000)
        own.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        var base = Self.reported(kbps: 1000, seconds: 0.25, loss: 0, queueMs: 0)
        base.pacerAgeMs = 20
        own.update(base, nowNanos: 250 * Self.ms)
        // The receiver sees 120 ms more, all of it spent in our pacer (its packets 120 ms older).
        var backlog = Self.reported(kbps: 1000, seconds: 0.25, loss: 0, queueMs: 120)
        backlog.pacerAgeMs = 140
        own.update(backlog, nowNanos: 500 * Self.ms)
        #expect(own.lastReason != .queueing)
        #expect(own.estimateKbps > 1000)
    }

    @Test("a round trip 80 ms above its lowest cuts (a receiver that only sends RTCP)")
    func roundTrip() {
        var c = Self.controller(start: 1000)
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        var i = Self.interval(kbps: 1000, seconds: 0.25, loss: 0)
        i.roundTripsMs = [20]
        c.update(i, nowNanos: 250 * Self.ms)
        #expect(c.baseRoundTripMs == 20)
        i.roundTripsMs = [130]
        c.update(i, nowNanos: 1000 * Self.ms)
        #expect(c.lastReason == .queueing)
        #expect(c.estimateKbps < 1000)
    }

    @Test("a receiver's REMB caps the estimate while fresh")
    func remb() {
        var c = Self.controller(start: 1500)
        c.update(FeedbackInterval(sent: 0, nacked: 0, rembKbps: 700), nowNanos: 0)
        #expect(c.estimateKbps == 700)
        #expect(c.lastReason == .remb)
        var now: UInt64 = 0
        Self.run(&c, from: &now, seconds: 1.5) { Self.interval(kbps: $0, seconds: 0.25, loss: 0) }
        #expect(c.estimateKbps == 700)
        Self.run(&c, from: &now, seconds: 2) { Self.interval(kbps: $0, seconds: 0.25, loss: 0) }
        #expect(c.estimateKbps > 700, "a stale REMB no longer caps")
    }

    @Test("too few packets wait; never below the floor")
    func waitAndFloor() {
        var c = Self.controller(start: 800)
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        #expect(c.update(FeedbackInterval(sent: 5, bytes: 5000, nacked: 5), nowNanos: 250 * Self.ms) == 800, "5 packets are too few to judge")
        var now = 250 * Self.ms
        for _ in 0..<20 {
            now += Self.ms * 1000
            c.update(FeedbackInterval(sent: 100, bytes: 1000, nacked: 90), nowNanos: now)
        }
        #expect(c.estimateKbps == 150)
    }

    /// `seconds` at `sentKbps`, of which our receiver got `receivedKbps`, with its queueing delay.
    static func full(sentKbps: Double, receivedKbps: Double, queueMs: Double, seconds: Double = 0.25) -> FeedbackInterval {
        var i = interval(kbps: sentKbps, seconds: seconds, loss: 0)
        i.reportedExpected = i.sent
        i.receivedBytes = UInt64(receivedKbps * 1000 / 8 * seconds)
        i.receivedSpanNanos = UInt64(seconds * 1e9)
        i.queueingMs = [queueMs]
        return i
    }

    @Test("our receiver's queue: over 8 ms no growth; over 20 ms in two reports and still rising, a cut to 85 % of what got through, which becomes the capacity; a draining queue does not cut again, a growing one does")
    func oneWayQueue() {
        var c = Self.controller(start: 700)
        var now: UInt64 = 0
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: now)
        // 800 kbit/s into a 600 kbit/s link: the link is full, its buffer filling.
        for queue in [2.0, 5] { now += 250 * Self.ms; c.update(Self.full(sentKbps: 800, receivedKbps: 600, queueMs: queue), nowNanos: now) }
        #expect(c.lastReason == .growth)
        let grown = c.estimateKbps
        now += 250 * Self.ms
        c.update(Self.full(sentKbps: 800, receivedKbps: 600, queueMs: 15), nowNanos: now)
        #expect(c.lastReason == .hold)
        #expect(c.estimateKbps == grown)
        // Over 20 ms once: a longer path or a queue; the next report tells.
        now += 250 * Self.ms
        c.update(Self.full(sentKbps: 800, receivedKbps: 600, queueMs: 25), nowNanos: now)
        #expect(c.lastReason == .hold)
        // Still rising, in one report of 20 packets (fewer than the interval needs): the queue cuts anyway.
        now += 100 * Self.ms
        c.update(Self.full(sentKbps: 800, receivedKbps: 600, queueMs: 40, seconds: 0.1), nowNanos: now)
        #expect(c.lastReason == .queueing)
        #expect(abs(c.estimateKbps - 0.85 * 600) < 2, "\(c.estimateKbps)")
        #expect(c.capacityKbps.map { abs($0 - 600) < 2 } == true, "capacity \(String(describing: c.capacityKbps))")
        let cut = c.estimateKbps
        // Still full as the encoder slows down: rising within the spacing, then lower than its peak: no new cut.
        for queue in [60.0, 50, 45] {
            now += 250 * Self.ms
            c.update(Self.full(sentKbps: 700, receivedKbps: 600, queueMs: queue), nowNanos: now)
            #expect(c.estimateKbps == cut, "queue \(queue) ms: \(c.estimateKbps)")
        }
        // Higher than any report since the cut: the cut was not enough.
        now += 250 * Self.ms
        c.update(Self.full(sentKbps: 700, receivedKbps: 600, queueMs: 70), nowNanos: now)
        #expect(c.estimateKbps < cut)
        #expect(c.lastReason == .queueing)
    }

    @Test("a path 40 ms longer (a route change) is no queue: one step, then flat, and the rate holds; a queue rising past it still cuts")
    func longerPath() {
        var c = Self.controller(start: 1000)
        var now: UInt64 = 0
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: now)
        // Flat but for the jitter of a busy machine's window minima (5.5 ms seen).
        for queue in [0.0, 1, 0, 40, 45.5, 41, 46, 39, 40, 42, 40] {
            now += 250 * Self.ms
            c.update(Self.full(sentKbps: 1000, receivedKbps: 1000, queueMs: queue), nowNanos: now)
            #expect(c.lastReason != .queueing, "queue \(queue) ms")
        }
        #expect(c.estimateKbps >= 1000, "\(c.estimateKbps)")
        // The round trip rose with it (40 ms each way): no queueing signal from a receiver that reports its own.
        var longer = Self.full(sentKbps: 1000, receivedKbps: 1000, queueMs: 40)
        longer.roundTripsMs = [20]
        now += 250 * Self.ms
        c.update(longer, nowNanos: now)
        longer.roundTripsMs = [105]
        for _ in 0..<4 {
            now += 250 * Self.ms
            c.update(longer, nowNanos: now)
            #expect(c.lastReason != .queueing)
        }
        #expect(c.estimateKbps >= 1000, "\(c.estimateKbps)")
        // On top of the longer path, a queue that fills.
        for queue in [48.0, 60, 75] {
            now += 250 * Self.ms
            c.update(Self.full(sentKbps: 1000, receivedKbps: 900, queueMs: queue), nowNanos: now)
        }
        #expect(c.lastReason == .queueing || c.estimateKbps < 1000)
        // A queue that jumps as far in one report and goes on rising as fast is no path: it cuts.
        var filling = Self.controller(start: 1000)
        var t: UInt64 = 0
        filling.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: t)
        for queue in [0.0, 40, 80] {
            t += 250 * Self.ms
            filling.update(Self.full(sentKbps: 1200, receivedKbps: 1000, queueMs: queue), nowNanos: t)
        }
        #expect(filling.lastReason == .queueing)
    }

    @Test("the receiver's queue: a path that got longer is forgotten after 1.5 s flat; a queue still rising is not; a shorter path is the new base at once")
    func oneWayQueueBase() {
        var q = OneWayQueue()
        var now: Int64 = 0
        func window(_ transit: Double) -> Double? {
            q.add(transitMs: transit + 0.5)
            q.add(transitMs: transit)
            now += 200_000
            return q.close(nowMicros: now)
        }
        for _ in 0..<10 { #expect(window(100) == 0) }
        // +40 ms of path: reads as 40 until it has been flat for 1.5 s, then 0.
        var readings: [Double] = []
        for _ in 0..<12 { readings.append(window(140) ?? -1) }
        #expect(readings.prefix(7).allSatisfy { $0 == 40 }, "\(readings)")
        #expect(readings.suffix(3).allSatisfy { $0 == 0 }, "\(readings)")
        // A queue that keeps rising is never rebased.
        var rising: [Double] = []
        for k in 1...15 { rising.append(window(140 + Double(k) * 4) ?? -1) }
        #expect(rising.last == 60, "\(rising)")
        // Shorter: the new lowest is the base at once.
        #expect(window(90) == 0)
        #expect(window(95) == 5)
        // No packet in a window: nothing to say.
        now += 200_000
        #expect(q.close(nowMicros: now) == nil)
    }

    @Test("the link's capacity is not learnt from loss in the first 3 s, nor from a queue while the receiver got far less than the estimate")
    func capacityLearning() {
        var early = Self.controller(start: 1000, learnCapacityAfterNanos: 3_000_000_000)
        early.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        early.update(Self.reported(kbps: 1000, seconds: 0.5, loss: 0.4), nowNanos: 500 * Self.ms)
        #expect(early.estimateKbps < 1000)
        #expect(early.capacityKbps == nil, "a start-up loss taken for the link")
        early.update(Self.reported(kbps: 1000, seconds: 3, loss: 0.4), nowNanos: 3_500 * Self.ms)
        #expect(early.capacityKbps != nil)
        // A queue while 300 of the 800 allowed got through: a burst, not the link's rate.
        var burst = Self.controller(start: 800)
        var now: UInt64 = 0
        burst.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: now)
        for queue in [0.0, 0, 0, 30] { now += 250 * Self.ms; burst.update(Self.full(sentKbps: 300, receivedKbps: 300, queueMs: queue), nowNanos: now) }
        now += 250 * Self.ms
        burst.update(Self.full(sentKbps: 300, receivedKbps: 300, queueMs: 50), nowNanos: now)
        #expect(burst.lastReason == .queueing)
        #expect(burst.capacityKbps == nil)
        #expect(burst.estimateKbps >= 400, "one cut takes at most half: \(burst.estimateKbps)")
    }

    @Test("an estimate above the capacity while the encoder sends less does not forget the capacity")
    func forgetOnDelivered() {
        var c = Self.controller(start: 1000)
        var now: UInt64 = 500 * Self.ms
        c.update(FeedbackInterval(sent: 0, nacked: 0), nowNanos: 0)
        c.update(Self.reported(kbps: 1000, seconds: 0.5, loss: 0.4), nowNanos: now)
        let capacity = try! #require(c.capacityKbps)
        // A still scene: 300 kbit/s sent for 20 s; the estimate may sit above the capacity.
        Self.run(&c, from: &now, seconds: 20) { _ in Self.reported(kbps: 300, seconds: 0.25, loss: 0) }
        #expect(c.capacityKbps == capacity)
    }

    @Test("RTCP alone: the next cut waits 1.5 s for a report of its own, and heavy loss takes the rate no lower than 85 % of a fresh REMB")
    func rtcpAlone() {
        var c = Self.controller(start: 900)
        c.update(FeedbackInterval(sent: 0, nacked: 0, rembKbps: 1000), nowNanos: 0)
        // Chromium's RTCP: half of what was sent lost (a loss counted over the last second).
        func rtcp(_ kbps: Double, loss: Double) -> FeedbackInterval {
            var i = Self.interval(kbps: kbps, seconds: 0.5, loss: 0)
            i.reportedExpected = i.sent
            i.reportedLost = Int64(Double(i.sent) * loss)
            i.rembKbps = 500
            return i
        }
        c.update(rtcp(800, loss: 0.5), nowNanos: 500 * Self.ms)
        #expect(c.lastReason == .heavyLoss)
        #expect(abs(c.estimateKbps - 425) < 2, "0.85 × the REMB, not 0.9 × 400 × 0.5: \(c.estimateKbps)")
        let first = c.estimateKbps
        c.update(rtcp(600, loss: 0.4), nowNanos: 1_500 * Self.ms)
        #expect(c.estimateKbps == first, "the second report counts the loss before the cut")
        c.update(rtcp(400, loss: 0.1), nowNanos: 2_100 * Self.ms)
        #expect(c.estimateKbps < first)
        #expect(c.lastReason == .loss)
    }
}
