import Foundation

/// Why a text could not be read as a protocol message; maps onto an `error` reply.
public struct SignalingDecodeError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: SignalingErrorCode
    public var details: String
    public var description: String { details }
}

private enum Key: String, CodingKey {
    case type, peerId, roles, meta, producers, sessionId, sdp, ice, control, details, code, room, role, token, id
}

extension ServerMessage: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        switch try c.decode(String.self, forKey: .type) {
        case "welcome": self = .welcome(peerId: try c.decode(String.self, forKey: .peerId))
        case "peerStatusChanged":
            self = .peerStatusChanged(peerId: try c.decode(String.self, forKey: .peerId),
                                      roles: try c.decode([GstPeerRole].self, forKey: .roles),
                                      meta: try c.decodeIfPresent(JSONValue.self, forKey: .meta),
                                      room: try c.decodeIfPresent(String.self, forKey: .room),
                                      role: try c.decodeIfPresent(RoomRole.self, forKey: .role))
        case "list": self = .list(producers: try c.decode([ProducerInfo].self, forKey: .producers))
        case "sessionStarted":
            self = .sessionStarted(peerId: try c.decode(String.self, forKey: .peerId),
                                   sessionId: try c.decode(String.self, forKey: .sessionId))
        case "startSession":
            self = .startSession(peerId: try c.decode(String.self, forKey: .peerId),
                                 sessionId: try c.decode(String.self, forKey: .sessionId),
                                 role: try c.decodeIfPresent(RoomRole.self, forKey: .role),
                                 meta: try c.decodeIfPresent(JSONValue.self, forKey: .meta))
        case "endSession": self = .endSession(sessionId: try c.decode(String.self, forKey: .sessionId))
        case "peer": self = .peer(try PeerMessage(from: c))
        case "error":
            self = .error(details: try c.decode(String.self, forKey: .details),
                          code: try c.decodeIfPresent(SignalingErrorCode.self, forKey: .code),
                          sessionId: try c.decodeIfPresent(String.self, forKey: .sessionId))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "unknown type \"\(other)\"")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch self {
        case .welcome(let peerId):
            try c.encode("welcome", forKey: .type); try c.encode(peerId, forKey: .peerId)
        case let .peerStatusChanged(peerId, roles, meta, room, role):
            try c.encode("peerStatusChanged", forKey: .type); try c.encode(peerId, forKey: .peerId)
            try c.encode(roles, forKey: .roles); try c.encodeIfPresent(meta, forKey: .meta)
            try c.encodeIfPresent(room, forKey: .room); try c.encodeIfPresent(role, forKey: .role)
        case .list(let producers):
            try c.encode("list", forKey: .type); try c.encode(producers, forKey: .producers)
        case let .sessionStarted(peerId, sessionId):
            try c.encode("sessionStarted", forKey: .type); try c.encode(peerId, forKey: .peerId)
            try c.encode(sessionId, forKey: .sessionId)
        case let .startSession(peerId, sessionId, role, meta):
            try c.encode("startSession", forKey: .type); try c.encode(peerId, forKey: .peerId)
            try c.encode(sessionId, forKey: .sessionId); try c.encodeIfPresent(role, forKey: .role)
            try c.encodeIfPresent(meta, forKey: .meta)
        case .endSession(let sessionId):
            try c.encode("endSession", forKey: .type); try c.encode(sessionId, forKey: .sessionId)
        case .peer(let message):
            try c.encode("peer", forKey: .type); try message.encode(into: &c)
        case let .error(details, code, sessionId):
            try c.encode("error", forKey: .type); try c.encode(details, forKey: .details)
            try c.encodeIfPresent(code, forKey: .code); try c.encodeIfPresent(sessionId, forKey: .sessionId)
        }
    }
}

extension ClientMessage: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        switch try c.decode(String.self, forKey: .type) {
        case "setPeerStatus":
            self = .setPeerStatus(PeerStatus(
                roles: try c.decode([GstPeerRole].self, forKey: .roles),
                meta: try c.decodeIfPresent(JSONValue.self, forKey: .meta),
                peerId: try c.decodeIfPresent(String.self, forKey: .peerId),
                room: try c.decodeIfPresent(String.self, forKey: .room),
                role: try c.decodeIfPresent(RoomRole.self, forKey: .role),
                token: try c.decodeIfPresent(String.self, forKey: .token)))
        case "startSession": self = .startSession(peerId: try c.decode(String.self, forKey: .peerId))
        case "endSession": self = .endSession(sessionId: try c.decode(String.self, forKey: .sessionId))
        case "peer": self = .peer(try PeerMessage(from: c))
        case "list": self = .list
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "unknown type \"\(other)\"")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch self {
        case .setPeerStatus(let s):
            try c.encode("setPeerStatus", forKey: .type); try c.encode(s.roles, forKey: .roles)
            try c.encodeIfPresent(s.meta, forKey: .meta); try c.encodeIfPresent(s.peerId, forKey: .peerId)
            try c.encodeIfPresent(s.room, forKey: .room); try c.encodeIfPresent(s.role, forKey: .role)
            try c.encodeIfPresent(s.token, forKey: .token)
        case .startSession(let peerId):
            try c.encode("startSession", forKey: .type); try c.encode(peerId, forKey: .peerId)
        case .endSession(let sessionId):
            try c.encode("endSession", forKey: .type); try c.encode(sessionId, forKey: .sessionId)
        case .peer(let message):
            try c.encode("peer", forKey: .type); try message.encode(into: &c)
        case .list:
            try c.encode("list", forKey: .type)
        }
    }
}

