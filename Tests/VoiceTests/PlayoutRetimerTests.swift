import Testing
import Voice

private let ms: Int64 = 1_000_000

/// Where received voice buffers land on a mixer's timeline (`PlayoutRetimer`), on
/// made-up arrival times: 20 ms packets, arrival jitter as a busy machine gives it.
@Suite("playout retimer")
struct PlayoutRetimerTests {

    /// Feeds 20 ms packets stamped 0, 20, 40 … ms arriving at `start + i·20 ms + jitter[i]`;
    /// returns the due times and the gaps (due − previous due − 20 ms) that are not zero.
    static func run(_ retimer: inout PlayoutRetimer, jitterMs: [Int64], start: Int64 = 5_000 * ms)
        -> (due: [Int64], gaps: [Int64]) {
        var due: [Int64] = [], gaps: [Int64] = []
        for (i, j) in jitterMs.enumerated() {
            let pts = Int64(i) * 20 * ms
            let d = retimer.due(pts: pts, arrived: start + pts + j * ms)
            #expect(d >= start + pts + j * ms, "packet \(i) due at \(d), before it arrived")
            if let last = due.last, d - last != 20 * ms { gaps.append(d - last - 20 * ms) }
            due.append(d)
        }
        return (due, gaps)
    }

    @Test("the first packet is due its slack after it arrives; the voice's own spacing is kept; jitter within the slack moves nothing")
    func steady() {
        var r = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        let (due, gaps) = Self.run(&r, jitterMs: [0, 5, 19, 12, 0, 20, 3])
        #expect(due.first == 5_020 * ms)
        #expect(gaps.isEmpty)
        #expect(r.moves == 0 && r.slackNanos == 20 * ms)
    }

    @Test("in the first second a late packet moves the stream without growing the slack")
    func settling() {
        var r = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        var jitter = [Int64](repeating: 0, count: 100)
        jitter[5] = 30; jitter[70] = 80
        let (_, gaps) = Self.run(&r, jitterMs: jitter)
        #expect(gaps.count == 2 && r.moves == 2)
        #expect(r.slackNanos == 40 * ms, "grown once, after the first second: \(r.slackNanos / ms) ms")
    }

    @Test("a late packet moves the stream once, by as much as it was late plus the new slack, and the slack doubles up to its limit")
    func late() {
        var r = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        // Packet 60 (1.2 s in), 30 ms late: moved so that it is due 40 ms (the doubled
        // slack) after it arrived.
        var jitter = [Int64](repeating: 0, count: 65)
        jitter[60] = 50; jitter[61] = 45; jitter[62] = 30
        let (due, gaps) = Self.run(&r, jitterMs: jitter)
        #expect(due[60] == 5_000 * ms + 1_200 * ms + 50 * ms + 40 * ms)
        #expect(gaps == [70 * ms])
        #expect(r.moves == 1 && r.slackNanos == 40 * ms)
        var capped = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        var worse = [Int64](repeating: 0, count: 100)
        worse[55] = 30; worse[65] = 100; worse[75] = 250; worse[85] = 500
        _ = Self.run(&capped, jitterMs: worse)
        #expect(capped.moves == 4 && capped.slackNanos == 80 * ms)
    }

    /// Hold-ups of 10–60 ms every few packets (Chromium, the publisher and the test on two
    /// cores): the first moves cost gaps, then the grown slack takes the rest.
    @Test("repeated hold-ups of a busy machine cost a few gaps, not one each; due times only ever move later")
    func busy() {
        var jitter = [Int64](repeating: 0, count: 500)
        var seed: UInt64 = 7
        for i in stride(from: 3, to: 500, by: 4) {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            jitter[i] = 10 + Int64(seed >> 33) % 51
        }
        var r = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        let (due, gaps) = Self.run(&r, jitterMs: jitter)
        #expect(gaps.count <= 3 && r.moves == gaps.count, "gaps \(gaps.map { $0 / ms }) ms")
        #expect(zip(due, due.dropFirst()).allSatisfy { $0 < $1 })
        #expect(r.slackNanos <= 80 * ms)
    }

