import Signaling

/// The room the experts' voices go through (docs/SCALING.md, "Voice through the SFU"):
/// a VideoRoom room of its own beside the video's, where each expert who may talk
/// publishes an audio-only feed named by a word only it and the publisher know, and the
/// publisher subscribes to the feeds of its own experts. The video's room keeps its one
/// publisher place, so nobody publishes video beside the field's.
extension JanusVideoRoom {
    /// What a voice room is made with: a pin, so that only the sessions the publisher told
    /// it to (those that may talk) can join, and places for that many talkers.
    public struct VoiceRoomSpec: Sendable, Equatable {
        public var room: UInt64
        public var pin: String
        /// Talkers at once (Janus counts only participants that publish).
        public var publishers = 16
        public init(room: UInt64, pin: String) { self.room = room; self.pin = pin }

        /// The `create` body: audio only (Opus), private (not in `list`).
        public var createBody: [String: JSONValue] {
            ["request": "create", "room": .number(Double(room)), "publishers": .number(Double(publishers)),
             "audiocodec": "opus", "pin": .string(pin), "is_private": true, "notify_joining": false,
             "description": .string("PoseCast voices \(room)")]
        }
    }

    /// The voice room of a video room: its number plus 10⁹ (nil when that leaves the
    /// numbers JSON carries exactly).
    public static func voiceRoom(of room: UInt64) -> UInt64? {
        let (sum, overflow) = room.addingReportingOverflow(1_000_000_000)
        return overflow || sum > 1 << 53 ? nil : sum
    }

    /// Makes the voice room afresh (a room left by an earlier run has another pin: it is
    /// destroyed first, which ends its feeds, whose experts are told the new pin).
    public static func makeVoiceRoom(_ spec: VoiceRoomSpec, on handle: JanusHandle) async throws(JanusError) {
        let exists = try await handle.request(["request": "exists", "room": .number(Double(spec.room))])
        if exists["exists"]?.boolValue == true {
            _ = try await handle.request(["request": "destroy", "room": .number(Double(spec.room))])
        }
        let created = try await handle.request(spec.createBody)
        guard created["videoroom"]?.stringValue == "created" else {
            throw .unexpected(request: "create (voices)", reply: "\(created)")
        }
    }

    /// Joins the voice room as a participant that never publishes, to hear of the feeds
    /// that come and go: our id and the feeds there now.
    public static func watchVoices(_ spec: VoiceRoomSpec, display: String,
                                   on handle: JanusHandle) async throws(JanusError) -> (id: UInt64, feeds: [CascadeFeed]) {
        let (id, data) = try await joinPublisherRole(room: spec.room, display: display, request: "join (voices)",
                                                      pin: spec.pin, on: handle)
        return (id, feeds(in: data))
    }

    /// Joins the voice room to publish under `display`: our feed id, and the feeds there now
    /// (Janus then tells us of those that come and go, as it tells any publisher).
    public static func joinToTalk(room: UInt64, display: String, pin: String,
                                  on handle: JanusHandle) async throws(JanusError) -> (id: UInt64, feeds: [CascadeFeed]) {
        let (id, data) = try await joinPublisherRole(room: room, display: display, request: "join (voices)", pin: pin, on: handle)
        return (id, feeds(in: data))
    }

    /// Subscribes to several feeds of the voice room at once (one audio m-line each): Janus's offer.
    public static func subscribe(room: UInt64, feeds: [UInt64], pin: String,
                                 on handle: JanusHandle) async throws(JanusError) -> String {
        let reply = try await handle.message(["request": "join", "ptype": "subscriber", "room": .number(Double(room)),
                                              "pin": .string(pin),
                                              "streams": .array(feeds.map { .object(["feed": .number(Double($0))]) })])
        guard let jsep = reply.jsep, jsep.type == "offer" else {
            throw .unexpected(request: "join (voices)", reply: "no offer: \(reply.pluginData.map { "\($0)" } ?? reply.verb)")
        }
        return jsep.sdp
    }
}
