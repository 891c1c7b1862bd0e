/// Counts refused input (signaling messages the server refused, by error code; ICE
/// candidates a node refused, by kind) and decides which refusals to log, so that a flood
/// of bad input makes a few lines, not thousands. Pure: the caller gives the time
/// (seconds, monotonic) and writes the lines.
///
/// Per reason, the first refusal is logged at once; after it, at most one line per
/// `interval`, which says how many refusals of that code were not logged since the last
/// line. Refusals left unlogged when the flood stops are summed up by `summaries(at:)`
/// once their interval has passed (`nextSummary` says when), so none goes unsaid.
/// Every refusal is counted in `totals` whether logged or not.
public struct RefusalLog<Reason: Hashable & Sendable>: Sendable {
    /// One log line to write.
    public struct Line: Sendable, Hashable {
        public var code: Reason
        public var peer: String
        public var details: String
        /// Refusals of this code since the last line that were not logged.
        public var unlogged: Int
        /// Refusals of this code so far, this one included.
        public var total: Int

        public init(code: Reason, peer: String, details: String, unlogged: Int, total: Int) {
            self.code = code; self.peer = peer; self.details = details; self.unlogged = unlogged; self.total = total
        }
    }

    public let interval: Double
    public private(set) var totals: [Reason: Int] = [:]
    private var lastLine: [Reason: Double] = [:]
    private var unlogged: [Reason: Int] = [:]
    /// The last unlogged refusal of each reason (peer, details), for its summary line.
    private var lastUnlogged: [Reason: (peer: String, details: String)] = [:]

    public init(interval: Double = 5) { self.interval = interval }

    /// Counts one refusal of `peer`'s message at `now`; the line to log, or `nil` when
    /// this code was logged less than `interval` ago.
    public mutating func record(_ code: Reason, peer: String, details: String, at now: Double) -> Line? {
        totals[code, default: 0] += 1
        if let last = lastLine[code], now - last < interval {
            unlogged[code, default: 0] += 1
            lastUnlogged[code] = (peer, details)
            return nil
        }
        lastLine[code] = now
        let skipped = unlogged.removeValue(forKey: code) ?? 0
        lastUnlogged[code] = nil
        return Line(code: code, peer: peer, details: details, unlogged: skipped, total: totals[code] ?? 0)
    }

    /// Refusals so far, every reason.
    public var total: Int { totals.values.reduce(0, +) }

    /// When the earliest summary of unlogged refusals is due (nil: none is waiting).
    public var nextSummary: Double? {
        unlogged.keys.compactMap { code in lastLine[code].map { $0 + interval } }.min()
    }

    /// `nextSummary` in nanoseconds for a machine's wake, a millisecond late so that the
    /// rounding of seconds cannot wake it before the summary is due.
    public var nextSummaryNanos: UInt64? { nextSummary.map { UInt64($0 * 1e9) + 1_000_000 } }

    /// A line for each reason with refusals not logged whose interval has passed: the
    /// last of them (its peer and details), `unlogged` saying how many it sums up.
    public mutating func summaries(at now: Double) -> [Line] {
        var lines: [Line] = []
        for (code, count) in unlogged where count > 0 {
            guard let last = lastLine[code], now - last >= interval, let latest = lastUnlogged[code] else { continue }
            lastLine[code] = now
            unlogged[code] = nil
            lastUnlogged[code] = nil
            lines.append(Line(code: code, peer: latest.peer, details: latest.details, unlogged: count, total: totals[code] ?? 0))
        }
        return lines
    }
}
