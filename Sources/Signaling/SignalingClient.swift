import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOSSL

/// Why a signaling connection could not be made or used.
public enum SignalingClientError: Error, CustomStringConvertible, Sendable, Hashable {
    /// Not a `ws://` or `wss://` URL with a host.
    case invalidURL(String)
    /// No WebSocket connection: refused, unreachable, TLS or upgrade failure.
    case connectFailed(url: String, reason: String)
    /// Connected, but the server's first message was not `welcome` or none came within the time limit.
    case noWelcome(url: String)
    /// The connection is gone (closed by either side).
    case closed

    public var description: String {
        switch self {
        case .invalidURL(let url): "not a ws:// or wss:// URL: \(url)"
        case let .connectFailed(url, reason): "could not connect to \(url): \(reason)"
        case .noWelcome(let url): "\(url) did not welcome us (is it a PoseCast or GStreamer signaling server?)"
        case .closed: "the signaling connection is closed"
        }
    }
}

/// A connection to a signaling server (ours or GStreamer's).
///
/// One task runs the WebSocket: a writer drains the queue `send` fills, a reader decodes
/// what the server sends into `messages` (undecodable text is logged and skipped). The
/// connection closes on `close()`, when the server closes it, or when the client is
/// deinitialised; `messages` then finishes and `send` throws `.closed`.
public final class SignalingClient: Sendable {
    /// The id the server gave us in `welcome`.
    public let peerId: String
    /// Every server message after `welcome`, in order; finishes when the connection closes (for any reason).
    public let messages: AsyncStream<ServerMessage>

    private let outgoing: AsyncStream<Outgoing>.Continuation

    /// How long `connect` waits for the connection and the server's `welcome`.
    static let welcomeTimeout: Duration = .seconds(10)
    /// Largest message (and frame) read from the server.
    static let maxMessageBytes = 1 << 20
    /// How long a close handshake we started may take before the connection is dropped.
    static let closeGrace: Duration = .seconds(5)

    private enum Outgoing: Sendable {
        case message(ClientMessage)
        case close
    }

    /// What the connection task reports to `connect`, once.
    private enum Hello: Sendable {
        case welcome(peerId: String)
        case unexpected
        case failed(reason: String)
    }

    private init(peerId: String, messages: AsyncStream<ServerMessage>, outgoing: AsyncStream<Outgoing>.Continuation) {
        self.peerId = peerId
        self.messages = messages
        self.outgoing = outgoing
    }

    deinit {
        close()
    }

    /// Connects (ws:// or wss://), waits for `welcome` (timeout 10 s), then returns.
    /// `tls` says how a `wss://` server is checked (default: the system's trust store).
    public static func connect(url: String, tls: SignalingClientTLS? = nil,
                               logger: Logger) async throws(SignalingClientError) -> SignalingClient {
        try validate(url)
        let secure = url.lowercased().hasPrefix("wss://")
        if secure, let host = URLComponents(string: url)?.host, isIPLiteral(host) {
            // TLS names the server by SNI, which cannot carry an IP address (RFC 6066).
            throw .invalidURL("\(url): wss:// needs the host name on the server's certificate, not an IP address")
        }
        let tlsConfiguration = secure ? (tls ?? SignalingClientTLS()).configuration() : nil
        let (messages, inbox) = AsyncStream.makeStream(of: ServerMessage.self)
        let (queue, outgoing) = AsyncStream.makeStream(of: Outgoing.self)
        let (hellos, hello) = AsyncStream.makeStream(of: Hello.self)
        let task = Task {
            await run(url: url, tls: tlsConfiguration, logger: logger, queue: queue, inbox: inbox, hello: hello)
            outgoing.finish()
            inbox.finish()
            hello.finish()
        }

        switch await firstHello(hellos) {
        case .welcome(let peerId)?:
            logger.debug("signaling connected", metadata: ["url": "\(url)", "peer": "\(peerId)"])
            return SignalingClient(peerId: peerId, messages: messages, outgoing: outgoing)
        case .failed(let reason)?:
            throw .connectFailed(url: url, reason: reason)
        case .unexpected?:
            outgoing.yield(.close)
            outgoing.finish()
            throw .noWelcome(url: url)
        case nil:
            task.cancel()
            if Task.isCancelled { throw .connectFailed(url: url, reason: "cancelled") }
            throw .noWelcome(url: url)
        }
    }

