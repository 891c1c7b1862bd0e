import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle

/// Where and how the signaling server listens.
public struct SignalingServerConfiguration: Sendable {
    public var host: String
    /// 0 picks any free port; read the bound one from `SignalingServer.port`.
    public var port: Int
    /// The HTTP path that upgrades to WebSocket (GStreamer's clients use `/`).
    public var path: String
    public var limits: HubLimits
    public var access: AccessPolicy
    /// Serve `wss://` with this certificate and key; nil: plain `ws://`.
    public var tls: SignalingServerTLS?
    /// Serve the browser console (`ConsoleFiles`) to plain HTTP GETs on the same port.
    public var serveConsole: Bool
    /// Web pages that may open a WebSocket here besides the server's own (`OriginPolicy`).
    public var origins: OriginPolicy = .sameOriginOnly
    /// Most connections open at once (HTTP and WebSocket); beyond it new ones wait in the
    /// kernel's backlog until one closes. Strangers holding connections cannot take the
    /// process's file descriptors (a publisher that embeds the server runs out of them for
    /// its media first) or its threads.
    public var maxConnections = 256
    /// A keep-alive HTTP connection that sends nothing for this long after a request is
    /// closed. Hummingbird 2 arms this only once a first request head has been read: a
    /// socket that never sends one is held until its client goes (docs/SECURITY.md). A
    /// WebSocket's own idleness is the hub's matter.
    public var httpIdleTimeout: Duration = .seconds(10)
    /// Largest request head (request line and header lines); a longer one is answered 431
    /// and its connection closed (`FrontDoorHandler`).
    public var maxHeaderBytes = 16 * 1024
    /// Per-address connections, the request-head deadline and the per-address request rate.
    public var frontDoor = FrontDoorLimits()

    public init(host: String = "127.0.0.1", port: Int = 8443, path: String = "/",
                limits: HubLimits = .init(), access: AccessPolicy = .open, tls: SignalingServerTLS? = nil,
                serveConsole: Bool = true) {
        self.host = host
        self.port = port
        self.path = path
        self.limits = limits
        self.access = access
        self.tls = tls
        self.serveConsole = serveConsole
    }

    /// Largest message the hub may be asked to read; bigger limits are refused at start.
    public static let maxMessageBytesCeiling = 16 << 20

    /// Largest WebSocket message (and frame) the transport reads before closing the
    /// connection with 1009: twice the hub's limit (at least 4 KiB more), so the hub can
    /// answer `tooLarge` itself for anything in between.
    var transportMaxBytes: Int { limits.maxMessageBytes + max(limits.maxMessageBytes, 4096) }

