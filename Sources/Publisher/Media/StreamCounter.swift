import Synchronization

/// A count kept on a streaming thread (bytes sent, keyframe requests, drops), read
/// from anywhere.
final class StreamCounter: Sendable {
    private let value = Atomic<UInt64>(0)
    func add(_ n: UInt64) { value.add(n, ordering: .relaxed) }
    var total: UInt64 { value.load(ordering: .relaxed) }
}
