import Foundation
import PoseCastKit

/// One message for one peer: what the hub asks its transport to send.
public struct Delivery: Sendable, Hashable {
    public var to: String
    public var message: ServerMessage
    public init(to: String, message: ServerMessage) { self.to = to; self.message = message }
}

/// The signaling server's logic as a pure state machine: `(peer, message) → [Delivery]`.
/// It owns no socket, no clock and no global state; the transport calls `connect`,
/// `receive` and `disconnect` in the order things happen and sends what they return.
///
/// Semantics (the protocol of GStreamer's webrtcsink signalling server, plus rooms):
///
/// - **connect** → `welcome{peerId}` to that peer. Until it sends `setPeerStatus` a peer
///   is *undeclared*: in room `default` with room role `viewer`, no GStreamer roles. It may
///   still `list` and `startSession` there when the access policy lets a viewer into
///   `default` without a token, so GStreamer's webrtcsrc, which never declares, works.
/// - **setPeerStatus** `{roles, meta, room?, role?, token?}`: room defaults to `default`
///   (an empty name is `malformed`); role defaults to `publisher` when `roles` contains
///   `producer`, else `viewer`. Checked in this order, each failure leaving the peer's
///   status unchanged: role publisher ⇔ roles contains producer, else `wrongRole`; the
///   token (see `AccessPolicy`), else `unauthorized`; a peer with open sessions may not
///   change room, room role or producing, else `wrongRole` (end the sessions first);
///   joining a room that already holds `maxPeersPerRoom` declared peers, or producing in
///   a room that already has a producer, is `roomFull`. No reply on success. A second
///   `setPeerStatus` replaces the first (meta updates are fine).
/// - **Listeners** (peers whose roles contain `listener`) follow the producers of their
///   own room and nothing else: when a peer starts producing in a room, or a producer
///   re-declares, they get `peerStatusChanged{peerId, roles, meta, room, role}`; when a
///   producer stops producing they get its new roles; when it leaves the room (moves or
///   disconnects) they get `peerStatusChanged{peerId, roles: [], room}`. A peer is never
///   told about itself.
/// - **list** → `list{producers: [{id, meta}]}`, the producers of the sender's room in the
///   order they declared.
/// - **startSession{peerId}**: the sender must not be a producer (`wrongRole`); `peerId`
///   must be a producer in the sender's room (`unknownPeer`, which also covers other
///   rooms); the producer must have fewer than `maxSessionsPerProducer` sessions
///   (`roomFull`). The producer then gets `startSession{peerId: consumer, sessionId,
///   role: consumer's room role, meta: consumer's meta}` and the consumer gets
///   `sessionStarted{peerId: producer, sessionId}`.
/// - **peer{sessionId, sdp|ice}** is forwarded unchanged to the other side of the
///   session; a sender that is not in that session gets `unknownSession`.
/// - **endSession{sessionId}**: both sides get `endSession{sessionId}`, the other side
///   first; a sender not in that session gets `unknownSession`.
/// - **disconnect**: every session of the peer ends and its other side gets `endSession`;
///   a producer's room listeners are told it left.
/// - **Rate**: with the time given (`receive(_:from:at:)`, as the server does), each
///   connection has a token bucket of `messageBurst` messages refilled at
///   `messagesPerSecond`; a message finding it empty is refused `rateLimited`, unread.
/// - **Bad input**: text over `maxMessageBytes` UTF-8 bytes → `tooLarge`, not parsed;
///   not JSON, not an object, wrong or missing fields, `sdp` and `ice` both or neither →
///   `malformed` naming the field; an unknown `type` → `unknownType`.
///
/// Every refusal is exactly one `error{details, code}` to the sender and nothing to anyone
/// else; the peer stays connected and usable. `details` never contains a token and quotes
/// client-supplied text only briefly. No input traps.
public struct SignalingHub: Sendable {
    public let limits: HubLimits
    public let access: AccessPolicy
    private let makeID: @Sendable () -> String

    private var peers: [String: Peer] = [:]
    private var sessions: [String: Session] = [:]
    /// Orders declarations (for `list`) and connections (for listener fan-out).
    private var clock = 0

    public static let defaultRoom = "default"