    func validate() throws(SignalingServerError) {
        guard !host.isEmpty else { throw .invalidConfiguration("the host is empty") }
        guard (0...65535).contains(port) else { throw .invalidConfiguration("port \(port) is not in 0...65535") }
        guard path.hasPrefix("/") else { throw .invalidConfiguration("path \"\(path)\" does not start with /") }
        guard (1...Self.maxMessageBytesCeiling).contains(limits.maxMessageBytes) else {
            throw .invalidConfiguration("max message bytes \(limits.maxMessageBytes) is not in 1...\(Self.maxMessageBytesCeiling)")
        }
        guard limits.maxPeersPerRoom >= 1 else { throw .invalidConfiguration("max peers per room must be at least 1") }
        guard limits.maxSessionsPerProducer >= 1 else {
            throw .invalidConfiguration("max sessions per producer must be at least 1")
        }
        guard limits.messagesPerSecond.isFinite, limits.messagesPerSecond > 0 else {
            throw .invalidConfiguration("messages per second must be a positive number, got \(limits.messagesPerSecond)")
        }
        guard limits.messageBurst >= 1 else { throw .invalidConfiguration("message burst must be at least 1") }
        guard (0...max(0, limits.maxPeersPerRoom - 2)).contains(limits.reservedExpertPlaces) else {
            throw .invalidConfiguration("reserved expert places must be in 0...\(max(0, limits.maxPeersPerRoom - 2))"
                                        + " (one place is the publisher's, one at least open to anyone), got \(limits.reservedExpertPlaces)")
        }
        guard (0..<limits.maxSessionsPerProducer).contains(limits.reservedExpertSessions) else {
            throw .invalidConfiguration("reserved expert sessions must be in 0..<\(limits.maxSessionsPerProducer), got \(limits.reservedExpertSessions)")
        }
        guard limits.maxSessionsPerConsumer >= 1 else { throw .invalidConfiguration("max sessions per consumer must be at least 1") }
        guard limits.listenerTimeout.isFinite, limits.listenerTimeout > 0 else {
            throw .invalidConfiguration("the listener timeout must be a positive number of seconds, got \(limits.listenerTimeout)")
        }
        guard maxConnections >= 1 else { throw .invalidConfiguration("max connections must be at least 1, got \(maxConnections)") }
        guard httpIdleTimeout > .zero else { throw .invalidConfiguration("the HTTP idle timeout must be positive") }
        guard (1024...(1 << 20)).contains(maxHeaderBytes) else {
            throw .invalidConfiguration("max header bytes must be in 1024...\(1 << 20), got \(maxHeaderBytes)")
        }
        guard limits.undeclaredTimeout.isFinite, limits.undeclaredTimeout > 0 else {
            throw .invalidConfiguration("the undeclared timeout must be a positive number of seconds, got \(limits.undeclaredTimeout)")
        }
        try frontDoor.validate()
    }
}

public enum SignalingServerError: Error, CustomStringConvertible, Sendable {
    case invalidConfiguration(String)
    /// Binding or starting failed (port in use, unknown host …).
    case startFailed(address: String, reason: String)

    public var description: String {
        switch self {
        case .invalidConfiguration(let reason): "invalid signaling server configuration: \(reason)"
        case let .startFailed(address, reason): "signaling server could not listen on \(address): \(reason)"
        }
    }
}

/// The WebSocket signaling server: Hummingbird plumbing around one `SignalingHub`.
///
/// Each connection gets a peer id from the hub; its text messages go to the hub in order
/// and every resulting delivery is queued on the addressed connection's outgoing stream,
/// which that connection's writer drains to the socket. Binary messages are refused with
/// `malformed`. A message larger than `limits.maxMessageBytes` is answered `tooLarge` by
/// the hub, up to twice that size; beyond it the transport closes the connection (1009).
/// A connection whose outgoing queue overflows (a peer that stopped reading) is closed.
public final class SignalingServer: Sendable {
    /// The bound port (the real one when the configuration asked for 0).
    public let port: Int
    /// `ws://HOST:PORT/PATH`, what clients connect to.
    public let url: String

    private let registry: ConnectionRegistry
    private let frontDoor: FrontDoorLedger
    private let serviceGroup: ServiceGroup
    /// Runs `serviceGroup` (the HTTP/WebSocket application and the idle sweep) until `stop`.
    private let runTask: Task<Void, Never>

    private init(port: Int, url: String, registry: ConnectionRegistry, frontDoor: FrontDoorLedger,
                 serviceGroup: ServiceGroup, runTask: Task<Void, Never>) {
        self.port = port
        self.url = url
        self.registry = registry
        self.frontDoor = frontDoor
        self.serviceGroup = serviceGroup
        self.runTask = runTask
    }

    /// Refused messages so far, by reason (what the log lines summarise).
    public func refusalCounts() async -> [SignalingErrorCode: Int] {
        await registry.refusalCounts
    }

    /// WebSocket upgrades refused so far for their `Origin` (answered 403 at the front door).
    public func refusedOrigins() -> Int {
        frontDoor.refusalCounts[403] ?? 0
    }

