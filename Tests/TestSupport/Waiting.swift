// Helpers every test harness shares: time limits on waits and a deterministic random source.

/// A wait that took longer than its limit.
public struct TimeoutError: Error, CustomStringConvertible {
    public let what: String
    public let seconds: Double
    public init(what: String, seconds: Double) { self.what = what; self.seconds = seconds }
    public var description: String { "timed out after \(seconds) s waiting for \(what)" }
}

/// Runs `body`, failing with `TimeoutError` when it takes longer than `seconds`.
/// `body` must respond to cancellation.
public func withTimeout<T: Sendable>(_ seconds: Double = 10, _ what: String = "the operation",
                                     _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimeoutError(what: what, seconds: seconds)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TimeoutError(what: what, seconds: seconds) }
        return first
    }
}

/// Polls `condition` every 50 ms until it holds or `seconds` pass; on a timeout the
/// error says how far things got (`progress`), so a slow machine and a stall differ.
public func waitUntil(_ seconds: Double, _ what: String, progress: (@Sendable () -> String)? = nil,
                      _ condition: @escaping @Sendable () -> Bool) async throws {
    do {
        try await withTimeout(seconds, what) {
            while !condition() { try await Task.sleep(for: .milliseconds(50)) }
        }
    } catch let error as TimeoutError {
        guard let progress else { throw error }
        throw TimeoutError(what: "\(what) (got: \(progress()))", seconds: seconds)
    }
}
