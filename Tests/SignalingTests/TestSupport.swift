import Foundation
import Logging
import Signaling
import Synchronization
import Testing

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
        if case let .error(details, code, _) = self { return (details, code) }
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