    /// - Parameter makeID: source of peer and session ids; inject a counter for
    ///   deterministic tests. A repeated id is made unique with a suffix.
    public init(limits: HubLimits = .init(), access: AccessPolicy = .open,
                makeID: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() }) {
        self.limits = limits
        self.access = access
        self.makeID = makeID
    }

    /// Connected peers, declared or not.
    public var peerCount: Int { peers.count }
    /// Open sessions.
    public var sessionCount: Int { sessions.count }

    public mutating func connect() -> (peer: String, deliveries: [Delivery]) {
        let id = uniqueID { peers[$0] != nil }
        peers[id] = Peer(connectedAt: tick())
        return (id, [Delivery(to: id, message: .welcome(peerId: id))])
    }

    /// Handles one text message from `peer` that arrived at `now` (seconds on any monotonic
    /// clock): as `receive(_:from:)`, after the peer's rate limit. A message beyond
    /// `limits.messageBurst` at once, or `limits.messagesPerSecond` sustained, is refused
    /// with `rateLimited` and not read; the peer stays connected.
    public mutating func receive(_ text: String, from peer: String, at now: Double) -> [Delivery] {
        guard peers[peer] != nil else { return [] }
        // The first message finds a full bucket.
        var bucket = peers[peer]!.bucket
            ?? TokenBucket(rate: limits.messagesPerSecond, capacity: Double(limits.messageBurst), now: now)
        let admitted = bucket.take(at: now)
        peers[peer]!.bucket = bucket
        guard admitted else {
            return refuse(peer, .rateLimited, String(format: "more than %d messages at once or %.0f per second: message dropped, slow down",
                                                     limits.messageBurst, limits.messagesPerSecond))
        }
        return receive(text, from: peer)
    }

    /// Handles one text message from `peer` (ignored when `peer` is not connected). No rate
    /// limit: that needs the time, see `receive(_:from:at:)`.
    public mutating func receive(_ text: String, from peer: String) -> [Delivery] {
        guard peers[peer] != nil else { return [] }
        let size = text.utf8.count
        guard size <= limits.maxMessageBytes else {
            return refuse(peer, .tooLarge, "message of \(size) bytes exceeds the limit of \(limits.maxMessageBytes) bytes")
        }
        let message: ClientMessage
        switch Self.decode(text) {
        case .success(let decoded): message = decoded
        case .failure(let error): return refuse(peer, error.code, error.details)
        }
        switch message {
        case .setPeerStatus(let status): return setPeerStatus(status, from: peer)
        case .list: return list(for: peer)
        case .startSession(let producer): return startSession(with: producer, from: peer)
        case .peer(let message): return forward(message, from: peer)
        case .endSession(let sessionId): return endSession(sessionId, from: peer)
        }
    }

    /// The peer is gone: ends its sessions and tells its room's listeners if it produced.
    public mutating func disconnect(_ peer: String) -> [Delivery] {
        guard let gone = peers.removeValue(forKey: peer) else { return [] }
        var out: [Delivery] = []
        for sessionId in gone.sessions.sorted() {
            guard let session = sessions.removeValue(forKey: sessionId), let other = session.other(than: peer) else { continue }
            peers[other]?.sessions.remove(sessionId)
            out.append(Delivery(to: other, message: .endSession(sessionId: sessionId)))
        }
        if gone.isProducer {
            out += toListeners(of: gone.room, except: peer,
                               .peerStatusChanged(peerId: peer, roles: [], meta: nil, room: gone.room, role: nil))
        }
        return out
    }

    // MARK: - Messages

    private mutating func setPeerStatus(_ status: PeerStatus, from peer: String) -> [Delivery] {
        guard var current = peers[peer] else { return [] }
        let room = status.room ?? Self.defaultRoom
        guard !room.isEmpty else { return refuse(peer, .malformed, "bad value for \"room\": must not be empty") }
        let producing = status.roles.contains(.producer)
        let role = status.role ?? (producing ? .publisher : .viewer)
        if producing && role != .publisher {
            return refuse(peer, .wrongRole, "a producer must have room role publisher, not \(role.rawValue)")
        }
        if !producing && role == .publisher {
            return refuse(peer, .wrongRole, "room role publisher requires the producer role")
        }
        if let refusal = access.refusal(room: room, role: role, token: status.token) {
            return refuse(peer, .unauthorized, refusal)
        }
        if !current.sessions.isEmpty && (room != current.room || role != current.role || producing != current.isProducer) {
            return refuse(peer, .wrongRole,
                          "end your \(current.sessions.count) session(s) before changing room or role")
        }
        let alreadyHere = current.isDeclared && current.room == room
        let others = peers.filter { $0.key != peer && $0.value.isDeclared && $0.value.room == room }
        if !alreadyHere && others.count >= limits.maxPeersPerRoom {
            return refuse(peer, .roomFull, "room \(quoted(room)) is full (\(limits.maxPeersPerRoom) peers)")
        }
        if producing && others.values.contains(where: \.isProducer) {
            return refuse(peer, .roomFull, "room \(quoted(room)) already has a publisher")
        }

        let before = current
        current.declaredAt = alreadyHere ? current.declaredAt : tick()
        current.room = room
        current.role = role
        current.roles = status.roles
        current.meta = status.meta
        peers[peer] = current

        var out: [Delivery] = []
        if before.isProducer && before.room != room {
            out += toListeners(of: before.room, except: peer,
                               .peerStatusChanged(peerId: peer, roles: [], meta: nil, room: before.room, role: nil))
        }
        if producing || (before.isProducer && before.room == room) {
            out += toListeners(of: room, except: peer,
                               .peerStatusChanged(peerId: peer, roles: status.roles, meta: status.meta, room: room, role: role))
        }
        return out
    }

    private func list(for peer: String) -> [Delivery] {
        guard let asker = peers[peer] else { return [] }
        if let refusal = undeclaredRefusal(asker) { return refuse(peer, .unauthorized, refusal) }
        let producers = peers
            .filter { $0.value.isProducer && $0.value.room == asker.room }
            .sorted { ($0.value.declaredAt ?? 0) < ($1.value.declaredAt ?? 0) }
            .map { ProducerInfo(id: $0.key, meta: $0.value.meta) }
        return [Delivery(to: peer, message: .list(producers: producers))]
    }

    private mutating func startSession(with producerId: String, from peer: String) -> [Delivery] {
        guard let consumer = peers[peer] else { return [] }
        if let refusal = undeclaredRefusal(consumer) { return refuse(peer, .unauthorized, refusal) }
        if consumer.isProducer {
            return refuse(peer, .wrongRole, "a producer cannot start a session")
        }
        guard let producer = peers[producerId], producer.isProducer, producer.room == consumer.room else {
            return refuse(peer, .unknownPeer, "no producer \(quoted(producerId)) in room \(quoted(consumer.room))")
        }
        guard producer.sessions.count < limits.maxSessionsPerProducer else {
            return refuse(peer, .roomFull, "producer \(quoted(producerId)) already has \(limits.maxSessionsPerProducer) sessions")
        }
        let sessionId = uniqueID { sessions[$0] != nil }
        sessions[sessionId] = Session(producer: producerId, consumer: peer)
        peers[producerId]?.sessions.insert(sessionId)
        peers[peer]?.sessions.insert(sessionId)
        return [
            Delivery(to: producerId, message: .startSession(peerId: peer, sessionId: sessionId,
                                                            role: consumer.role, meta: consumer.meta)),
            Delivery(to: peer, message: .sessionStarted(peerId: producerId, sessionId: sessionId)),
        ]
    }

    private func forward(_ message: PeerMessage, from peer: String) -> [Delivery] {
        guard let other = sessions[message.sessionId]?.other(than: peer) else {
            return refuse(peer, .unknownSession, "no session \(quoted(message.sessionId)) of yours")
        }
        return [Delivery(to: other, message: .peer(message))]
    }

    private mutating func endSession(_ sessionId: String, from peer: String) -> [Delivery] {
        guard let other = sessions[sessionId]?.other(than: peer) else {
            return refuse(peer, .unknownSession, "no session \(quoted(sessionId)) of yours")
        }
        sessions[sessionId] = nil
        peers[peer]?.sessions.remove(sessionId)
        peers[other]?.sessions.remove(sessionId)
        return [Delivery(to: other, message: .endSession(sessionId: sessionId)),
                Delivery(to: peer, message: .endSession(sessionId: sessionId))]
    }

    // MARK: - Helpers

    /// An undeclared peer acts as a tokenless viewer of the default room, if the policy allows one.
    private func undeclaredRefusal(_ peer: Peer) -> String? {
        guard !peer.isDeclared,
              let refusal = access.refusal(room: Self.defaultRoom, role: .viewer, token: nil) else { return nil }
        return refusal + "; declare yourself with setPeerStatus first"
    }

    private func toListeners(of room: String, except peer: String, _ message: ServerMessage) -> [Delivery] {
        peers
            .filter { $0.key != peer && $0.value.room == room && $0.value.roles.contains(.listener) }
            .sorted { $0.value.connectedAt < $1.value.connectedAt }
            .map { Delivery(to: $0.key, message: message) }
    }

    private func refuse(_ peer: String, _ code: SignalingErrorCode, _ details: String) -> [Delivery] {
        let details = details.count > 300 ? String(details.prefix(300)) + "…" : details
        return [Delivery(to: peer, message: .error(details: details, code: code))]
    }

    /// Client-supplied text as it appears in error details: quoted, and cut short.
    private func quoted(_ text: String) -> String {
        "\"" + (text.count > 64 ? String(text.prefix(64)) + "…" : text) + "\""
    }

    private mutating func tick() -> Int {
        clock += 1
        return clock
    }

    private func uniqueID(isTaken: (String) -> Bool) -> String {
        let base = makeID()
        if !base.isEmpty && !isTaken(base) { return base }
        var suffix = 2
        while isTaken("\(base)-\(suffix)") { suffix += 1 }
        return "\(base)-\(suffix)"
    }

    private static func decode(_ text: String) -> Result<ClientMessage, SignalingDecodeError> {
        do throws(SignalingDecodeError) {
            return .success(try SignalingCodec.decodeClient(text))
        } catch {
            return .failure(error)
        }
    }
}

extension SignalingHub {
    fileprivate struct Peer: Sendable {
        let connectedAt: Int
        /// When it last joined its room by `setPeerStatus`; `nil` while undeclared.
        var declaredAt: Int?
        var room = SignalingHub.defaultRoom
        var role = RoomRole.viewer
        var roles: [GstPeerRole] = []
        var meta: JSONValue?
        var sessions: Set<String> = []
        /// Its message rate limit, from its first timed message on.
        var bucket: TokenBucket?

        var isDeclared: Bool { declaredAt != nil }
        var isProducer: Bool { roles.contains(.producer) }
    }

    fileprivate struct Session: Sendable {
        let producer: String
        let consumer: String

        /// The other side, or `nil` when `peer` is not part of this session.
        func other(than peer: String) -> String? {
            if peer == producer { return consumer }
            if peer == consumer { return producer }
            return nil
        }
    }
}
