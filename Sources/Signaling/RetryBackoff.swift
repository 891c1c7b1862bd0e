/// How long a node waits before asking again to get into a busy room (`roomFull`):
/// `initial` after the first refusal, doubling with each refusal in a row, at most `maximum`.
public struct RetryBackoff: Sendable, Hashable {
    public var initial: Duration
    public var maximum: Duration

    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(8)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The wait after `refusals` refusals in a row (1 for the first).
    public func delay(afterRefusals refusals: Int) -> Duration {
        var delay = initial
        for _ in 1..<max(1, refusals) {
            delay *= 2
            if delay >= maximum { return maximum }
        }
        return min(delay, maximum)
    }

    /// `duration` in whole nanoseconds (negative: zero), for the state machines' clocks.
    public static func nanos(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}
