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
///   then the room's places (`HubLimits.placeRefusal`), else `roomFull`: a room holds
///   `maxPeersPerRoom` declared peers, one place is always the publisher's, and in a
///   room whose experts need a token `reservedExpertPlaces` more are kept for experts
///   that showed it; producing in a room that already has a producer is `roomFull`
///   (the first publisher keeps the room until it leaves). No reply on success. A
///   second `setPeerStatus` replaces the first (meta updates are fine).
/// - **Idle peers**: a declared peer other than a producer that holds no session in a
///   room with a producer for `listenerTimeout` seconds (from its declaration, the end
///   of its last session or the producer's arrival, whichever is latest) is refused
///   `idleTimeout` and dropped by `expireIdle(at:)`, which returns it for the transport
///   to close. Peers waiting in a room without a producer are not idle: there is
///   nothing to start a session with. A connection that neither declares itself nor
///   holds a session for `undeclaredTimeout` seconds (from its connection or the end of
///   its last session) is dropped the same way, wherever it is.
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
///   rooms); the sender must hold fewer than `maxSessionsPerConsumer` sessions and the
///   producer fewer than `maxSessionsPerProducer` (sessions being set up count as much
///   as live ones), the last `reservedExpertSessions` of which only an authorised
///   expert may take in a room whose experts need a token (`roomFull`). The producer
///   then gets `startSession{peerId: consumer, sessionId, role: consumer's room role,
///   meta: consumer's meta}` and the consumer gets `sessionStarted{peerId: producer, sessionId}`.
/// - **peer{sessionId, sdp|ice}** is forwarded unchanged to the other side of the
///   session; a sender that is not in that session gets `unknownSession` with that
///   `sessionId` (so a publisher can drop a session the server no longer knows).
/// - **endSession{sessionId}**: both sides get `endSession{sessionId}`, the other side
///   first; a sender not in that session gets `unknownSession` (with the `sessionId`).
/// - **disconnect**: every session of the peer ends and its other side gets `endSession`;
///   a producer's room listeners are told it left.
/// - **Rate**: with the time given (`receive(_:from:at:)`, as the server does), each
///   connection has a token bucket of `messageBurst` messages refilled at
///   `messagesPerSecond` (times its session count for a room's producer, who speaks for each);
///   a message finding it empty is refused `rateLimited`, unread.
/// - **Bad input**: text over `maxMessageBytes` UTF-8 bytes → `tooLarge`, not parsed;
///   not JSON, not an object, wrong or missing fields, `sdp` and `ice` both or neither →
///   `malformed` naming the field; an unknown `type` → `unknownType`.
///
/// Every refusal is exactly one `error{details, code}` to the sender and nothing to anyone
/// else, counted in `refusals`; the peer stays connected and usable (but for
/// `idleTimeout`). `details` never contains a token and quotes client-supplied text only
/// briefly. No input traps.
public struct SignalingHub: Sendable {
    public let limits: HubLimits
    public let access: AccessPolicy
    private let makeID: @Sendable () -> String

    private var peers: [String: Peer] = [:]
    private var sessions: [String: Session] = [:]
    /// Orders declarations (for `list`) and connections (for listener fan-out).
    private var clock = 0
    /// The latest time the transport gave (seconds, monotonic); untimed calls happen then.
    private var now: Double = 0
    /// Refused messages so far, by reason.
    public private(set) var refusals: [SignalingErrorCode: Int] = [:]

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

    /// A new connection at `now` (seconds on the clock of `receive(_:from:at:)`).
    public mutating func connect(at now: Double) -> (peer: String, deliveries: [Delivery]) {
        advance(to: now)
        return connect()
    }

    public mutating func connect() -> (peer: String, deliveries: [Delivery]) {
        let id = uniqueID { peers[$0] != nil }
        peers[id] = Peer(connectedAt: tick(), idleSince: now)
        return (id, [Delivery(to: id, message: .welcome(peerId: id))])
    }

    /// Handles one text message from `peer` that arrived at `now` (seconds on any monotonic
    /// clock): as `receive(_:from:)`, after the peer's rate limit. A message beyond
    /// `limits.messageBurst` at once, or `limits.messagesPerSecond` sustained (both times
    /// its session count for a room's producer), is refused with `rateLimited` and not
    /// read; the peer stays connected.
    public mutating func receive(_ text: String, from peer: String, at now: Double) -> [Delivery] {
        advance(to: now)
        guard peers[peer] != nil else { return [] }
        // The first message finds a full bucket.
        var bucket = peers[peer]!.bucket
            ?? TokenBucket(rate: limits.messagesPerSecond, capacity: Double(limits.messageBurst), now: now)
        // A producer speaks for each of its sessions (a publisher through an SFU sends every
        // session its broadcasts over signaling): its budget is per session.
        let sessions = peers[peer]!.producingSince == nil ? 1 : max(1, peers[peer]!.sessions.count)
        let admitted = bucket.take(at: now, share: 1 / Double(sessions))
        peers[peer]!.bucket = bucket
        guard admitted else {
            return refuse(peer, .rateLimited, String(format: "more than %d messages at once or %.0f per second: message dropped, slow down",
                                                     limits.messageBurst, limits.messagesPerSecond))
        }
        return receive(text, from: peer)
    }

