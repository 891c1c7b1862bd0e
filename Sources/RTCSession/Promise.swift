internal import CGStreamer
import Synchronization

/// A GstStructure copy this wrapper owns (freed in deinit).
final class OwnedStructure: @unchecked Sendable {
    let raw: UnsafeMutablePointer<GstStructure>
    init(copying source: UnsafePointer<GstStructure>) { raw = gst_structure_copy(source) }
    deinit { gst_structure_free(raw) }

    func value(_ field: String) -> UnsafePointer<GValue>? { gst_structure_get_value(raw, field) }

    /// The GError message webrtcbin puts in an `error` field when an operation fails.
    var errorMessage: String? {
        guard let v = value("error"), g_type_is_a(v.pointee.g_type, g_error_get_type()) != 0,
              let error = g_value_get_boxed(v)?.assumingMemoryBound(to: GError.self) else { return nil }
        return String(cString: error.pointee.message)
    }
}

/// GstPromise as async/await: `body` receives a promise to hand to an action signal;
/// the change function resumes the caller with a copy of the reply (nil when the
/// promise was replied with no structure). Interrupted, expired and dropped are
/// distinct errors.
func awaitPromise(_ operation: String,
                  _ body: (UnsafeMutablePointer<GstPromise>) -> Void) async throws(RTCError) -> OwnedStructure? {
    let result: Result<OwnedStructure?, RTCError> = await withCheckedContinuation { continuation in
        let box = PromiseBox(operation, continuation)
        let promise = gst_promise_new_with_change_func({ promise, userData in
            let box = Unmanaged<PromiseBox>.fromOpaque(userData!).takeUnretainedValue()
            switch gst_promise_wait(promise) {
            case GST_PROMISE_RESULT_REPLIED:
                let reply = gst_promise_get_reply(promise).map { OwnedStructure(copying: $0) }
                if let message = reply?.errorMessage {
                    box.finish(.failure(.negotiation(peer: box.operation, reason: message)))
                } else {
                    box.finish(.success(reply))
                }
            case GST_PROMISE_RESULT_INTERRUPTED: box.finish(.failure(.promise(operation: box.operation, outcome: .interrupted)))
            case GST_PROMISE_RESULT_EXPIRED: box.finish(.failure(.promise(operation: box.operation, outcome: .expired)))
            default: box.finish(.failure(.promise(operation: box.operation, outcome: .noReply)))
            }
        }, Unmanaged.passRetained(box).toOpaque(), { userData in
            let box = Unmanaged<PromiseBox>.fromOpaque(userData!).takeRetainedValue()
            box.finish(.failure(.promise(operation: box.operation, outcome: .dropped)))
        })!
        body(promise)
        gst_promise_unref(promise)
    }
    return try result.get()
}

private final class PromiseBox: Sendable {
    typealias Continuation = CheckedContinuation<Result<OwnedStructure?, RTCError>, Never>
    let operation: String
    private let continuation: Mutex<Continuation?>
    init(_ operation: String, _ continuation: Continuation) {
        self.operation = operation
        self.continuation = Mutex(continuation)
    }
    /// Resumes once; later calls (e.g. the destroy notify after a reply) do nothing.
    func finish(_ result: Result<OwnedStructure?, RTCError>) {
        continuation.withLock { c in
            let pending = c
            c = nil
            return pending
        }?.resume(returning: result)
    }
}
