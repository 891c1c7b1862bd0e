import ArgumentParser
import Signaling

/// The front-door limits of the embedded HTTP/WebSocket server, as options, shared by
/// `posecast-signaling` and `posecast-publisher` (which embeds the same server). The
/// defaults are `SignalingServerConfiguration`'s and `FrontDoorLimits`'; docs/SECURITY.md
/// has the table.
public struct ServerLimitOptions: ParsableArguments {
    @Option(help: "Most connections open at once; more wait in the kernel's backlog until one closes.")
    public var maxConnections = SignalingServerConfiguration().maxConnections
    @Option(help: "Most connections one client address may hold at once; more are answered 503 and closed.")
    public var maxConnectionsPerAddress = FrontDoorLimits().maxConnectionsPerAddress
    @Option(help: "Seconds a request head (request line and headers) may take to arrive, from the connection's start or its first byte; later: 408 and closed (idle and slowloris connections end so).")
    public var headerTimeout = Double(FrontDoorLimits().headerTimeout.components.seconds)
    @Option(help: "Largest request head in bytes; larger: 431 and closed.")
    public var maxHeaderBytes = SignalingServerConfiguration().maxHeaderBytes
    @Option(help: "Sustained HTTP requests (files, WebSocket upgrades) per second one client address may make, after a burst of 100; more: 429 and closed.")
    public var requestsPerSecond = FrontDoorLimits().requestsPerSecond

    public init() {}

    public func validate() throws {
        guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1, got \(maxConnections)") }
        guard maxConnectionsPerAddress >= 1 else {
            throw ValidationError("--max-connections-per-address must be at least 1, got \(maxConnectionsPerAddress)")
        }
        guard headerTimeout.isFinite, headerTimeout > 0, headerTimeout <= 3600 else {
            throw ValidationError("--header-timeout must be a number of seconds in (0, 3600], got \(headerTimeout)")
        }
        guard (1024...(1 << 20)).contains(maxHeaderBytes) else {
            throw ValidationError("--max-header-bytes must be in 1024...\(1 << 20), got \(maxHeaderBytes)")
        }
        guard requestsPerSecond.isFinite, requestsPerSecond > 0 else {
            throw ValidationError("--requests-per-second must be a positive number, got \(requestsPerSecond)")
        }
    }

    public func apply(to configuration: inout SignalingServerConfiguration) {
        configuration.maxConnections = maxConnections
        configuration.maxHeaderBytes = maxHeaderBytes
        configuration.frontDoor.maxConnectionsPerAddress = maxConnectionsPerAddress
        configuration.frontDoor.headerTimeout = .milliseconds(Int64((headerTimeout * 1000).rounded()))
        configuration.frontDoor.requestsPerSecond = requestsPerSecond
    }
}
