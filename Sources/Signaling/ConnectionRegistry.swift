import Logging

/// The connection registry: the hub and every connection's outgoing queue, behind one actor.
///
/// Every refusal the hub (or the transport) answers is counted and logged at `info` with
/// its reason, rate-limited per reason by `RefusalLog`; the hub itself logs nothing.
actor ConnectionRegistry {
    typealias Outlet = AsyncStream<ServerMessage>.Continuation
    /// Messages queued for one connection before it counts as stuck and is closed.
    static let outletCapacity = 1024

    private var hub: SignalingHub
    private var outlets: [String: Outlet] = [:]
    private var isClosed = false
    private let logger: Logger
    private var refusals = RefusalLog<SignalingErrorCode>()
    /// Zero of the time given to the hub (rate limits, idle peers) and to the refusal log.
    private let origin = ContinuousClock.now

    init(hub: SignalingHub, logger: Logger) {
        self.hub = hub
        self.logger = logger
    }

    /// Refused messages so far, by reason.
    var refusalCounts: [SignalingErrorCode: Int] { refusals.totals }

    /// Registers a connection; `nil` (and the outlet finished) once the server is stopping.
    func connect(_ outlet: Outlet) -> String? {
        guard !isClosed else {
            outlet.finish()
            return nil
        }
        let (peer, deliveries) = hub.connect(at: now())
        outlets[peer] = outlet
        deliver(deliveries)
        return peer
    }

    func receive(_ text: String, from peer: String) {
        deliver(hub.receive(text, from: peer, at: now()))
    }

    /// An error the transport detects itself (a binary frame).
    func refuse(_ peer: String, code: SignalingErrorCode, details: String) {
        deliver([Delivery(to: peer, message: .error(details: details, code: code))])
    }

    func disconnect(_ peer: String) {
        guard let outlet = outlets.removeValue(forKey: peer) else { return }
        outlet.finish()
        deliver(hub.disconnect(peer))
    }

    /// Drops the peers the hub finds idle: their `idleTimeout` error is queued, then their
    /// queue ends, so their writer sends it and closes the connection.
    func expireIdle() {
        let (deliveries, closed) = hub.expireIdle(at: now())
        deliver(deliveries)
        for peer in closed {
            outlets.removeValue(forKey: peer)?.finish()
        }
    }

    /// Ends every connection's queue (their writers then close them) and refuses new ones.
    func closeAll() {
        isClosed = true
        for outlet in outlets.values { outlet.finish() }
    }

    private func now() -> Double {
        (ContinuousClock.now - origin) / .seconds(1)
    }

    private func deliver(_ deliveries: [Delivery]) {
        var stuck: [String] = []
        for delivery in deliveries {
            if case let .error(details, code?, _) = delivery.message {
                log(refusal: code, of: delivery.to, details: details)
            }
            guard let outlet = outlets[delivery.to] else { continue }
            if case .dropped = outlet.yield(delivery.message) {
                stuck.append(delivery.to)
            }
        }
        for peer in stuck {
            logger.warning("closing a peer that stopped reading", metadata: ["peer": "\(peer)"])
            disconnect(peer)
        }
    }

    private func log(refusal code: SignalingErrorCode, of peer: String, details: String) {
        guard let line = refusals.record(code, peer: peer, details: details, at: now()) else { return }
        var metadata: Logger.Metadata = ["peer": "\(line.peer)", "code": "\(line.code.rawValue)",
                                         "details": "\(line.details)", "total": "\(line.total)"]
        if line.unlogged > 0 { metadata["unlogged"] = "\(line.unlogged)" }
        logger.info("refused a signaling message", metadata: metadata)
    }
}
