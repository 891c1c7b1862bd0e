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

/// The one polling wait of the test suites: asks `probe` every `every` until it gives
/// a value, and returns it. On a timeout the error says what was awaited and how far
/// things got (`progress`), so a slow machine and a stall read differently; `probe` may
/// throw to give up early (a process that exited).
public func waitFor<T>(_ seconds: Double, _ what: String, every: Duration = .milliseconds(20),
                       progress: () -> String = { "" }, _ probe: () throws -> T?) async throws -> T {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while true {
        if let value = try probe() { return value }
        guard ContinuousClock.now < deadline else {
            let got = progress()
            throw TimeoutError(what: got.isEmpty ? what : "\(what) (got: \(got))", seconds: seconds)
        }
        try await Task.sleep(for: every)
    }
}

/// `waitFor` for a condition.
public func waitUntil(_ seconds: Double, _ what: String, every: Duration = .milliseconds(20),
                      progress: () -> String = { "" }, _ condition: () throws -> Bool) async throws {
    try await waitFor(seconds, what, every: every, progress: progress) { try condition() ? () : nil }
}
