import RTCSession
import PoseMedia

/// Holds every outgoing control message for a fixed delay before it goes out, in
/// order: a slow network on the control channel, for the annotation benchmark.
final class DelayedSender: Sendable {
    private let continuation: AsyncStream<(ContinuousClock.Instant, DataChannel, String)>.Continuation
    private let task: Task<Void, Never>

    init(delay: Duration, onError: @escaping @Sendable (String) -> Void) {
        let (stream, continuation) = AsyncStream.makeStream(of: (ContinuousClock.Instant, DataChannel, String).self)
        self.continuation = continuation
        task = Task {
            for await (due, channel, text) in stream {
                try? await Task.sleep(until: due, clock: .continuous)
                do throws(RTCError) { try channel.send(text) } catch { onError("delayed control message not sent: \(error)") }
            }
        }
        self.delay = delay
    }

    let delay: Duration

    func send(_ text: String, on channel: DataChannel) {
        continuation.yield((.now + delay, channel, text))
    }

    deinit {
        continuation.finish()
        task.cancel()
    }
}