    /// Connections and requests refused so far at the front door, by the HTTP status they
    /// were answered with (400, 403, 405, 408, 429, 431, 503, 505).
    public func frontDoorRefusals() -> [Int: Int] {
        frontDoor.refusalCounts
    }

    /// Connections open now from `address` (as the front door counts them).
    public func connections(from address: String) -> Int {
        frontDoor.connections(from: address)
    }

    /// Starts listening; returns once the socket is bound.
    public static func start(_ configuration: SignalingServerConfiguration, logger: Logger) async throws -> SignalingServer {
        try configuration.validate()
        let registry = ConnectionRegistry(hub: SignalingHub(limits: configuration.limits, access: configuration.access),
                                          logger: logger)
        let transportMax = configuration.transportMaxBytes

        let webSocketRouter = Router(context: BasicWebSocketRequestContext.self)
        // The Origin is checked by the front door (`FrontDoorHandler`) before the upgrade.
        webSocketRouter.ws(RouterPath(configuration.path)) { inbound, outbound, context in
            await ServerConnection.run(inbound: inbound, outbound: outbound, registry: registry,
                                       maxMessageBytes: transportMax, logger: context.logger)
        }

        let idleNanos = RetryBackoff.nanos(configuration.httpIdleTimeout)
        // The front door refuses heads over maxHeaderBytes before the decoder sees them;
        // the decoder's own limits stay above it as a second line.
        let http1 = HTTP1Channel.Configuration(
            idleTimeout: .nanoseconds(Int64(idleNanos)),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: 2 * configuration.maxHeaderBytes,
                                            maxHeaderListSize: 2 * configuration.maxHeaderBytes, maxHeaderFieldCount: 200))
        let upgradeConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: http1, ws: .init(maxFrameSize: transportMax))
        let webSocketResponder = webSocketRouter.buildResponder()
        let frontDoor = FrontDoorLedger(limits: configuration.frontDoor, logger: logger)
        let maxHeaderBytes = configuration.maxHeaderBytes
        var server = HTTPServerBuilder { responder in
            FrontDoorChannel(
                base: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder,
                                                   configuration: upgradeConfiguration),
                ledger: frontDoor, origins: configuration.origins, maxHeaderBytes: maxHeaderBytes)
        }
        if let tls = configuration.tls {
            let tlsConfiguration = try tls.configuration()
            do { server = try .tls(server, tlsConfiguration: tlsConfiguration) } catch {
                throw SignalingServerError.invalidConfiguration("TLS: \(error)")
            }
        }
        let (startup, startupContinuation) = AsyncStream.makeStream(of: Startup.self)
        // GETs that do not ask for a WebSocket upgrade: the console's files, read from the
        // package's resources (a missing folder is a start-up error, not a silent 404).
        let router = Router()
        if configuration.serveConsole {
            router.add(middleware: FileMiddleware(try ConsoleFiles.directory(), searchForIndexHtml: true, logger: logger))
        }
        let app = Application(
            router: router,
            server: server,
            // A deep backlog: connections beyond maxConnections wait there instead of being
            // dropped half-open by the kernel (a client would think them connected).
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), backlog: 1024,
                                 availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections,
                                                                                          logger: logger)),
            onServerRunning: { channel in
                startupContinuation.yield(.listening(port: channel.localAddress?.port ?? configuration.port))
            },
            logger: logger)
        // The sweep after the application: a graceful shutdown ends it first.
        let sweep = IdleSweep(registry: registry,
                              interval: .seconds(min(1, max(0.05, min(configuration.limits.listenerTimeout,
                                                                     configuration.limits.undeclaredTimeout) / 4))))
        var groupConfiguration = ServiceGroupConfiguration(services: [app, sweep], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(5)
        let serviceGroup = ServiceGroup(configuration: groupConfiguration)
        let runTask = Task {
            do {
                try await serviceGroup.run()
            } catch {
                startupContinuation.yield(.failed(reason: "\(error)"))
            }
            startupContinuation.finish()
        }

        var outcome: Startup?
        for await event in startup {
            outcome = event
            break
        }
        let address = "\(configuration.host):\(configuration.port)"
        switch outcome {
        case .listening(let port):
            let scheme = configuration.tls == nil ? "ws" : "wss"
            let url = "\(scheme)://\(urlHost(configuration.host)):\(port)\(configuration.path)"
            logger.info("signaling server listening", metadata: ["url": "\(url)"])
            if configuration.serveConsole {
                logger.info("console served", metadata: ["url": "\(configuration.tls == nil ? "http" : "https")://\(urlHost(configuration.host)):\(port)/"])
            }
            return SignalingServer(port: port, url: url, registry: registry, frontDoor: frontDoor,
                                   serviceGroup: serviceGroup, runTask: runTask)
        case .failed(let reason):
            await runTask.value
            throw SignalingServerError.startFailed(address: address, reason: reason)
        case nil:
            // The caller was cancelled before the server came up.
            await serviceGroup.triggerGracefulShutdown()
            await runTask.value
            throw CancellationError()
        }
    }

    /// Closes every connection (close code 1001), stops listening and waits until the
    /// server has shut down. Calling it again does nothing more.
    public func stop() async {
        await registry.closeAll()
        await serviceGroup.triggerGracefulShutdown()
        await runTask.value
    }

    private enum Startup: Sendable {
        case listening(port: Int)
        case failed(reason: String)
    }

    private static func urlHost(_ host: String) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    }
}

