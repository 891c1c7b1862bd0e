import Signaling

/// The VideoRoom requests of a cascade: watching the origin's room, and Janus's remote
/// publishers (`add_remote_publisher` on an edge, `publish_remotely` on the origin).
extension JanusVideoRoom {
    /// Stream fields `add_remote_publisher` takes from a publisher's description. The
    /// H.264 profile stays out: Janus 1.1.2 checks it as a boolean and refuses the string
    /// it lists (the edge's room names the profile instead).
    static let relayedStreamFields: Set<String> = ["type", "mindex", "mid", "codec", "disabled", "description", "stereo", "fec", "dtx"]

    /// The feeds of a `publishers` list (in `joined` and `event` messages).
    public static func feeds(in data: JSONValue?) -> [CascadeFeed] {
        (data?["publishers"]?.arrayValue ?? []).compactMap { p in
            guard let id = p["id"]?.uint64Value else { return nil }
            let streams = (p["streams"]?.arrayValue ?? []).map { s -> JSONValue in
                guard case .object(let fields) = s else { return s }
                return .object(fields.filter { relayedStreamFields.contains($0.key) })
            }
            return CascadeFeed(id: id, display: p["display"]?.stringValue ?? "", streams: streams)
        }
    }

    /// The feeds an event says left the room (`unpublished`, `leaving`), but `me`.
    public static func gone(in data: JSONValue, except me: UInt64) -> [UInt64] {
        ["unpublished", "leaving"].compactMap { data[$0]?.uint64Value }.filter { $0 != me }
    }

    /// Joins the room as a participant that never publishes, to hear of its publishers
    /// (`publishers`, `unpublished`, `leaving` events): our id and the feeds there now.
    /// It takes no publisher's place: Janus counts only those that publish.
    public static func watch(room: UInt64, display: String, on handle: JanusHandle) async throws(JanusError) -> (id: UInt64, feeds: [CascadeFeed]) {
        let (id, data) = try await joinPublisherRole(room: room, display: display, request: "join (watch)", on: handle)
        return (id, feeds(in: data))
    }

    /// Whether the room exists, and its video codec when it does.
    public static func roomCodec(_ room: UInt64, on handle: JanusHandle) async throws(JanusError) -> String?? {
        let list = try await handle.request(["request": "list"])
        guard let entry = (list["list"]?.arrayValue ?? []).first(where: { $0["room"]?.uint64Value == room }) else { return .none }
        return .some(entry["videocodec"]?.stringValue)
    }

    /// Makes the room for `spec` on an edge: made when missing, made again when it exists
    /// for another codec (the publisher came back with another), which ends its subscriptions.
    public static func ensureRelayRoom(_ spec: RoomSpec, on handle: JanusHandle) async throws(JanusError) {
        switch try await roomCodec(spec.room, on: handle) {
        case .none:
            break
        case .some(let codec) where codec?.split(separator: ",").first.map(String.init) == spec.videoCodec:
            return
        case .some:
            _ = try await handle.request(["request": "destroy", "room": .number(Double(spec.room))])
        }
        let created = try await handle.request(spec.createBody)
        guard created["videoroom"]?.stringValue == "created" else { throw .unexpected(request: "create", reply: "\(created)") }
    }

    /// The remote publishers in the room (ids), none when the room does not exist.
    public static func remotePublishers(room: UInt64, on handle: JanusHandle) async throws(JanusError) -> [UInt64] {
        let list: JSONValue
        do throws(JanusError) {
            list = try await handle.request(["request": "listparticipants", "room": .number(Double(room))])
        } catch .refused(_, JanusError.noSuchRoom, _) {
            return []
        }
        return (list["participants"]?.arrayValue ?? []).compactMap { p in
            p["remote"]?.boolValue == true ? p["id"]?.uint64Value : nil
        }
    }

    /// Adds a remote publisher for `feed` on an edge, listening on `iface` (an address of
    /// the edge the origin can reach; nil: every address, and the caller knows the host).
    public static func addRemotePublisher(room: UInt64, feed: CascadeFeed, iface: String?,
                                          on handle: JanusHandle) async throws(JanusError) -> (edgeFeed: UInt64, ip: String?, port: Int, rtcpPort: Int) {
        var body: [String: JSONValue] = ["request": "add_remote_publisher", "room": .number(Double(room)),
                                         "display": .string(feed.display), "streams": .array(feed.streams)]
        if let iface { body["iface"] = .string(iface) }
        let reply = try await handle.request(body)
        guard reply["videoroom"]?.stringValue == "success", let id = reply["id"]?.uint64Value,
              let port = reply["port"]?.intValue, let rtcp = reply["rtcp_port"]?.intValue else {
            throw .unexpected(request: "add_remote_publisher", reply: "\(reply)")
        }
        return (id, reply["ip"]?.stringValue, port, rtcp)
    }

    public static func removeRemotePublisher(room: UInt64, id: UInt64, on handle: JanusHandle) async throws(JanusError) {
        _ = try await handle.request(["request": "remove_remote_publisher", "room": .number(Double(room)), "id": .number(Double(id))])
    }

    /// Starts forwarding a local feed to an edge's remote publisher.
    public static func publishRemotely(room: UInt64, feed: UInt64, remoteId: String, target: RelayTarget,
                                       on handle: JanusHandle) async throws(JanusError) {
        _ = try await handle.request(["request": "publish_remotely", "room": .number(Double(room)), "publisher_id": .number(Double(feed)),
                                      "remote_id": .string(remoteId), "host": .string(target.host),
                                      "port": .number(Double(target.port)), "rtcp_port": .number(Double(target.rtcpPort))])
    }

    public static func unpublishRemotely(room: UInt64, feed: UInt64, remoteId: String, on handle: JanusHandle) async throws(JanusError) {
        _ = try await handle.request(["request": "unpublish_remotely", "room": .number(Double(room)), "publisher_id": .number(Double(feed)),
                                      "remote_id": .string(remoteId)])
    }
}
