import Synchronization

/// Counts rejected pose elements by reason; safe to bump from streaming threads.
public final class PoseRejectionCounter: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    public init() {}

    public func record(_ error: PoseWireError) {
        counts.withLock { $0[error.reason, default: 0] += 1 }
    }

    public var byReason: [String: Int] { counts.withLock { $0 } }
    public var total: Int { counts.withLock { $0.values.reduce(0, +) } }
}
