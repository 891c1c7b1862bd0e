import Foundation
import Logging
import Signaling
import Synchronization
import Testing

/// A wait that took longer than its limit.
struct TimeoutError: Error, CustomStringConvertible {
    let what: String
    let seconds: Double
    var description: String { "timed out after \(seconds) s waiting for \(what)" }
}

/// Runs `body`, failing with `TimeoutError` if it takes longer than `seconds`.
/// `body` must respond to cancellation (every await in these tests does).
func withTimeout<T: Sendable>(_ seconds: Double = 10, _ what: String = "the operation",
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

/// Ids "id1", "id2", … in the order the hub asks for them (peers and sessions share the counter).
func sequentialIDs(prefix: String = "id") -> @Sendable () -> String {
    final class Counter: Sendable { let value = Mutex(0) }
    let counter = Counter()
    return { "\(prefix)\(counter.value.withLock { $0 += 1; return $0 })" }
}

/// Quiet unless something goes wrong.
let testLogger: Logger = {
    var logger = Logger(label: "signaling-tests")
    logger.logLevel = .warning
    return logger
}()

extension ServerMessage {
    /// `(details, code)` when this is an error.
    var errorInfo: (details: String, code: SignalingErrorCode?)? {
        if case let .error(details, code) = self { return (details, code) }
        return nil
    }
}

/// A value shared with `@Sendable` closures (WebSocket handlers) in tests.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    var value: Value { mutex.withLock { $0 } }
    func mutate(_ body: (inout Value) -> Void) { mutex.withLock { body(&$0) } }
}
