import Logging
import SFU
import Synchronization

/// Where the subscriber takes its media from when it comes through an SFU.
public struct SubscriberSFUConfig: Sendable {
    /// Janus's WebSocket API (`ws://HOST:8188/`).
    public var url: String
    /// The VideoRoom room the publisher publishes in.
    public var room: UInt64
    /// How long to wait for the room's publisher to appear.
    public var feedTimeout: Duration = .seconds(15)
    public init(url: String, room: UInt64) { self.url = url; self.room = room }
}

/// One subscription to the room's publisher in Janus: Janus offers (video, the voice and
/// the publisher's data channel), our webrtcbin answers. The session logic stays with
/// `SubscriberSession`: this link only stands where the publisher would on signaling for
/// the offer, the answer and our candidates; control still goes over signaling.
final class SubscriberSFULink: Sendable {
    let config: SubscriberSFUConfig
    private let logger: Logger
    private let state = Mutex<(client: JanusClient?, handle: JanusHandle?)>((nil, nil))

    init(config: SubscriberSFUConfig, logger: Logger) {
        self.config = config
        self.logger = logger
    }

    /// Connects, waits for the room's publisher and subscribes: Janus's offer, and the
    /// publisher's feed id.
    func subscribe() async throws(JanusError) -> (offer: String, feed: UInt64) {
        close()
        let client = try await JanusClient.connect(url: config.url, logger: logger)
        state.withLock { $0.client = client }
        let handle = try await client.attach(plugin: JanusVideoRoom.plugin)
        state.withLock { $0.handle = handle }
        let deadline = ContinuousClock.now + config.feedTimeout
        var feed: UInt64?
        while feed == nil {
            // A room missing now may be made soon: by its publisher, or on an edge of a
            // cascade by posecast-cascade once it has the feed to relay (an edge that just
            // restarted). Only one still missing at the deadline is the room gone.
            do throws(JanusError) {
                feed = try await JanusVideoRoom.publishers(room: config.room, on: handle).first?.id
            } catch .refused(let request, JanusError.noSuchRoom, let reason) {
                guard ContinuousClock.now < deadline else { throw .refused(request: request, code: JanusError.noSuchRoom, reason: reason) }
            }
            if feed == nil {
                guard ContinuousClock.now < deadline else {
                    throw .unexpected(request: "listparticipants", reply: "no publisher in room \(config.room) within \(config.feedTimeout)")
                }
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        let offer = try await JanusVideoRoom.subscribe(room: config.room, feed: feed!, on: handle)
        return (offer, feed!)
    }

    /// Our answer: Janus starts sending.
    func start(answer sdp: String) async throws(JanusError) {
        guard let handle = state.withLock({ $0.handle }) else { throw .closed }
        try await JanusVideoRoom.start(answer: sdp, on: handle)
    }

    /// A local candidate (nil: gathering done).
    func trickle(_ candidate: (line: String, mlineIndex: UInt32)?) {
        state.withLock { $0.handle }?.trickle(candidate)
    }

    /// Janus's events for the subscription (`hangup`, `webrtcup` …), when subscribed.
    var events: AsyncStream<JanusReply>? { state.withLock { $0.handle }?.events }

    /// Leaves Janus (destroys the session).
    func close() {
        let client = state.withLock { s in defer { s = (nil, nil) }; return s.client }
        client?.close()
    }
}