    /// As seen on two cores with two busy loops: arrivals stall 230 ms; the first buffer
    /// after the stall comes late, and the next is stamped 238 ms later than the one before
    /// it (its jitter buffer gave the stalled packets up). Without a skip seen, the lead over
    /// arrival kept the 218 ms skipped, plus the slack, past the 200 ms queue before the mixer.
    @Test("a stream that skips ahead after a stall is taken back to its slack after arrival, never overlapping what is placed")
    func skipAhead() {
        var r = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        let start = 5_000 * ms
        var packets: [(pts: Int64, arrived: Int64)] = (0..<100).map { (Int64($0) * 20 * ms, start + Int64($0) * 20 * ms) }
        // Packet 100 230 ms late; then the stream skips 11 packets and flows on from there.
        let stalled = start + 100 * 20 * ms + 230 * ms
        packets.append((100 * 20 * ms, stalled))
        for i in 0..<60 { packets.append(((112 + Int64(i)) * 20 * ms, stalled + Int64(i) * 20 * ms)) }
        var placedEnd: Int64 = 0, leads: [Int64] = []
        for (pts, arrived) in packets {
            let due = r.due(pts: pts, arrived: arrived, durationNanos: 20 * ms)
            #expect(due >= arrived && due >= placedEnd, "due \(due / ms), arrived \(arrived / ms), placed to \(placedEnd / ms)")
            placedEnd = due + 20 * ms
            leads.append(due - arrived)
        }
        #expect(r.moves == 2, "one move for the late packet, one for the skip")
        #expect(leads.suffix(59).allSatisfy { $0 <= r.maxSlackNanos }, "leads after the skip: \(leads.suffix(59).map { $0 / ms }) ms")
        // Without durations the skip is not seen: the lead keeps it.
        var blind = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        let blindDue = packets.map { blind.due(pts: $0.pts, arrived: $0.arrived) }
        #expect(blindDue.last! - packets.last!.arrived > 200 * ms)
    }

