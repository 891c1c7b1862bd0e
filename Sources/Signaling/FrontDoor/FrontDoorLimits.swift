/// What the server's front door (`FrontDoorHandler`) allows a client before any HTTP
/// parsing, WebSocket upgrade or file serving sees its bytes. Each limit has an option on
/// both executables (docs/SECURITY.md has the table).
public struct FrontDoorLimits: Sendable, Equatable {
    /// Connections one client address may hold at once; more are answered 503 and closed.
    /// Loopback and a NAT put many people behind one address, so this is a share of
    /// `SignalingServerConfiguration.maxConnections`, not one per person.
    public var maxConnectionsPerAddress = 64
    /// A request head (request line and header lines) must be complete within this, counted
    /// from the connection's start or from the first byte of a later request; else 408 and
    /// the connection closed. This is what ends idle sockets and slowloris clients.
    public var headerTimeout: Duration = .seconds(10)
    /// Sustained requests per second one client address may make (files and upgrades);
    /// beyond the burst they are answered 429 and the connection closed.
    public var requestsPerSecond: Double = 20
    /// Requests one address may make at once before the rate applies (the console's page
    /// loads about ten files; a few reloads fit).
    public var requestBurst: Double = 100

    public init() {}

    func validate() throws(SignalingServerError) {
        guard maxConnectionsPerAddress >= 1 else {
            throw .invalidConfiguration("max connections per address must be at least 1, got \(maxConnectionsPerAddress)")
        }
        guard headerTimeout > .zero else { throw .invalidConfiguration("the header timeout must be positive") }
        guard requestsPerSecond.isFinite, requestsPerSecond > 0 else {
            throw .invalidConfiguration("requests per second must be a positive number, got \(requestsPerSecond)")
        }
        guard requestBurst.isFinite, requestBurst >= 1 else {
            throw .invalidConfiguration("the request burst must be at least 1, got \(requestBurst)")
        }
    }
}
