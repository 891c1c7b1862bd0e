import Logging
import Synchronization

/// What happens on a signaling link, in order.
public enum SignalingLinkEvent: Sendable, Hashable {
    /// A connection is up; the server welcomed us as `peerId`. Nothing is declared yet.
    case connected(peerId: String)
    /// A server message on the current connection (after `welcome`).
    case message(ServerMessage)
    /// The connection is gone, or the attempt failed; the link tries again by itself.
    case lost(reason: String)
}

/// A signaling connection that comes back by itself: what both nodes need from the
/// server, with nothing of sockets in it, so a test can stand in for the server.
public protocol SignalingLink: Sendable {
    /// Connects, reports, and reconnects after each loss until the task iterating the
    /// stream is cancelled (the stream then finishes without a last `lost`).
    /// One stream per call; call it once per run.
    func events() -> AsyncStream<SignalingLinkEvent>
    /// Queues on the current connection, in call order, without waiting or calling back
    /// (nodes call it under their state lock); throws `.closed` while there is none.
    func send(_ message: ClientMessage) throws(SignalingClientError)
}

/// The real link: `SignalingClient` connections to one URL, `reconnectDelay` apart.
public final class SignalingClientLink: SignalingLink {
    public let url: String
    public let tls: SignalingClientTLS?
    public let reconnectDelay: Duration
    private let logger: Logger
    private let current = Mutex<SignalingClient?>(nil)

    public init(url: String, tls: SignalingClientTLS? = nil, reconnectDelay: Duration, logger: Logger) {
        self.url = url
        self.tls = tls
        self.reconnectDelay = reconnectDelay
        self.logger = logger
    }

    public func events() -> AsyncStream<SignalingLinkEvent> {
        AsyncStream(SignalingLinkEvent.self, bufferingPolicy: .unbounded) { continuation in
            let task = Task {
                await self.connectLoop(continuation)
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func send(_ message: ClientMessage) throws(SignalingClientError) {
        guard let client = current.withLock({ $0 }) else { throw .closed }
        try client.send(message)
    }

    private func connectLoop(_ continuation: AsyncStream<SignalingLinkEvent>.Continuation) async {
        while !Task.isCancelled {
            do throws(SignalingClientError) {
                let client = try await SignalingClient.connect(url: url, tls: tls, logger: logger)
                current.withLock { $0 = client }
                continuation.yield(.connected(peerId: client.peerId))
                await withTaskCancellationHandler {
                    for await message in client.messages { continuation.yield(.message(message)) }
                } onCancel: { client.close() }
                current.withLock { $0 = nil }
                if Task.isCancelled { return }
                continuation.yield(.lost(reason: "the signaling server closed the connection"))
            } catch {
                current.withLock { $0 = nil }
                if Task.isCancelled { return }
                continuation.yield(.lost(reason: error.description))
            }
            try? await Task.sleep(for: reconnectDelay)
        }
    }
}
