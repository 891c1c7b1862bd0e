/// Where a received voice's buffers go on a mixer's timeline: each is due `slack` after
/// it arrives, keeping the voice's own spacing (one offset for the whole stream), so a
/// mixer never waits for it and it is never late there.
///
/// A buffer that arrives late for its slot (the sender's or our own threads held up on
/// a busy machine) moves the whole stream later, which costs one gap of silence the
/// length of the move. The slack then grows (doubled, up to `maxSlackNanos`): on a busy
/// machine the next hold-up is as likely as the last, and a stream re-timed by only as
/// much as it was late is late again at the next, longer one, each time a gap (a fixed
/// 20 ms slack, moved whenever less than half of it was left: 12 gaps in 2 s of Chromium's
/// voice with Chromium and the publisher on two cores). It never
/// shrinks: taking time back means cutting audio, which only a time-stretching jitter
/// buffer can do without a click. In the stream's first second it moves without growing:
/// a jitter buffer releases its first packets in a burst, which says nothing of the
/// machine (grown there, the slack stayed at 80 ms and mute took 124 ms to be heard).
///
/// A stream that skips ahead in its own timeline (its jitter buffer gave up on packets
/// held up with the sender's or our threads, and the next buffer is stamped that much
/// later) would otherwise carry the skipped stretch as a lead over its arrival, on top of
/// any move the hold-up made: each hold-up added its length, and on a busy machine the
/// lead grew past the queue in front of the mixer (200 ms), which then dropped every other
/// buffer for good. Skipped audio is not there to be cut, so the stream is taken back to
/// its slack after the arrival, never before the end of what it already placed.
/// Pure: the pad probe in `AudioProbes.hideLatency` feeds it running times.
public struct PlayoutRetimer: Sendable, Equatable {
    public private(set) var slackNanos: Int64
    public let maxSlackNanos: Int64
    /// How many times the stream was moved after its first buffer (each a gap).
    public private(set) var moves = 0
    private var offset: Int64?
    private var firstArrival: Int64?
    /// Where the last buffer ended in the stream's timeline (nil: its length unknown).
    private var streamEnd: Int64?
    /// How far past the last buffer's end a buffer may start and still follow it (the
    /// rounding of timestamps in nanoseconds).
    public static let skipToleranceNanos: Int64 = 2_000_000
    /// How long after the first buffer a late one moves the stream without growing the slack.
    public static let settlingNanos: Int64 = 1_000_000_000

    public init(slackNanos: Int64, maxSlackNanos: Int64) {
        self.slackNanos = slackNanos
        self.maxSlackNanos = max(slackNanos, maxSlackNanos)
    }

    /// The running time at which a buffer stamped `pts` (its jitter buffer's timeline),
    /// arriving at running time `arrived`, is due at the mixer. `durationNanos`: the
    /// buffer's length (0: unknown, and a skip ahead in the stream is then not seen).
    public mutating func due(pts: Int64, arrived: Int64, durationNanos: Int64 = 0) -> Int64 {
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
        if let offset, pts + offset >= arrived {
            return max(pts + offset, 0)
        }
        if offset != nil {
            moves += 1
            if arrived - (firstArrival ?? arrived) >= Self.settlingNanos { slackNanos = min(slackNanos * 2, maxSlackNanos) }
        } else {
            firstArrival = arrived
        }
        let o = arrived + slackNanos - pts
        offset = o
        return max(pts + o, 0)
    }
}
