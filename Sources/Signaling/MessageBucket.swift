/// A token bucket: one token per message, refilled continuously at a rate, holding at
/// most a burst. Time is passed in (seconds on any monotonic clock), so the hub stays a
/// pure state machine and tests can step time by hand.
struct MessageBucket: Sendable, Hashable {
    private var tokens: Double?
    private var last = 0.0

    /// Takes one token at `now`; false when none is left (the message must be refused).
    /// A clock that steps backwards refills nothing.
    mutating func take(at now: Double, rate: Double, burst: Double) -> Bool {
        guard let current = tokens else {
            // First message: a full bucket.
            tokens = burst - 1
            last = now
            return burst >= 1
        }
        let refilled = min(burst, current + max(0, now - last) * rate)
        last = max(last, now)
        // A hair of slack so that messages at exactly the rate are not refused by rounding.
        guard refilled >= 1 - 1e-9 else {
            tokens = refilled
            return false
        }
        tokens = max(0, refilled - 1)
        return true
    }
}
