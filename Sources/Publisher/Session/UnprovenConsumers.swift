/// Consumers whose sessions through the SFU ended at their setup deadline without naming a
/// frame they received (`PublisherSessions`). The first such end costs nothing (a Janus
/// that was slow once); from the second in a row the consumer waits before its next
/// session through the SFU, `base` then doubling up to `maximum`, so a stranger cannot
/// keep sessions by asking again each time the deadline ends them. A session of its that
/// proves itself clears the record. Pure; times are monotonic nanoseconds.
struct UnprovenConsumers: Sendable {
    let base: UInt64
    let maximum: UInt64
    private var records: [String: (count: Int, at: UInt64)] = [:]

    init(base: UInt64, maximum: UInt64) { self.base = base; self.maximum = max(base, maximum) }

    /// How many consumers are remembered (bounded by `forget`).
    var count: Int { records.count }

    mutating func ended(_ consumer: String, at now: UInt64) {
        records[consumer] = ((records[consumer]?.count ?? 0) + 1, now)
    }

    mutating func proved(_ consumer: String) { records[consumer] = nil }

    /// How long `consumer` must still wait at `now` (nanoseconds), or nil when it may ask.
    func wait(_ consumer: String, now: UInt64) -> UInt64? {
        guard let record = records[consumer], record.count >= 2 else { return nil }
        let until = record.at &+ penalty(afterEnds: record.count)
        return until > now ? until - now : nil
    }

    /// The wait after `ends` unproven ends in a row.
    func penalty(afterEnds ends: Int) -> UInt64 {
        guard ends >= 2 else { return 0 }
        let doublings = min(ends - 2, 20)
        return min(base << UInt64(doublings), maximum)
    }

    /// Drops the records whose wait ended more than `maximum` ago (so a stranger that
    /// never comes back is not remembered for ever).
    mutating func forget(at now: UInt64) {
        records = records.filter { _, record in record.at &+ penalty(afterEnds: record.count) &+ maximum > now }
    }
}