/// Drops idle peers (`SignalingHub.expireIdle(at:)`) every `interval`, as one of the
/// server's services: it starts with the server's ServiceGroup and ends with its
/// graceful shutdown.
struct IdleSweep: Service {
    let registry: ConnectionRegistry
    let interval: Duration

    func run() async {
        await cancelWhenGracefulShutdown { [registry, interval] in
            while (try? await Task.sleep(for: interval)) != nil { await registry.expireIdle() }
        }
    }
}

/// One WebSocket connection: a reader feeding the registry and a writer draining the
/// connection's outgoing stream; when either ends, the other is stopped and the peer leaves.
enum ServerConnection {
    /// How long the writer waits, after starting a close handshake, for the reader to see it finish.
    static let closeGrace: Duration = .seconds(5)

    static func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter,
                    registry: ConnectionRegistry, maxMessageBytes: Int, logger: Logger) async {
        let (outgoing, outlet) = AsyncStream.makeStream(
            of: ServerMessage.self, bufferingPolicy: .bufferingOldest(ConnectionRegistry.outletCapacity))
        guard let peer = await registry.connect(outlet) else { return }
        var logger = logger
        logger[metadataKey: "peer"] = "\(peer)"
        logger.debug("peer connected")

        await withTaskGroup(of: Void.self) { group in
            group.addTask { [logger] in
                do {
                    for try await message in inbound.messages(maxSize: maxMessageBytes) {
                        switch message {
                        case .text(let text):
                            await registry.receive(text, from: peer)
                        case .binary:
                            await registry.refuse(peer, code: .malformed, details: "expected a text frame, got a binary one")
                        }
                    }
                } catch {
                    logger.debug("reading stopped", metadata: ["error": "\(error)"])
                }
            }
            group.addTask { [logger] in
                for await message in outgoing {
                    do {
                        try await outbound.write(.text(SignalingCodec.encode(message)))
                    } catch {
                        logger.debug("writing stopped", metadata: ["error": "\(error)"])
                        break
                    }
                }
                // The queue ended: the server is stopping or the peer fell too far behind.
                // (After a normal close this is a no-op and the sleep ends at once, cancelled.)
                try? await outbound.close(.goingAway, reason: nil)
                try? await Task.sleep(for: closeGrace)
            }
            await group.next()
            group.cancelAll()
        }
        await registry.disconnect(peer)
        logger.debug("peer disconnected")
    }
}
