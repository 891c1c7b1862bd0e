import Signaling

/// Janus's VideoRoom plugin, as a publisher and a subscriber use it (one request each;
/// the SDP work is the caller's webrtcbin).
public enum JanusVideoRoom {
    public static let plugin = "janus.plugin.videoroom"

    /// What a PoseCast room in Janus is made with.
    public struct RoomSpec: Sendable, Equatable {
        public var room: UInt64
        /// `h264` or `vp8`: the only video codec the room takes (the publisher's).
        public var videoCodec: String
        /// Janus's cap on each publisher's bitrate (bit/s; REMB to the publisher), 0: none.
        public var bitrate = 0
        /// Publishers allowed at once: one field camera.
        public var publishers = 1
        public init(room: UInt64, videoCodec: String) { self.room = room; self.videoCodec = videoCodec }

        /// The `create` body.
        public var createBody: [String: JSONValue] {
            var body: [String: JSONValue] = [
                "request": "create", "room": .number(Double(room)), "publishers": .number(Double(publishers)),
                "videocodec": .string(videoCodec), "audiocodec": "opus", "description": .string("PoseCast room \(room)"),
                "notify_joining": false, "bitrate": .number(Double(bitrate)),
            ]
            // Janus's default H.264 profile check would refuse constrained baseline at another level.
            if videoCodec == "h264" { body["h264_profile"] = "42e01f" }
            return body
        }
    }

    /// Makes the room unless it exists; true when it was made.
    @discardableResult
    public static func ensure(_ spec: RoomSpec, on handle: JanusHandle) async throws(JanusError) -> Bool {
        let exists = try await handle.request(["request": "exists", "room": .number(Double(spec.room))])
        if exists["exists"]?.boolValue == true { return false }
        let created = try await handle.request(spec.createBody)
        guard created["videoroom"]?.stringValue == "created" else {
            throw .unexpected(request: "create", reply: "\(created)")
        }
        return true
    }

    /// Joins as the room's publisher: our feed id.
    /// `pin`: the room's, when it has one (the voice room: docs/SCALING.md).
    public static func joinAsPublisher(room: UInt64, display: String, pin: String? = nil,
                                       on handle: JanusHandle) async throws(JanusError) -> UInt64 {
        try await joinPublisherRole(room: room, display: display, request: "join", pin: pin, on: handle).id
    }

    /// `join` with `ptype: publisher` (publishing comes later, or never): our id in the
    /// room and Janus's `joined` data (it lists the room's publishers).
    static func joinPublisherRole(room: UInt64, display: String, request: String, pin: String? = nil,
                                  on handle: JanusHandle) async throws(JanusError) -> (id: UInt64, data: JSONValue?) {
        var body: [String: JSONValue] = ["request": "join", "ptype": "publisher", "room": .number(Double(room)),
                                         "display": .string(display)]
        if let pin { body["pin"] = .string(pin) }
        let joined = try await handle.message(body)
        guard joined.pluginData?["videoroom"]?.stringValue == "joined", let id = joined.pluginData?["id"]?.uint64Value else {
            throw .unexpected(request: request, reply: "\(joined.pluginData.map { "\($0)" } ?? joined.verb)")
        }
        return (id, joined.pluginData)
    }

    /// Publishes our offer: Janus's answer.
    public static func publish(offer sdp: String, on handle: JanusHandle) async throws(JanusError) -> String {
        let reply = try await handle.message(["request": "publish"], jsep: ("offer", sdp))
        guard let jsep = reply.jsep, jsep.type == "answer" else {
            throw .unexpected(request: "publish", reply: "an event without an answer: \(reply.pluginData.map { "\($0)" } ?? "")")
        }
        return jsep.sdp
    }

    /// The feeds publishing in the room now (id, display).
    public static func publishers(room: UInt64, on handle: JanusHandle) async throws(JanusError) -> [(id: UInt64, display: String)] {
        let list = try await handle.request(["request": "listparticipants", "room": .number(Double(room))])
        return (list["participants"]?.arrayValue ?? []).compactMap { p in
            guard p["publisher"]?.boolValue == true, let id = p["id"]?.uint64Value else { return nil }
            return (id, p["display"]?.stringValue ?? "")
        }
    }

    /// Joins as a subscriber of `feed`: Janus's offer (video, and the data channel when the feed has one).
    public static func subscribe(room: UInt64, feed: UInt64, pin: String? = nil,
                                 on handle: JanusHandle) async throws(JanusError) -> String {
        var body: [String: JSONValue] = ["request": "join", "ptype": "subscriber", "room": .number(Double(room)),
                                         "streams": .array([.object(["feed": .number(Double(feed))])])]
        if let pin { body["pin"] = .string(pin) }
        let reply = try await handle.message(body)
        guard let jsep = reply.jsep, jsep.type == "offer" else {
            throw .unexpected(request: "join (subscriber)", reply: "no offer: \(reply.pluginData.map { "\($0)" } ?? reply.verb)")
        }
        return jsep.sdp
    }

    /// Sends our answer: media starts.
    public static func start(answer sdp: String, on handle: JanusHandle) async throws(JanusError) {
        _ = try await handle.message(["request": "start"], jsep: ("answer", sdp))
    }
}
