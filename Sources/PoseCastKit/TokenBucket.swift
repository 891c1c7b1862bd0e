/// A token bucket: one token per message, refilled continuously at `rate` per second,
/// holding at most `capacity`. Time is passed in (seconds on any monotonic clock), so
/// its users stay pure and tests step time by hand. An infinite rate is no limit. A
/// clock that steps backwards (or NaN) refills nothing. Used by the signaling hub per
/// connection and by the publisher per control-channel session.
public struct TokenBucket: Sendable, Hashable {
    public let rate: Double
    public let capacity: Double
    private var tokens: Double
    private var last: Double

    /// A full bucket at `now`.
    public init(rate: Double, capacity: Double, now: Double) {
        self.rate = rate
        self.capacity = capacity
        tokens = capacity
        last = now
    }

    /// Takes one token at `now`; false when none is left (the message must be refused).
    /// `share` (0 < share ≤ 1) takes that much of a token instead: a sender whose budget
    /// grows with what it speaks for (the signaling hub's producer: 1/sessions) gets that
    /// many more messages, burst and rate alike.
    public mutating func take(at now: Double, share: Double = 1) -> Bool {
        let cost = share.isFinite && share > 0 ? min(share, 1) : 1
        guard rate.isFinite else { return true }
        if now > last {
            tokens = min(capacity, tokens + (now - last) * max(0, rate))
            last = now
        }
        // A hair of slack so that messages at exactly the rate are not refused by rounding.
        guard tokens >= cost - 1e-9 else { return false }
        tokens = max(0, tokens - cost)
        return true
    }

    /// Seconds until the next token (0 when one is there now).
    public func secondsUntilNextToken() -> Double {
        guard rate.isFinite, tokens < 1 - 1e-9 else { return 0 }
        return rate > 0 ? (1 - tokens) / rate : .infinity
    }
}