    /// Queues a message; throws `.closed` once the connection is gone.
    public func send(_ message: ClientMessage) throws(SignalingClientError) {
        if case .terminated = outgoing.yield(.message(message)) { throw .closed }
    }

    /// Closes the connection (close handshake); `messages` then finishes.
    public func close() {
        outgoing.yield(.close)
        outgoing.finish()
    }

    // MARK: - Connection task

    /// An IPv4 or IPv6 address rather than a name (NIO's address parser decides).
    private static func isIPLiteral(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return (try? SocketAddress(ipAddress: bare, port: 0)) != nil
    }

    private static func validate(_ url: String) throws(SignalingClientError) {
        guard let components = URLComponents(string: url),
              let scheme = components.scheme?.lowercased(), scheme == "ws" || scheme == "wss",
              let host = components.host, !host.isEmpty,
              components.port.map({ (1...65535).contains($0) }) ?? true
        else { throw .invalidURL(url) }
    }

    /// The first report of the connection task, or `nil` after `welcomeTimeout` (or on cancellation).
    private static func firstHello(_ hellos: AsyncStream<Hello>) async -> Hello? {
        await withTaskGroup(of: Hello?.self) { group in
            group.addTask {
                for await hello in hellos { return hello }
                return .failed(reason: "the connection ended")
            }
            group.addTask {
                try? await Task.sleep(for: welcomeTimeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    private static func run(url: String, tls: TLSConfiguration?, logger: Logger, queue: AsyncStream<Outgoing>,
                            inbox: AsyncStream<ServerMessage>.Continuation,
                            hello: AsyncStream<Hello>.Continuation) async {
        let configuration = WebSocketClientConfiguration(maxFrameSize: maxMessageBytes)
        do {
            try await WebSocketClient.connect(url: url, configuration: configuration, tlsConfiguration: tls,
                                              logger: logger) { inbound, outbound, _ in
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await item in queue {
                            switch item {
                            case .message(let message):
                                do {
                                    try await outbound.write(.text(SignalingCodec.encode(message)))
                                } catch {
                                    logger.debug("signaling write failed", metadata: ["error": "\(error)"])
                                    return
                                }
                            case .close:
                                try? await outbound.close(.normalClosure, reason: nil)
                                // Normally the reader sees the server's close first and cancels this sleep.
                                try? await Task.sleep(for: closeGrace)
                                return
                            }
                        }
                    }
                    group.addTask {
                        await read(inbound, logger: logger, inbox: inbox, hello: hello)
                    }
                    await group.next()
                    group.cancelAll()
                }
            }
            hello.yield(.failed(reason: "the server closed the connection"))
        } catch {
            hello.yield(.failed(reason: "\(error)"))
        }
    }

    /// Reads until the connection ends; the first decoded message must be `welcome`.
    private static func read(_ inbound: WebSocketInboundStream, logger: Logger,
                             inbox: AsyncStream<ServerMessage>.Continuation,
                             hello: AsyncStream<Hello>.Continuation) async {
        var welcomed = false
        do {
            for try await frame in inbound.messages(maxSize: maxMessageBytes) {
                guard case .text(let text) = frame else {
                    logger.warning("ignoring a binary message from the signaling server")
                    continue
                }
                let message: ServerMessage
                switch decode(text) {
                case .success(let decoded):
                    message = decoded
                case .failure(let error):
                    logger.warning("ignoring an unreadable signaling message",
                                   metadata: ["error": "\(error.details)", "text": "\(text.prefix(200))"])
                    continue
                }
                if welcomed {
                    inbox.yield(message)
                } else if case .welcome(let peerId) = message {
                    welcomed = true
                    hello.yield(.welcome(peerId: peerId))
                } else {
                    hello.yield(.unexpected)
                    return
                }
            }
        } catch {
            logger.debug("signaling read ended", metadata: ["error": "\(error)"])
        }
    }

    private static func decode(_ text: String) -> Result<ServerMessage, SignalingDecodeError> {
        do throws(SignalingDecodeError) {
            return .success(try SignalingCodec.decodeServer(text))
        } catch {
            return .failure(error)
        }
    }
}