extension PeerMessage {
    fileprivate init(from c: KeyedDecodingContainer<Key>) throws {
        let sessionId = try c.decode(String.self, forKey: .sessionId)
        let sdp = try c.decodeIfPresent(SignalingSDP.self, forKey: .sdp)
        let ice = try c.decodeIfPresent(SignalingICE.self, forKey: .ice)
        let control = try c.decodeIfPresent(String.self, forKey: .control)
        switch (sdp, ice, control) {
        case (let sdp?, nil, nil): self.init(sessionId: sessionId, payload: .sdp(sdp))
        case (nil, let ice?, nil): self.init(sessionId: sessionId, payload: .ice(ice))
        case (nil, nil, let control?): self.init(sessionId: sessionId, payload: .control(control))
        default:
            throw DecodingError.dataCorruptedError(forKey: .sdp, in: c,
                                                   debugDescription: "a peer message carries exactly one of sdp, ice or control")
        }
    }

    fileprivate func encode(into c: inout KeyedEncodingContainer<Key>) throws {
        try c.encode(sessionId, forKey: .sessionId)
        switch payload {
        case .sdp(let sdp): try c.encode(sdp, forKey: .sdp)
        case .ice(let ice): try c.encode(ice, forKey: .ice)
        case .control(let text): try c.encode(text, forKey: .control)
        }
    }
}

/// JSON text ⇄ messages, with errors phrased for the `error` reply.
public enum SignalingCodec {
    public static func encode(_ message: ServerMessage) -> String { text(of: message) }
    public static func encode(_ message: ClientMessage) -> String { text(of: message) }
    /// Any JSON value with the same settings (sorted keys, unescaped slashes): Janus's requests.
    public static func encode(_ value: JSONValue) -> String { text(of: value) }

    private static func text(of value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Our message types only hold strings, numbers from Int ranges and JSONValue:
        // encoding cannot fail except for a non-finite number inside `meta`.
        guard let data = try? encoder.encode(value) else {
            return #"{"details":"message could not be encoded","type":"error"}"#
        }
        return String(decoding: data, as: UTF8.self)
    }

    public static func decodeClient(_ text: String) throws(SignalingDecodeError) -> ClientMessage {
        try decode(ClientMessage.self, text)
    }

    public static func decodeServer(_ text: String) throws(SignalingDecodeError) -> ServerMessage {
        try decode(ServerMessage.self, text)
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws(SignalingDecodeError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(text.utf8))
        } catch let DecodingError.dataCorrupted(context) where context.codingPath.last?.stringValue == "type" {
            throw SignalingDecodeError(code: .unknownType, details: context.debugDescription)
        } catch let DecodingError.keyNotFound(key, context) {
            throw SignalingDecodeError(code: .malformed, details: "missing field \"\(path(context.codingPath + [key]))\"")
        } catch let DecodingError.typeMismatch(_, context) {
            throw SignalingDecodeError(code: .malformed, details: "wrong type for \"\(path(context.codingPath))\": \(context.debugDescription)")
        } catch let DecodingError.valueNotFound(_, context) {
            throw SignalingDecodeError(code: .malformed, details: "null for \"\(path(context.codingPath))\"")
        } catch let DecodingError.dataCorrupted(context) {
            let field = path(context.codingPath)
            guard field.isEmpty else {
                throw SignalingDecodeError(code: .malformed, details: "bad value for \"\(field)\": \(context.debugDescription)")
            }
            // Foundation reports a number that does not fit its field (-1 for a UInt32) as
            // invalid JSON with no coding path; do not call such an object "not JSON".
            let isObject = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) is [String: Any]
            throw SignalingDecodeError(code: .malformed,
                                       details: isObject ? "a number is out of range for its field (negative, fractional or too large)"
                                                         : "not a JSON object: \(context.debugDescription)")
        } catch {
            throw SignalingDecodeError(code: .malformed, details: "unreadable message: \(error)")
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }
}
