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
/// Pure: the pad probe in `AudioProbes.hideLatency` feeds it running times.
public struct PlayoutRetimer: Sendable, Equatable {
    public private(set) var slackNanos: Int64
    public let maxSlackNanos: Int64
    /// How many times the stream was moved after its first buffer (each a gap).
    public private(set) var moves = 0
    private var offset: Int64?
    private var firstArrival: Int64?
    /// How long after the first buffer a late one moves the stream without growing the slack.
    public static let settlingNanos: Int64 = 1_000_000_000

    public init(slackNanos: Int64, maxSlackNanos: Int64) {
        self.slackNanos = slackNanos
        self.maxSlackNanos = max(slackNanos, maxSlackNanos)
    }

    /// The running time at which a buffer stamped `pts` (its jitter buffer's timeline),
    /// arriving at running time `arrived`, is due at the mixer.
    public mutating func due(pts: Int64, arrived: Int64) -> Int64 {
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