    /// Handles one text message from `peer` (ignored when `peer` is not connected) at the
    /// latest time given. No rate limit: that needs the time, see `receive(_:from:at:)`.
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
            removeSession(sessionId, of: other)
            out.append(Delivery(to: other, message: .endSession(sessionId: sessionId)))
        }
        if gone.isProducer {
            out += toListeners(of: gone.room, except: peer,
                               .peerStatusChanged(peerId: peer, roles: [], meta: nil, room: gone.room, role: nil))
        }
        return out
    }

    /// Drops the peers idle for `limits.listenerTimeout` at `now` (see the type's doc):
    /// each gets one `idleTimeout` error, and `closed` lists them for the transport to
    /// close. Call it every second or so.
    public mutating func expireIdle(at now: Double) -> (deliveries: [Delivery], closed: [String]) {
        advance(to: now)
        var producingSince: [String: Double] = [:]
        for peer in peers.values where peer.isProducer {
            producingSince[peer.room] = peer.producingSince ?? 0
        }
        let idle = peers
            .filter { _, peer in
                guard !peer.isProducer, peer.sessions.isEmpty else { return false }
                if !peer.isDeclared { return now - peer.idleSince >= limits.undeclaredTimeout }
                guard let since = producingSince[peer.room] else { return false }
                return now - max(peer.idleSince, since) >= limits.listenerTimeout
            }
            .sorted { $0.value.connectedAt < $1.value.connectedAt }
        var deliveries: [Delivery] = []
        for (id, peer) in idle {
            if peer.isDeclared {
                let seconds = String(format: "%.0f", limits.listenerTimeout)
                deliveries += refuse(id, .idleTimeout, "no session started in room \(quoted(peer.room)) for \(seconds) s while it"
                                     + " has a publisher: disconnecting you to free your place; connect again to start one")
            } else {
                let seconds = String(format: "%.0f", limits.undeclaredTimeout)
                deliveries += refuse(id, .idleTimeout, "neither declared (setPeerStatus) nor in a session for \(seconds) s:"
                                     + " disconnecting you; connect again and declare yourself")
            }
            deliveries += disconnect(id)
        }
        return (deliveries, idle.map(\.key))
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
        var occupancy = RoomOccupancy()
        for (id, other) in peers where id != peer && other.isDeclared && other.room == room {
            occupancy.add(kind(of: other))
        }
        let placeKind = kind(role: role, producing: producing, room: room)
        if let refusal = limits.placeRefusal(for: placeKind, joining: occupancy, reserving: reservesForExperts(room),
                                             room: quoted(room)) {
            // Waiting for a place is not idling: a refused peer asks again after its backoff.
            if !current.isDeclared { peers[peer]?.idleSince = now }
            return refuse(peer, .roomFull, refusal)
        }

        let before = current
        current.declaredAt = alreadyHere ? current.declaredAt : tick()
        if !alreadyHere { current.idleSince = now }
        current.producingSince = producing ? (alreadyHere && before.isProducer ? before.producingSince : now) : nil
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

    private mutating func list(for peer: String) -> [Delivery] {
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
        if let refusal = limits.sessionRefusal(for: kind(of: consumer), consumerSessions: consumer.sessions.count,
                                               producerSessions: producer.sessions.count,
                                               reserving: reservesForExperts(consumer.room), producer: quoted(producerId)) {
            return refuse(peer, .roomFull, refusal)
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

    private mutating func forward(_ message: PeerMessage, from peer: String) -> [Delivery] {
        guard let other = sessions[message.sessionId]?.other(than: peer) else {
            return refuse(peer, .unknownSession, "no session \(quoted(message.sessionId)) of yours", session: message.sessionId)
        }
        return [Delivery(to: other, message: .peer(message))]
    }

    private mutating func endSession(_ sessionId: String, from peer: String) -> [Delivery] {
        guard let other = sessions[sessionId]?.other(than: peer) else {
            return refuse(peer, .unknownSession, "no session \(quoted(sessionId)) of yours", session: sessionId)
        }
        sessions[sessionId] = nil
        removeSession(sessionId, of: peer)
        removeSession(sessionId, of: other)
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

    /// What `peer` counts as for places and sessions.
    private func kind(of peer: Peer) -> PlaceKind {
        kind(role: peer.role, producing: peer.isProducer, room: peer.room)
    }

    private func kind(role: RoomRole, producing: Bool, room: String) -> PlaceKind {
        if producing { return .publisher }
        // Declared peers passed the token check: an expert of a room that needs one showed it.
        return role == .expert && access.requiresToken(room: room, role: .expert) ? .authorisedExpert : .other
    }

    /// Whether places and sessions are kept for experts in `room`: only where experts need a token.
    private func reservesForExperts(_ room: String) -> Bool {
        access.requiresToken(room: room, role: .expert)
    }

    /// Takes `sessionId` off `peer`'s sessions; a peer left with none starts being idle now.
    private mutating func removeSession(_ sessionId: String, of peer: String) {
        guard peers[peer]?.sessions.remove(sessionId) != nil else { return }
        if peers[peer]?.sessions.isEmpty == true { peers[peer]?.idleSince = now }
    }

    private mutating func advance(to time: Double) {
        if time.isFinite { now = max(now, time) }
    }

    private mutating func refuse(_ peer: String, _ code: SignalingErrorCode, _ details: String,
                                 session: String? = nil) -> [Delivery] {
        refusals[code, default: 0] += 1
        let details = details.count > 300 ? String(details.prefix(300)) + "…" : details
        // Only an id of at most 200 characters goes back: a longer one is no id we gave out.
        let session = session.flatMap { $0.count <= 200 ? $0 : nil }
        return [Delivery(to: peer, message: .error(details: details, code: code, sessionId: session))]
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
        /// Since when (hub time) it has held no session in its room.
        var idleSince: Double
        /// Since when (hub time) it has been its room's producer.
        var producingSince: Double?
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
