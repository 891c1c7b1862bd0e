import Foundation
import Signaling

/// Janus's JSON API (janus.conf.meetecho.com/docs/rest.html), as far as PoseCast uses it:
/// the requests we send and the replies and events we read. Pure: no sockets
/// (`JanusClient` carries them), so every shape is tested on its own.
public enum JanusMessage {
    /// A request: `{"janus": verb, "transaction": …, "session_id"?, "handle_id"?, …}`.
    public static func request(_ verb: String, transaction: String, session: UInt64? = nil, handle: UInt64? = nil,
                               fields: [String: JSONValue] = [:]) -> String {
        var object = fields
        object["janus"] = .string(verb)
        object["transaction"] = .string(transaction)
        if let session { object["session_id"] = .number(Double(session)) }
        if let handle { object["handle_id"] = .number(Double(handle)) }
        return SignalingCodec.encode(.object(object))
    }

    /// A plugin message with its body and, when negotiating, a JSEP offer or answer.
    public static func message(transaction: String, session: UInt64, handle: UInt64, body: [String: JSONValue],
                               jsep: (type: String, sdp: String)? = nil) -> String {
        var fields: [String: JSONValue] = ["body": .object(body)]
        if let jsep { fields["jsep"] = .object(["type": .string(jsep.type), "sdp": .string(jsep.sdp)]) }
        return request("message", transaction: transaction, session: session, handle: handle, fields: fields)
    }

    /// One local ICE candidate (`nil`: gathering is complete).
    public static func trickle(transaction: String, session: UInt64, handle: UInt64,
                               candidate: (line: String, mlineIndex: UInt32)?) -> String {
        let value: JSONValue = candidate.map {
            .object(["candidate": .string($0.line), "sdpMLineIndex": .number(Double($0.mlineIndex))])
        } ?? .object(["completed": .bool(true)])
        return request("trickle", transaction: transaction, session: session, handle: handle, fields: ["candidate": value])
    }
}

/// What Janus sent, read.
public struct JanusReply: Sendable, Equatable {
    /// `success`, `ack`, `error`, `event`, `webrtcup`, `media`, `slowlink`, `hangup`,
    /// `detached`, `timeout`, `trickle` …
    public var verb: String
    public var transaction: String?
    /// The handle an event is about (`sender`).
    public var sender: UInt64?
    /// `data` of a `success` (the new session's or handle's `id`).
    public var data: JSONValue?
    /// The plugin's reply or event (`plugindata.data`).
    public var pluginData: JSONValue?
    /// An SDP offer or answer with an event.
    public var jsep: (type: String, sdp: String)? {
        guard let t = jsepType, let s = jsepSDP else { return nil }
        return (t, s)
    }
    var jsepType: String?
    var jsepSDP: String?
    /// `error.code` and `error.reason` of a Janus error, or the plugin's `error_code` and `error`.
    public var error: (code: Int, reason: String)? {
        if let e = errorCode { return (e, errorReason ?? "") }
        return nil
    }
    var errorCode: Int?
    var errorReason: String?
    /// A `hangup`'s or `timeout`'s reason.
    public var reason: String?

    /// Reads one message from Janus; nil when it is not a JSON object with a `janus` verb.
    public init?(text: String) {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)),
              let verb = value["janus"]?.stringValue else { return nil }
        self.verb = verb
        transaction = value["transaction"]?.stringValue
        sender = value["sender"]?.uint64Value
        data = value["data"]
        pluginData = value["plugindata"]?["data"]
        jsepType = value["jsep"]?["type"]?.stringValue
        jsepSDP = value["jsep"]?["sdp"]?.stringValue
        reason = value["reason"]?.stringValue
        if let error = value["error"] {
            errorCode = error["code"]?.intValue ?? 0
            errorReason = error["reason"]?.stringValue
        } else if let plugin = pluginData, let code = plugin["error_code"]?.intValue {
            errorCode = code
            errorReason = plugin["error"]?.stringValue
        }
    }
}

extension JSONValue {
    public var doubleValue: Double? { if case .number(let n) = self { return n }; return nil }
    public var intValue: Int? { doubleValue.flatMap { $0.isFinite && $0 == $0.rounded() ? Int(exactly: $0) : nil } }
    public var uint64Value: UInt64? { doubleValue.flatMap { $0 >= 0 && $0 == $0.rounded() ? UInt64(exactly: $0) : nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a }; return nil }
}
