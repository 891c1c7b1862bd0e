import Foundation

// Size, seed and result of a fuzz run. The harnesses read the case count and seed
// from the environment (`POSECAST_FUZZ_CASES`, `POSECAST_FUZZ_SEED`; scripts/fuzz sets
// both) and print one machine-readable line per harness, prefixed `FUZZ-RESULT `.
// Every case has its own seed (`caseSeed`), so one case can be replayed alone
// (`POSECAST_FUZZ_ONLY=INDEX`).

public enum FuzzRun {
    /// Cases per harness: `POSECAST_FUZZ_CASES`, else `defaultCases`.
    public static func caseCount(default defaultCases: Int = 10_000) -> Int {
        guard let text = ProcessInfo.processInfo.environment["POSECAST_FUZZ_CASES"], let n = Int(text), n > 0 else {
            return defaultCases
        }
        return n
    }

    /// The run's seed: `POSECAST_FUZZ_SEED` (decimal or 0x-hex), else a fixed one, so CI is repeatable.
    public static var seed: UInt64 {
        guard let text = ProcessInfo.processInfo.environment["POSECAST_FUZZ_SEED"] else { return 0x5EED_0F_F022 }
        if text.hasPrefix("0x"), let v = UInt64(text.dropFirst(2), radix: 16) { return v }
        return UInt64(text) ?? 0x5EED_0F_F022
    }

    /// The indices to run: all of `0..<count`, or only `POSECAST_FUZZ_ONLY`.
    public static func indices(count: Int) -> [Int] {
        if let text = ProcessInfo.processInfo.environment["POSECAST_FUZZ_ONLY"], let only = Int(text) { return [only] }
        return Array(0..<count)
    }

    /// The seed of case `index` of a run seeded `seed` (mixed so neighbouring cases differ).
    public static func caseSeed(_ seed: UInt64, _ index: Int) -> UInt64 {
        var z = seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 31)) &* 0xD6E8_FEB8_6659_FD93
        return z ^ (z >> 32)
    }
}

/// What a harness saw: each case accepted, rejected (with a reason) or a failure
/// (unanswered, answered wrongly, or a broken invariant).
public struct FuzzTally: Sendable {
    public let harness: String
    public let seed: UInt64
    public private(set) var cases = 0
    public private(set) var accepted = 0
    public private(set) var rejected = 0
    public private(set) var failed = 0
    public private(set) var reasons: [String: Int] = [:]
    public private(set) var kinds: [String: Int] = [:]
    /// The first few failures, with the case index and a prefix of its input.
    public private(set) var failures: [String] = []
    private let start = Date()

    public init(harness: String, seed: UInt64) { self.harness = harness; self.seed = seed }

    public mutating func accept(kind: String) {
        cases += 1; accepted += 1; kinds[kind, default: 0] += 1
    }

    public mutating func reject(_ reason: String, kind: String) {
        cases += 1; rejected += 1; reasons[reason, default: 0] += 1; kinds[kind, default: 0] += 1
    }

    public mutating func fail(case index: Int, _ what: String, input: String) {
        cases += 1; failed += 1
        if failures.count < 10 {
            failures.append("case \(index) (POSECAST_FUZZ_ONLY=\(index) POSECAST_FUZZ_SEED=\(seed)): \(what); input: \(input.prefix(300).debugDescription)")
        }
    }

    /// One JSON line: `FUZZ-RESULT {"harness":…,"cases":…,"accepted":…,"rejected":…,"failed":…,"crashes":0,"seconds":…}`.
    /// `crashes` is 0 by construction: a crash kills the process before this line is printed.
    public func resultLine() -> String {
        let seconds = Date().timeIntervalSince(start)
        let object: [String: Any] = [
            "harness": harness, "seed": String(seed), "cases": cases, "accepted": accepted, "rejected": rejected,
            "failed": failed, "crashes": 0, "seconds": (seconds * 1000).rounded() / 1000,
            "casesPerSecond": seconds > 0 ? Int(Double(cases) / seconds) : 0, "rejectedBy": reasons, "kinds": kinds,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return "FUZZ-RESULT " + String(decoding: data, as: UTF8.self)
    }
}

/// A fuzz case that broke a rule of its harness (not a rejection: a bug).
public struct FuzzViolation: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
