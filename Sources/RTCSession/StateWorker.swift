import Dispatch

/// The one place GStreamer state changes and teardown run: a serial queue on a thread of
/// its own, never Swift's cooperative pool. Setting an element to NULL joins its
/// streaming threads and can block for as long as a streaming thread needs to finish
/// its buffer; `gst_element_get_state` with a timeout blocks by design. On these
/// machines the cooperative pool has two threads: two such calls there would stall every
/// task of the process (signaling, status, event streams) while they wait.
/// Work is done in submission order, so a teardown queued before a start runs first.
package final class StateWorker: Sendable {
    package static let shared = StateWorker()
    private let queue = DispatchQueue(label: "posecast.gst-state", qos: .userInitiated)
    private static let marker = DispatchSpecificKey<Bool>()

    private init() { queue.setSpecific(key: Self.marker, value: true) }

    /// Whether the calling code runs on the worker.
    package var isCurrent: Bool { DispatchQueue.getSpecific(key: Self.marker) == true }

    /// Runs `body` on the worker and waits (suspending, not blocking) for its result.
    package func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }

    /// Queues `body` on the worker and returns at once (teardown nobody waits for).
    package func submit(_ body: @escaping @Sendable () -> Void) { queue.async(execute: body) }

    /// Blocks the calling thread until everything queued so far has run (process exit,
    /// tests): never call it from the cooperative pool.
    package func drain() { if !isCurrent { queue.sync {} } }
}