    /// A jitter buffer holds its first packet for its latency (40 ms), then lets the next
    /// four go at once: set by the first alone, the offset kept that 40 ms for good.
    @Test("a first burst: the offset follows the earliest packet of the first second, so the lead is the slack, not slack plus the burst")
    func firstBurst() {
        var r = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        let start = 5_000 * ms
        var leads: [Int64] = []
        for i in 0..<200 {
            let pts = Int64(i) * 10 * ms
            let arrived = i < 5 ? start + 40 * ms : start + pts + (i % 3 == 0 ? 2 * ms : 0)
            leads.append(r.due(pts: pts, arrived: arrived, durationNanos: 10 * ms) - arrived)
        }
        #expect(leads.dropFirst(5).allSatisfy { $0 <= 20 * ms + PlayoutRetimer.takeBackToleranceNanos },
                "leads after the burst: \(Set(leads.dropFirst(5).map { $0 / ms }).sorted()) ms")
        #expect(leads.dropFirst(5).allSatisfy { $0 >= 0 })
        #expect(r.slackNanos == 20 * ms)
        // After the first second, an early buffer moves nothing (it would clip speech).
        var later = r
        let moves = later.moves
        _ = later.due(pts: 200 * 10 * ms, arrived: start + 200 * 10 * ms - 30 * ms, durationNanos: 10 * ms)
        #expect(later.moves == moves)
    }

    /// Opus DTX: a muted sender sends a packet every ~200 ms; the decoder gives out the
    /// frame before each pause only when the next packet comes, 200 ms late.
    @Test("a buffer late because its sender paused moves the stream but does not grow the slack; a hold-up still does")
    func senderPause() {
        var r = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        let start = 5_000 * ms
        for i in 0..<200 { _ = r.due(pts: Int64(i) * 10 * ms, arrived: start + Int64(i) * 10 * ms, durationNanos: 10 * ms) }
        // Frame 200 contiguous in the stream but out 200 ms late, after a pause; then
        // comfort noise every 210 ms.
        var arrived = start + 200 * 10 * ms + 200 * ms
        var pts = Int64(200) * 10 * ms
        var due = r.due(pts: pts, arrived: arrived, durationNanos: 10 * ms, afterPause: true)
        #expect(due == arrived + 20 * ms)
        for _ in 0..<5 {
            pts += 210 * ms; arrived += 210 * ms
            due = r.due(pts: pts, arrived: arrived, durationNanos: 10 * ms, afterPause: true)
            #expect(due - arrived == 20 * ms)
        }
        #expect(r.slackNanos == 20 * ms)
        // Nor does it end a calm spell: a lead over the slack is still cut in quiet.
        var calm = r
        let cutPts = pts + 10 * ms, cutArrived = arrived + 10 * ms - 30 * ms
        for k in Int64(0)..<120 { _ = calm.due(pts: cutPts + k * 10 * ms, arrived: cutArrived + k * 10 * ms, durationNanos: 10 * ms, quiet: true) }
        #expect(calm.due(pts: cutPts + 120 * 10 * ms, arrived: cutArrived + 120 * 10 * ms, durationNanos: 10 * ms, quiet: true)
                - (cutArrived + 120 * 10 * ms) == 20 * ms)
        // The same lateness with the sender talking on is a hold-up.
        pts += 10 * ms; arrived += 10 * ms + 50 * ms
        _ = r.due(pts: pts, arrived: arrived, durationNanos: 10 * ms)
        #expect(r.slackNanos == 40 * ms)
    }

    /// A late buffer while the session was set up left 40 ms of lead over the slack; it
    /// is cut where nothing is heard, not in the middle of a word.
    @Test("a lead left over the slack is taken back in the first quiet buffer 3 s after the last late one, once it held for a whole window; never in speech")
    func takeBackInQuiet() {
        var r = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        let start = 5_000 * ms
        var leads: [Int64] = [], dues: [Int64] = [], arrivals: [Int64] = []
        for i in 0..<500 {
            let pts = Int64(i) * 10 * ms
            let arrived = start + pts + (i == 5 ? 40 * ms : 0)
            let due = r.due(pts: pts, arrived: arrived, durationNanos: 10 * ms, quiet: (250..<300).contains(i) || i >= 350)
            leads.append(due - arrived); dues.append(due); arrivals.append(arrived)
        }
        #expect(leads[6..<350].allSatisfy { $0 == 60 * ms }, "speech, or quiet within 3 s of the late buffer: the lead is kept")
        #expect(leads[350...].allSatisfy { $0 == 20 * ms }, "quiet: cut at once to the slack, \(Set(leads[350...].map { $0 / ms }))")
        #expect(zip(dues, arrivals).allSatisfy { $0 >= $1 })
        #expect(r.moves == 2 && r.slackNanos == 20 * ms)
    }

    @Test("after 10 s without a late buffer the slack comes down by half, and the lead with it in quiet buffers")
    func calmSlack() {
        var r = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        let start = 5_000 * ms
        var lastLead: Int64 = 0
        for i in 0..<1400 {
            let pts = Int64(i) * 10 * ms
            let arrived = start + pts + (i == 150 ? 30 * ms : 0)
            lastLead = r.due(pts: pts, arrived: arrived, durationNanos: 10 * ms, quiet: i >= 1250) - arrived
            if i == 200 { #expect(r.slackNanos == 40 * ms && lastLead == 70 * ms) }
        }
        #expect(r.slackNanos == 20 * ms, "10 s after the late buffer at 1.5 s")
        #expect(lastLead == 20 * ms)
    }

    @Test("buffers that follow each other with their lengths given, bursts included, move nothing")
    func contiguousWithLengths() {
        var r = PlayoutRetimer(slackNanos: 20 * ms, maxSlackNanos: 80 * ms)
        // Five packets released at once by a jitter buffer, then steady again.
        let arrivals: [Int64] = [0, 20, 40, 60, 140, 140, 140, 140, 140, 180, 200, 220].map { 5_000 * ms + $0 * ms }
        var last: Int64?
        for (i, arrived) in arrivals.enumerated() {
            let due = r.due(pts: Int64(i) * 20 * ms, arrived: arrived, durationNanos: 20 * ms)
            if let last { #expect(due - last == 20 * ms || i == 4) }
            last = due
        }
        #expect(r.moves == 1, "only the late packet 4 moved the stream")
    }
}
