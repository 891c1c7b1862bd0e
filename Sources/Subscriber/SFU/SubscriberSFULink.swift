import Logging
import SFU
import Synchronization

/// Where the subscriber takes its media from when it comes through an SFU.
public struct SubscriberSFUConfig: Sendable {
    /// Janus's WebSocket API (`ws://HOST:8188/`): one, or several serving the same room
    /// (a cascade's edges). The subscriber starts at one picked at random, so that
    /// subscribers spread over them, and moves to the next when one cannot be reached or
    /// does not have the room's publisher.
    public var urls: [String]
    /// The VideoRoom room the publisher publishes in.
    public var room: UInt64
    /// How long to wait for the room's publisher to appear.
    public var feedTimeout: Duration = .seconds(15)
    public init(urls: [String], room: UInt64) { self.urls = urls; self.room = room }
    public init(url: String, room: UInt64) { self.init(urls: [url], room: room) }
}

/// One subscription to the room's publisher in Janus: Janus offers (video, the voice and
/// the publisher's data channel), our webrtcbin answers. The session logic stays with
/// `SubscriberSession`: this link only stands where the publisher would on signaling for
/// the offer, the answer and our candidates; control still goes over signaling.
final class SubscriberSFULink: Sendable {
    let config: SubscriberSFUConfig
    private let logger: Logger
    private let state: Mutex<(client: JanusClient?, handle: JanusHandle?, server: Int)>

    init(config: SubscriberSFUConfig, logger: Logger) {
        self.config = config
        self.logger = logger
        state = Mutex((nil, nil, Int.random(in: 0..<max(1, config.urls.count))))
    }

    /// Connects, waits for the room's publisher and subscribes: Janus's offer, the
    /// publisher's feed id and the server's URL. A server that cannot be reached is
    /// passed over for the next at once (each tried once); one that connects but fails
    /// later leaves the next call to start at the next server.
    func subscribe() async throws(JanusError) -> (offer: String, feed: UInt64, server: String) {
        close()
        let first = state.withLock { $0.server }
        var client: JanusClient?
        var index = first
        var failure: JanusError = .closed
        for step in config.urls.indices {
            index = (first + step) % config.urls.count
            do throws(JanusError) {
                client = try await JanusClient.connect(url: config.urls[index], logger: logger)
                break
            } catch {
                logger.info("Janus unreachable, trying the next", metadata: ["url": "\(config.urls[index])", "error": "\(error)"])
                failure = error
            }
        }
        guard let client else { throw failure }
        state.withLock { $0.server = index; $0.client = client }
        do throws(JanusError) {
            let (offer, feed) = try await subscribe(on: client)
            return (offer, feed, config.urls[index])
        } catch {
            state.withLock { $0.server = (index + 1) % config.urls.count }
            throw error
        }
    }

    private func subscribe(on client: JanusClient) async throws(JanusError) -> (offer: String, feed: UInt64) {
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

    /// The Janus server of the current subscription.
    var server: String? { state.withLock { $0.client?.url } }

    /// Janus's events for the subscription (`hangup`, `webrtcup` …), when subscribed.
    var events: AsyncStream<JanusReply>? { state.withLock { $0.handle }?.events }

    /// Leaves Janus (destroys the session).
    func close() {
        let client = state.withLock { s in defer { s.client = nil; s.handle = nil }; return s.client }
        client?.close()
    }
}
