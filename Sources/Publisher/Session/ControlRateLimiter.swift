import PoseCastKit

/// How many control-channel messages one session may send: a token bucket holding
/// `burst` messages, refilled at `requestsPerSecond`.
public struct ControlRateLimit: Sendable, Hashable, CustomStringConvertible {
    /// Sustained messages per second (> 0; `.infinity` turns the limit off).
    public var requestsPerSecond: Double
    /// Messages that may arrive at once before the rate applies (≥ 1).
    public var burst: Int

    public init(requestsPerSecond: Double, burst: Int) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = burst
    }

    /// 20 requests a second with room for 40 at once: far above what a person tapping
    /// and steering the camera sends, far below what would swamp the camera routines,
    /// the overlay and the annotation broadcast to every session.
    public static let standard = ControlRateLimit(requestsPerSecond: 20, burst: 40)
    /// No limit (tests, benchmarks).
    public static let unlimited = ControlRateLimit(requestsPerSecond: .infinity, burst: .max)

    public var description: String {
        guard requestsPerSecond.isFinite else { return "unlimited" }
        let rate = requestsPerSecond.rounded() == requestsPerSecond && abs(requestsPerSecond) < 1e15 ? String(Int(requestsPerSecond)) : String(requestsPerSecond)
        return "\(rate) requests/s, burst \(burst)"
    }
}

/// One session's token bucket over the control channel. Every message counts (valid,
/// malformed or binary: a flood of garbage is still a flood); a message that finds the
/// bucket empty is answered `error rateLimited` and not executed, and the session goes
/// on. Pure: the caller passes the time (monotonic nanoseconds), so tests inject it.
public struct ControlRateLimiter: Sendable {
    public let limit: ControlRateLimit
    private var bucket: TokenBucket
    /// Messages refused so far.
    public private(set) var refused: UInt64 = 0

    /// A full bucket at `now`.
    public init(limit: ControlRateLimit, now: UInt64) {
        self.limit = limit
        bucket = TokenBucket(rate: limit.requestsPerSecond, capacity: Double(max(1, limit.burst)), now: Double(now) / 1e9)
    }

    /// Takes one token for a message that arrived at `now`; false when there is none.
    public mutating func admit(at now: UInt64) -> Bool {
        guard bucket.take(at: Double(now) / 1e9) else {
            refused += 1
            return false
        }
        return true
    }

    /// Seconds until the next message would be admitted (0 when it would be now).
    public func secondsUntilNextToken() -> Double { bucket.secondsUntilNextToken() }
}
