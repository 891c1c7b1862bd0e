import Synchronization

/// Where a received voice's buffers go on a mixer's timeline: each is due `slack` after
/// it arrives, keeping the voice's own spacing (one offset for the whole stream), so a
/// mixer never waits for it and it is never late there.
///
/// In the stream's first second, until a buffer comes late, the offset follows the buffer
/// that came earliest for its timestamp: a jitter buffer holds its first packet for its
/// latency and then lets the next ones go in a burst, and an offset set by that first
/// packet alone kept the burst (40 ms with the publisher's jitter buffer) as lasting
/// delay on top of the slack (scripts/bench-voice: each received voice 55–63 ms ahead of
/// its arrival instead of 20). Taking time back clips what overlaps; at a stream's start
/// that is a few milliseconds, before anyone speaks. (Not after a late buffer: on a busy
/// machine each hold-up would then cost a gap and a clip.) A late buffer in that second
/// moves the stream without growing the slack: the burst says nothing of the machine.
///
/// After that first second a buffer that arrives late for its slot (the sender's or our
/// own threads held up on a busy machine) moves the whole stream later, which costs one
/// gap of silence the length of the move. The slack then grows (doubled, up to
/// `maxSlackNanos`): on a busy machine the next hold-up is as likely as the last, and a
/// stream re-timed by only as much as it was late is late again at the next, longer one,
/// each time a gap (a fixed 20 ms slack, moved whenever less than half of it was left:
/// 12 gaps in 2 s of Chromium's voice with Chromium and the publisher on two cores). A
/// buffer late because its sender paused (`afterPause`: Opus DTX, whose decoder holds
/// the frame before a pause until the packet after it, `SenderPauses`) moves the stream
/// but says nothing of the machine, so it does not grow the slack.
///
/// Taking time back means cutting audio, which only a time-stretching jitter buffer can
/// do without a click; so it is done only where the cut is not heard and the machine is
/// calm: in a quiet buffer (`quiet`: a pause between words, or silence), 3 s after the
/// last late buffer, once the lead over arrival has stayed above the slack for a whole
/// window. The slack itself comes back down by halves after 10 s without a late buffer.
/// Without this, whatever a stream's first seconds left (a late buffer while its session
/// was set up, moved "without growing" but still moved) stayed as delay for as long as
/// the voice flowed: the field heard the expert 127–215 ms after the expert spoke, the
/// same build from run to run, 125–130 ms once a mute had re-anchored it
/// (scripts/bench-voice).
///
/// A stream that skips ahead in its own timeline (a sender that paused, or its jitter
/// buffer gave up on packets held up with the sender's or our threads, and the next
/// buffer is stamped that much later) would otherwise carry the skipped stretch as a lead
/// over its arrival, on top of any move the hold-up made: each hold-up added its length,
/// and on a busy machine the lead grew past the queue in front of the mixer (200 ms),
/// which then dropped every other buffer for good. Skipped audio is not there to be cut,
/// so the stream is taken back to its slack after the arrival, never before the end of
/// what it already placed.
/// Pure: the pad probe in `AudioProbes.hideLatency` feeds it running times.
public struct PlayoutRetimer: Sendable, Equatable {
    public private(set) var slackNanos: Int64
    public let maxSlackNanos: Int64
    /// How many times the stream was moved after its first buffer (each a gap, or a clip
    /// when time is taken back).
    public private(set) var moves = 0
    /// Whether a late buffer moved the stream (time is then no longer taken back).
    private var movedLate = false
    private var offset: Int64?
    private var firstArrival: Int64?
    /// Where the last buffer ended in the stream's timeline (nil: its length unknown).
    private var streamEnd: Int64?
    /// How far past the last buffer's end a buffer may start and still follow it (the
    /// rounding of timestamps in nanoseconds).
    public static let skipToleranceNanos: Int64 = 2_000_000
    /// How long after the first buffer the offset follows the earliest buffer, both ways,
    /// without growing the slack.
    public static let settlingNanos: Int64 = 1_000_000_000
    /// How far over its slack a stream's lead may be before time is taken back (arrival
    /// jitter on a quiet machine is a few milliseconds).
    public static let takeBackToleranceNanos: Int64 = 5_000_000

