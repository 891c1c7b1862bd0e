// The signaling protocol: the message shapes of GStreamer's own webrtcsink
// signalling server (gst-plugins-rs `net/webrtc/protocol`), so its clients can talk
// to ours, plus PoseCast's rooms, roles and tokens as extra fields that those
// clients never send and safely ignore.
//
// Every message is one JSON object with a `type` (camelCase). Identifiers are
// strings chosen by the server (peer ids, session ids).

/// A peer's role in GStreamer's protocol.
public enum GstPeerRole: String, Codable, Sendable, Hashable, CaseIterable {
    /// Produces streams (our publisher).
    case producer
    /// Consumes a producer's streams (our expert or viewer).
    case consumer
    /// Is told when producers come and go.
    case listener
}

/// A peer's role in a PoseCast room: what it may do.
public enum RoomRole: String, Codable, Sendable, Hashable, CaseIterable {
    /// The field camera: produces the stream, one per room.
    case publisher
    /// A remote expert: receives, annotates and steers the camera.
    case expert
    /// Receives only; its control commands are refused.
    case viewer
}

/// An SDP offer or answer as carried inside `peer` messages.
public struct SignalingSDP: Codable, Sendable, Hashable {
    /// `offer` or `answer`.
    public var type: String
    public var sdp: String
    public init(type: String, sdp: String) { self.type = type; self.sdp = sdp }
}

/// An ICE candidate as carried inside `peer` messages.
public struct SignalingICE: Codable, Sendable, Hashable {
    public var candidate: String
    public var sdpMLineIndex: UInt32
    public init(candidate: String, sdpMLineIndex: UInt32) { self.candidate = candidate; self.sdpMLineIndex = sdpMLineIndex }
}

/// A producer as listed by the server.
public struct ProducerInfo: Codable, Sendable, Hashable {
    public var id: String
    public var meta: JSONValue?
    public init(id: String, meta: JSONValue? = nil) { self.id = id; self.meta = meta }
}

/// Why the server refused a message (`error.code`); `details` says it in words.
public enum SignalingErrorCode: String, Codable, Sendable, Hashable, CaseIterable {
    /// Not JSON, not an object, or a field of the wrong type.
    case malformed
    /// A `type` the server does not know.
    case unknownType
    /// More bytes than the server accepts in one message.
    case tooLarge
    /// `sessionId` names no session this peer is part of.
    case unknownSession
    /// `peerId` names no peer (or no producer) in this peer's room.
    case unknownPeer
    /// The peer's role does not allow this message (a viewer producing, a producer starting a session …).
    case wrongRole
    /// The room's token was missing or did not match.
    case unauthorized
    /// The room already holds its maximum number of peers, or already has a publisher.
    case roomFull
    /// Too many messages in too short a time.
    case rateLimited
    /// Held a place in a room with a publisher without starting a session for too long:
    /// the server disconnects the peer right after this error.
    case idleTimeout
}

/// Server → peer.
public enum ServerMessage: Sendable, Hashable {
    /// First message on every connection: the id the server gave this peer.
    case welcome(peerId: String)
    /// A peer's roles changed (sent to listeners of the same room). Empty roles: it left.
    case peerStatusChanged(peerId: String, roles: [GstPeerRole], meta: JSONValue?, room: String?, role: RoomRole?)
    /// The producers of this peer's room.
    case list(producers: [ProducerInfo])
    /// To the consumer: the session it asked for exists.
    case sessionStarted(peerId: String, sessionId: String)
    /// To the producer: a consumer wants a session (`role` says what that consumer may do).
    case startSession(peerId: String, sessionId: String, role: RoomRole?, meta: JSONValue?)
    /// The session is over (asked by either side, or one side vanished).
    case endSession(sessionId: String)
    /// SDP or ICE from the other side of a session.
    case peer(PeerMessage)
    /// A refused message: `details` in words, `code` for programs; `sessionId` (PoseCast)
    /// names the session an `unknownSession` refusal is about, so its sender can drop it.
    case error(details: String, code: SignalingErrorCode?, sessionId: String? = nil)
}

/// Peer → server.
public enum ClientMessage: Sendable, Hashable {
    /// Declares the peer's roles (GStreamer's field) and, for PoseCast, its room, room
    /// role and token. Sent once after `welcome`; a second one replaces the first.
    case setPeerStatus(PeerStatus)
    /// A consumer asks for a session with producer `peerId`.
    case startSession(peerId: String)
    case endSession(sessionId: String)
    case peer(PeerMessage)
    /// Asks for the producers of this peer's room.
    case list
}

extension ClientMessage {
    /// A trickled ICE candidate of session `sessionId`, for the server to pass on.
    public static func candidate(_ candidate: String, mlineIndex: UInt32, sessionId: String) -> ClientMessage {
        .peer(PeerMessage(sessionId: sessionId, payload: .ice(SignalingICE(candidate: candidate, sdpMLineIndex: mlineIndex))))
    }
}

/// `setPeerStatus`: GStreamer's fields plus PoseCast's room, role and token.
public struct PeerStatus: Sendable, Hashable, Codable {
    public var roles: [GstPeerRole]
    public var meta: JSONValue?
    public var peerId: String?
    /// PoseCast: the room to join (`default` when absent).
    public var room: String?
    /// PoseCast: the role in the room. When absent: `publisher` for a producer, else `viewer`.
    public var role: RoomRole?
    /// PoseCast: the room's (or role's) token, when the server requires one.
    public var token: String?

    public init(roles: [GstPeerRole], meta: JSONValue? = nil, peerId: String? = nil,
                room: String? = nil, role: RoomRole? = nil, token: String? = nil) {
        self.roles = roles; self.meta = meta; self.peerId = peerId
        self.room = room; self.role = role; self.token = token
    }
}

/// `peer`: SDP or ICE within one session (exactly one of the two).
public struct PeerMessage: Sendable, Hashable {
    public enum Payload: Sendable, Hashable {
        case sdp(SignalingSDP)
        case ice(SignalingICE)
        /// A control request or reply (`ControlCodec` text) carried by the server instead
        /// of a data channel: an expert whose media comes through an SFU, which relays
        /// data only from the publisher (docs/SCALING.md). Only in sessions started with
        /// `PeerMessage.viaSFUKey` in the consumer's meta.
        case control(String)
    }
    /// The key in a consumer's `setPeerStatus` meta saying its media comes through an
    /// SFU (`{"via": "sfu"}`): the publisher then opens no peer connection for the
    /// session, and its control traffic is `control` peer messages.
    public static let viaKey = "via"
    public static let viaSFU = "sfu"
    public var sessionId: String
    public var payload: Payload
    public init(sessionId: String, payload: Payload) { self.sessionId = sessionId; self.payload = payload }
}
