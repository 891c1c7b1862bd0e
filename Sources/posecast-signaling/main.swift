import ArgumentParser
import Dispatch
import Foundation
import Logging
import NodeOutput
import ServerOptions
import Signaling

/// The standalone signaling server. GStreamer's webrtcsink and webrtcsrc can use it too.
@main
struct SignalingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "posecast-signaling",
        abstract: "WebSocket signaling server for PoseCast publishers and subscribers (GStreamer webrtcsink protocol).",
        discussion: """
        Prints one line, `listening ws://HOST:PORT/` (wss:// with --tls-cert), on stdout once it accepts connections; logs go
        to stderr. Stops cleanly on SIGINT or SIGTERM.

        Tokens: --token lab=S lets every role into room "lab" with token S; --token lab/publisher=P
        makes P the only token for publishing there. Rooms without a token are open unless
        --require-tokens is given.
        """)

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0: any free port).") var port = 8443
    @Option(name: .customLong("token"), parsing: .singleValue,
            help: ArgumentHelp("A room's token: ROOM=SECRET, or ROOM/ROLE=SECRET for one role (publisher, expert, viewer). Repeatable.",
                               valueName: "ROOM[/ROLE]=SECRET"))
    var tokens: [String] = []
    @Flag(help: "Refuse rooms and roles that have no token.") var requireTokens = false
    @Option(help: "Most peers that may declare themselves in one room.") var maxPeersPerRoom = HubLimits().maxPeersPerRoom
    @Option(help: "Most sessions one publisher may have at once.") var maxSessionsPerProducer = HubLimits().maxSessionsPerProducer
    @Option(help: "Of --max-peers-per-room, places kept for experts with a token (rooms whose experts need one).")
    var reservedExpertPlaces = HubLimits().reservedExpertPlaces
    @Option(help: "Of --max-sessions-per-producer, sessions kept for experts with a token (rooms whose experts need one).")
    var reservedExpertSessions = HubLimits().reservedExpertSessions
    @Option(help: "Most sessions one subscriber may have at once.") var maxSessionsPerConsumer = HubLimits().maxSessionsPerConsumer
    @Option(help: "Seconds a peer may stay in a room with a publisher without a session before it is disconnected.")
    var listenerTimeout = HubLimits().listenerTimeout
    @Option(help: "Largest message accepted, in bytes.") var maxMessageBytes = HubLimits().maxMessageBytes
    @Option(help: "Seconds a connection may stay without declaring itself (setPeerStatus) and without a session before it is disconnected.")
    var undeclaredTimeout = HubLimits().undeclaredTimeout
    @OptionGroup(title: "Front door (docs/SECURITY.md)") var serverLimits: ServerLimitOptions
    @Option(help: "Sustained messages per second one connection may send (more are refused with rateLimited).")
    var messagesPerSecond = HubLimits().messagesPerSecond
    @Option(help: "Messages one connection may send at once before the rate applies.") var messageBurst = HubLimits().messageBurst
    @Option(name: .customLong("allow-origin"), parsing: .singleValue,
            help: ArgumentHelp("A web origin whose pages may open a WebSocket here (scheme://host[:port]; null: pages opened from files; *: any page). By default only the server's own pages and clients that are no browsers. Repeatable.",
                               valueName: "ORIGIN"))
    var allowedOrigins: [String] = []
    @Option(help: "Serve wss:// with this PEM certificate (chain); needs --tls-key.") var tlsCert: String?
    @Option(help: "PEM private key of --tls-cert.") var tlsKey: String?
    @Option(help: "trace, debug, info, notice, warning, error or critical.") var logLevel = "info"

    mutating func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be in 0...65535, got \(port)") }
        guard maxPeersPerRoom >= 1 else { throw ValidationError("--max-peers-per-room must be at least 1") }
        guard maxSessionsPerProducer >= 1 else { throw ValidationError("--max-sessions-per-producer must be at least 1") }
        guard (0...max(0, maxPeersPerRoom - 2)).contains(reservedExpertPlaces) else {
            throw ValidationError("--reserved-expert-places must be in 0...\(max(0, maxPeersPerRoom - 2)) (--max-peers-per-room minus the publisher's place and one open place)")
        }
        guard (0..<maxSessionsPerProducer).contains(reservedExpertSessions) else {
            throw ValidationError("--reserved-expert-sessions must be in 0..<\(maxSessionsPerProducer) (below --max-sessions-per-producer)")
        }
        guard maxSessionsPerConsumer >= 1 else { throw ValidationError("--max-sessions-per-consumer must be at least 1") }
        guard undeclaredTimeout.isFinite, undeclaredTimeout > 0 else {
            throw ValidationError("--undeclared-timeout must be a positive number of seconds, got \(undeclaredTimeout)")
        }
        guard listenerTimeout.isFinite, listenerTimeout > 0 else {
            throw ValidationError("--listener-timeout must be a positive number of seconds, got \(listenerTimeout)")
        }
        let ceiling = SignalingServerConfiguration.maxMessageBytesCeiling
        guard (1024...ceiling).contains(maxMessageBytes) else {
            throw ValidationError("--max-message-bytes must be in 1024...\(ceiling), got \(maxMessageBytes)")
        }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard messagesPerSecond.isFinite, messagesPerSecond > 0 else {
            throw ValidationError("--messages-per-second must be a positive number, got \(messagesPerSecond)")
        }
        guard messageBurst >= 1 else { throw ValidationError("--message-burst must be at least 1, got \(messageBurst)") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        for path in [tlsCert, tlsKey].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: path) {
            throw ValidationError("cannot read \(path)")
        }
        _ = try accessPolicy()
        do { _ = try OriginPolicy(allowing: allowedOrigins) } catch { throw ValidationError("--allow-origin: \(error)") }
    }

    func run() async throws {
        StandardErrorLogging.bootstrap(level: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "posecast.signaling")
        var configuration = SignalingServerConfiguration(
            host: host, port: port,
            limits: HubLimits(maxMessageBytes: maxMessageBytes, maxPeersPerRoom: maxPeersPerRoom,
                              maxSessionsPerProducer: maxSessionsPerProducer,
                              messagesPerSecond: messagesPerSecond, messageBurst: messageBurst,
                              reservedExpertPlaces: reservedExpertPlaces, reservedExpertSessions: reservedExpertSessions,
                              maxSessionsPerConsumer: maxSessionsPerConsumer, listenerTimeout: listenerTimeout,
                              undeclaredTimeout: undeclaredTimeout),
            access: try accessPolicy(),
            tls: tlsCert.map { SignalingServerTLS(certificateChainPath: $0, privateKeyPath: tlsKey ?? "") })
        configuration.origins = try OriginPolicy(allowing: allowedOrigins)
        serverLimits.apply(to: &configuration)
        let files = ProcessSupport.raiseOpenFileLimit()

        let stopSignals = StopSignals()
        guard let server = await Self.start(configuration, logger: logger) else { throw ExitCode(2) }
        logger.info("access", metadata: ["policy": "\(configuration.access)", "origins": "\(configuration.origins)",
                                         "maxConnections": "\(configuration.maxConnections)",
                                         "perAddress": "\(configuration.frontDoor.maxConnectionsPerAddress)", "openFiles": "\(files)"])
        FileHandle.standardOutput.write(Data("listening \(server.url)\n".utf8))

        let signal = await stopSignals.next()
        logger.info("stopping", metadata: ["signal": "\(signal)"])
        await server.stop()
        logger.info("stopped")
    }

    /// The server, or `nil` after saying on stderr why it could not start.
    private static func start(_ configuration: SignalingServerConfiguration, logger: Logger) async -> SignalingServer? {
        do {
            return try await SignalingServer.start(configuration, logger: logger)
        } catch {
            FileHandle.standardError.write(Data("posecast-signaling: error: \(error)\n".utf8))
            return nil
        }
    }

    /// The `--token` options as a policy; errors never repeat the secret.
    private func accessPolicy() throws -> AccessPolicy {
        var policy = AccessPolicy(requireTokens: requireTokens)
        var seen: Set<String> = []
        for spec in tokens {
            guard let equals = spec.firstIndex(of: "=") else {
                throw ValidationError("--token expects ROOM=SECRET or ROOM/ROLE=SECRET")
            }
            let target = String(spec[..<equals])
            let secret = String(spec[spec.index(after: equals)...])
            var room = target
            var role: RoomRole?
            if let slash = target.lastIndex(of: "/") {
                let name = String(target[target.index(after: slash)...])
                guard let parsed = RoomRole(rawValue: name) else {
                    throw ValidationError("--token \(target)=…: unknown role \"\(name)\" (publisher, expert or viewer)")
                }
                room = String(target[..<slash])
                role = parsed
            }
            guard !room.isEmpty else { throw ValidationError("--token \(target)=…: the room name is empty") }
            guard !secret.isEmpty else { throw ValidationError("--token \(target)=…: the secret is empty") }
            guard seen.insert(target).inserted else { throw ValidationError("--token \(target) is given twice") }
            policy.setToken(secret, room: room, role: role)
        }
        return policy
    }
}

/// SIGINT and SIGTERM as an async wait (the default actions are turned off).
private struct StopSignals {
    private let stream: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]

    init() {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        self.sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }

    /// The first signal received.
    func next() async -> Int32 {
        for await number in stream { return number }
        return SIGTERM
    }
}
