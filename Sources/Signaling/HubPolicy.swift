// What the hub allows: size and count limits, and which token opens which room.
// Both are plain values handed to `SignalingHub.init`; neither touches I/O.

/// Size and count limits the hub enforces.
public struct HubLimits: Sendable, Hashable {
    /// Largest message text, in UTF-8 bytes, the hub reads; larger ones are refused with `tooLarge` unparsed.
    public var maxMessageBytes: Int
    /// Most peers that may have declared themselves (`setPeerStatus`) in one room.
    public var maxPeersPerRoom: Int
    /// Most sessions one producer may have open at once.
    public var maxSessionsPerProducer: Int

    /// Sustained messages per second one connection may send (a token bucket refilled at
    /// this rate); messages beyond it are refused with `rateLimited`, unread. Only applies
    /// when the transport passes the time (`SignalingHub.receive(_:from:at:)`).
    public var messagesPerSecond: Double
    /// How many messages a connection may send at once before the rate applies (room for
    /// an offer/answer and a burst of trickled ICE candidates for many sessions).
    public var messageBurst: Int

    /// Of `maxPeersPerRoom`, places only an authorised expert may take (role expert with
    /// the token the room requires for experts); one more is always kept for the
    /// publisher. Only in rooms whose experts need a token: elsewhere anyone can claim to
    /// be an expert, so a reservation would protect nothing.
    public var reservedExpertPlaces: Int
    /// Of `maxSessionsPerProducer`, sessions only an authorised expert may start (same rooms as above).
    public var reservedExpertSessions: Int
    /// Most sessions one consumer may have open at once (with any producers).
    public var maxSessionsPerConsumer: Int
    /// Seconds a declared peer other than the publisher may hold a place in a room that has
    /// a publisher without having a session; then it is refused `idleTimeout` and
    /// disconnected (`SignalingHub.expireIdle(at:)`). The clock starts when the peer
    /// declares, when its last session ends, or when the publisher arrives, whichever is latest.
    public var listenerTimeout: Double
    /// Seconds a connection may stay without declaring itself (`setPeerStatus`) and without
    /// a session (from its connection or the end of its last session); then it is refused
    /// `idleTimeout` and disconnected. A stranger's bare WebSocket holds nothing longer.
    public var undeclaredTimeout: Double

    public init(maxMessageBytes: Int = 64 * 1024, maxPeersPerRoom: Int = 16, maxSessionsPerProducer: Int = 16,
                messagesPerSecond: Double = 50, messageBurst: Int = 200,
                reservedExpertPlaces: Int = 4, reservedExpertSessions: Int = 4, maxSessionsPerConsumer: Int = 4,
                listenerTimeout: Double = 30, undeclaredTimeout: Double = 10) {
        self.maxMessageBytes = maxMessageBytes
        self.maxPeersPerRoom = maxPeersPerRoom
        self.maxSessionsPerProducer = maxSessionsPerProducer
        self.messagesPerSecond = messagesPerSecond
        self.messageBurst = messageBurst
        self.reservedExpertPlaces = reservedExpertPlaces
        self.reservedExpertSessions = reservedExpertSessions
        self.maxSessionsPerConsumer = maxSessionsPerConsumer
        self.listenerTimeout = listenerTimeout
        self.undeclaredTimeout = undeclaredTimeout
    }
}

/// Which token a peer must present to take a role in a room.
///
/// A token set for `(room, role)` is the only one accepted for that role; otherwise the
/// room's token is required; a room with neither is open, unless `requireTokens` is set,
/// in which case it is closed to everyone. `description` and `customMirror` never show
/// the tokens, so logging a policy leaks nothing.
public struct AccessPolicy: Sendable, Hashable {
    /// Refuse every room and role that has no token configured.
    public var requireTokens: Bool
    private var roomTokens: [String: String]
    private var roleTokens: [String: [RoomRole: String]]

    /// No tokens, nothing required.
    public static var open: AccessPolicy { AccessPolicy() }

    /// - Parameters:
    ///   - roomTokens: room name → token for every role in that room.
    ///   - roleTokens: room name → role → token, overriding the room's token for that role.
    public init(roomTokens: [String: String] = [:], roleTokens: [String: [RoomRole: String]] = [:],
                requireTokens: Bool = false) {
        self.roomTokens = roomTokens
        self.roleTokens = roleTokens
        self.requireTokens = requireTokens
    }

    /// Sets the token for `room`, or for `role` in `room` when a role is given.
    public mutating func setToken(_ token: String, room: String, role: RoomRole? = nil) {
        if let role {
            roleTokens[room, default: [:]][role] = token
        } else {
            roomTokens[room] = token
        }
    }

    /// Whether `role` in `room` needs a token (so a peer holding that role has shown one).
    public func requiresToken(room: String, role: RoomRole) -> Bool {
        roleTokens[room]?[role] ?? roomTokens[room] != nil
    }

    /// Why a peer may not take `role` in `room` with `token`, in words that never
    /// contain a token; `nil` when it may.
    public func refusal(room: String, role: RoomRole, token: String?) -> String? {
        guard let expected = roleTokens[room]?[role] ?? roomTokens[room] else {
            return requireTokens ? "room \"\(room)\" is not open to role \(role.rawValue)" : nil
        }
        guard let token else { return "room \"\(room)\" requires a token for role \(role.rawValue)" }
        return Self.constantTimeEqual(token, expected) ? nil : "wrong token for role \(role.rawValue) in room \"\(room)\""
    }

    /// Compares without returning early at the first differing byte.
    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(truncatingIfNeeded: x.count ^ y.count)
        for i in 0..<max(x.count, y.count) {
            difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return difference == 0 && x.count == y.count
    }
}

extension AccessPolicy: CustomStringConvertible, CustomReflectable {
    public var description: String {
        let rooms = Set(roomTokens.keys).union(roleTokens.keys).sorted()
        return "AccessPolicy(tokens for rooms: \(rooms), requireTokens: \(requireTokens))"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["description": description], displayStyle: .struct)
    }
}
