import Logging
import Synchronization

/// What the front door knows across connections: how many each client address holds, its
/// request budget (a token bucket), and the refusals so far. Shared by every connection's
/// `FrontDoorHandler` on every event loop, so its state is one `Mutex`; nothing in it
/// blocks or calls out while holding the lock, and log lines are written after.
final class FrontDoorLedger: Sendable {
    private struct Client {
        var connections = 0
        var tokens: Double
        var refilledAt: ContinuousClock.Instant
    }

    private struct State {
        var clients: [String: Client] = [:]
        var refusals = RefusalLog<Int>(interval: 5)
    }

    let limits: FrontDoorLimits
    private let logger: Logger
    private let state = Mutex(State())
    /// Above this many remembered addresses, those with no connection and a full budget
    /// are forgotten (they would start afresh anyway).
    private let pruneAbove = 4096

    init(limits: FrontDoorLimits, logger: Logger) {
        self.limits = limits
        self.logger = logger
    }

    /// Counts a new connection from `address`; false when the address already holds its
    /// share (the connection is then refused and must not be `release`d).
    func admit(_ address: String) -> Bool {
        let now = ContinuousClock.now
        return state.withLock { state in
            if state.clients.count > pruneAbove { prune(&state, now: now) }
            var client = state.clients[address] ?? Client(tokens: limits.requestBurst, refilledAt: now)
            guard client.connections < limits.maxConnectionsPerAddress else { return false }
            client.connections += 1
            state.clients[address] = client
            return true
        }
    }

    /// A connection `admit` counted has closed.
    func release(_ address: String) {
        state.withLock { state in
            guard var client = state.clients[address] else { return }
            client.connections = max(0, client.connections - 1)
            state.clients[address] = client
        }
    }

    /// Takes one request from `address`'s budget; false when it is spent.
    func takeRequest(_ address: String) -> Bool {
        let now = ContinuousClock.now
        return state.withLock { state in
            var client = state.clients[address] ?? Client(tokens: limits.requestBurst, refilledAt: now)
            refill(&client, now: now)
            defer { state.clients[address] = client }
            guard client.tokens >= 1 else { return false }
            client.tokens -= 1
            return true
        }
    }

    /// Connections open now from `address` (for tests and status).
    func connections(from address: String) -> Int {
        state.withLock { $0.clients[address]?.connections ?? 0 }
    }

    /// Refusals so far by HTTP status.
    var refusalCounts: [Int: Int] { state.withLock { $0.refusals.totals } }

    /// Counts a refusal and logs it, at most one line per status every 5 s (with how many
    /// were not logged), so a flood makes a few lines.
    func record(_ refusal: FrontDoorRefusal, address: String) {
        let line = state.withLock { state in
            state.refusals.record(refusal.status, peer: address, details: refusal.explanation, at: Self.monotonicSeconds())
        }
        guard let line else { return }
        var metadata: Logger.Metadata = ["status": "\(line.code)", "client": "\(line.peer)", "total": "\(line.total)"]
        if line.unlogged > 0 { metadata["unlogged"] = "\(line.unlogged)" }
        let message: Logger.Message = "refused at the front door: \(line.details)"
        // A foreign page reaching for the camera is worth a warning; the rest is noise of the internet.
        if refusal.status == 403 { logger.warning(message, metadata: metadata) } else { logger.notice(message, metadata: metadata) }
    }

    private func refill(_ client: inout Client, now: ContinuousClock.Instant) {
        let seconds = client.refilledAt.duration(to: now) / .seconds(1)
        client.tokens = min(limits.requestBurst, client.tokens + seconds * limits.requestsPerSecond)
        client.refilledAt = now
    }

    private func prune(_ state: inout State, now: ContinuousClock.Instant) {
        for (address, var client) in state.clients where client.connections == 0 {
            refill(&client, now: now)
            if client.tokens >= limits.requestBurst { state.clients[address] = nil }
        }
    }

    private static let origin = ContinuousClock.now
    private static func monotonicSeconds() -> Double { origin.duration(to: .now) / .seconds(1) }
}