    /// The slack it starts with, and comes back down to.
    public let baseSlackNanos: Int64
    /// The lowest lead over arrival in the window now filling, and in the one before
    /// (nil: not complete), with when the one now filling started.
    private var leadWindow: LeadWindow?
    private struct LeadWindow: Sendable, Equatable { var current: Int64; var previous: Int64?; var started: Int64 }
    /// The last late buffer's arrival, a sender's pause aside (or the first buffer's).
    private var lastLate: Int64?
    /// When the slack last came down.
    private var lastHalving: Int64?
    /// How long a lead is watched before time is taken back: two windows of this.
    public static let leadWindowNanos: Int64 = 500_000_000
    /// How long without a late buffer before a lead over the slack is cut: on a busy
    /// machine, where buffers come late every second or so, the lead a move left is what
    /// the next hold-up needs (beside two busy loops, cut at once, the streams were moved
    /// about 3 times a second).
    public static let takeBackCalmNanos: Int64 = 3_000_000_000
    /// How long without a late buffer before the slack comes down by half.
    public static let calmNanos: Int64 = 10_000_000_000

    public init(slackNanos: Int64, maxSlackNanos: Int64) {
        self.slackNanos = slackNanos
        self.baseSlackNanos = slackNanos
        self.maxSlackNanos = max(slackNanos, maxSlackNanos)
    }

    /// The running time at which a buffer stamped `pts` (its jitter buffer's timeline),
    /// arriving at running time `arrived`, is due at the mixer. `durationNanos`: the
    /// buffer's length (0: unknown, and a skip ahead in the stream is then not seen).
    /// `afterPause`: it left its decoder only when a packet after a pause of its sender came.
    /// `quiet`: it holds nothing worth hearing (time may be cut there).
    public mutating func due(pts: Int64, arrived: Int64, durationNanos: Int64 = 0, afterPause: Bool = false,
                             quiet: Bool = false) -> Int64 {
        defer { streamEnd = durationNanos > 0 ? pts + durationNanos : nil }
        if let offset, let streamEnd, pts > streamEnd + Self.skipToleranceNanos {
            // Skipped ahead: back to the slack after the arrival, after what is placed.
            let target = max(arrived + slackNanos, streamEnd + offset)
            if target < pts + offset {
                moves += 1
                self.offset = target - pts
                return max(target, 0)
            }
        }
        let settling = arrived - (firstArrival ?? arrived) < Self.settlingNanos
        if let offset, settling, !movedLate, pts + offset > arrived + slackNanos + Self.takeBackToleranceNanos {
            // Early in the first second: the offset follows this earlier buffer.
            moves += 1
            self.offset = arrived + slackNanos - pts
            return max(arrived + slackNanos, 0)
        }
        if let offset, pts + offset >= arrived {
            if !settling { return onTime(pts: pts, arrived: arrived, offset: offset, quiet: quiet) }
            return max(pts + offset, 0)
        }
        if offset != nil {
            moves += 1
            movedLate = true
            leadWindow = nil
            // A sender's pause is no hold-up: it neither grows the slack nor ends a calm spell.
            if !afterPause {
                lastLate = arrived
                if !settling { slackNanos = min(slackNanos * 2, maxSlackNanos) }
            }
        } else {
            firstArrival = arrived
            lastLate = arrived
        }
        let o = arrived + slackNanos - pts
        offset = o
        return max(pts + o, 0)
    }

    /// An on-time buffer after the first second: the slack comes down after a calm spell,
    /// and a lead that stayed over it is cut in a quiet buffer.
    private mutating func onTime(pts: Int64, arrived: Int64, offset: Int64, quiet: Bool) -> Int64 {
        if slackNanos > baseSlackNanos, arrived - max(lastLate ?? arrived, lastHalving ?? Int64.min) >= Self.calmNanos {
            slackNanos = max(baseSlackNanos, slackNanos / 2)
            lastHalving = arrived
        }
        let lead = pts + offset - arrived
        if var w = leadWindow {
            if arrived - w.started >= Self.leadWindowNanos {
                w = LeadWindow(current: lead, previous: w.current, started: arrived)
            } else {
                w.current = min(w.current, lead)
            }
            leadWindow = w
        } else {
            leadWindow = LeadWindow(current: lead, started: arrived)
        }
        let kept = max(pts + offset, 0)
        guard quiet, arrived - (lastLate ?? arrived) >= Self.takeBackCalmNanos,
              let w = leadWindow, let previous = w.previous else { return kept }
        let excess = min(w.current, previous) - slackNanos
        guard excess > Self.takeBackToleranceNanos else { return kept }
        moves += 1
        self.offset = offset - excess
        leadWindow = nil
        return max(pts + offset - excess, 0)
    }
}

/// A `PlayoutRetimer` shared between the streaming thread that feeds it and the status
/// line that reads it.
package final class PlayoutTiming: Sendable {
    let retimer: Mutex<PlayoutRetimer>
    init(_ retimer: PlayoutRetimer) { self.retimer = Mutex(retimer) }
    /// The slack now (ms) and how many times the stream was moved.
    package var snapshot: (slackMs: Double, moves: Int) {
        retimer.withLock { (Double($0.slackNanos) / 1e6, $0.moves) }
    }
}
