/// The candidate pair a connected peer sends its media over, from webrtcbin's stats: the
/// kind of each end (`host`, `srflx`, `prflx`, `relay`) and its address. A relay-only
/// policy is proven by a route whose local end is `relay`.
public struct ICERoute: Sendable, Hashable, CustomStringConvertible {
    public struct End: Sendable, Hashable {
        public var kind: String
        public var address: String
        public var port: Int
        public var transport: String
    }
    public var local: End
    public var remote: End

    public var description: String {
        "\(local.kind) \(local.address):\(local.port) ↔ \(remote.kind) \(remote.address):\(remote.port) (\(local.transport))"
    }

    /// The selected pair of the first transport that names one; nil while ICE has not
    /// chosen (the candidate stats appear a moment after the connection does).
    ///
    /// webrtcbin 1.22 files the pair's local candidate under the id
    /// `ice-candidate-local_…` but gives it `type: remote-candidate` (and the reverse), so
    /// the ends are found by the pair's ids, never by `type`.
    public init?(_ stats: RTCStats) {
        for transport in stats.entries(ofType: "transport") {
            guard let pairId = transport["selected-candidate-pair-id"]?.string, let pair = stats.entries[pairId],
                  let localId = pair["local-candidate-id"]?.string, let remoteId = pair["remote-candidate-id"]?.string,
                  let local = Self.end(stats.entries[localId]), let remote = Self.end(stats.entries[remoteId]) else { continue }
            self.local = local
            self.remote = remote
            return
        }
        return nil
    }

    private static func end(_ fields: [String: RTCStats.Value]?) -> End? {
        guard let fields, let kind = fields["candidate-type"]?.string else { return nil }
        return End(kind: kind, address: fields["address"]?.string ?? "?", port: Int(fields["port"]?.number ?? 0),
                   transport: fields["protocol"]?.string ?? "udp")
    }
}

extension WebRTCPeer {
    /// The route media takes, once ICE has chosen one: asks for stats up to `attempts`
    /// times, `interval` apart. Nil when none came (the peer closed, no ICE stats, or the
    /// calling task was cancelled).
    public func selectedRoute(attempts: Int = 20, interval: Duration = .milliseconds(250)) async -> ICERoute? {
        for attempt in 0..<attempts {
            if attempt > 0, (try? await Task.sleep(for: interval)) == nil { return nil }
            guard let stats = try? await stats() else { return nil }
            if let route = ICERoute(stats) { return route }
        }
        return nil
    }
}
