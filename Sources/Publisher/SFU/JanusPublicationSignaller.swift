import Logging
import RTCModel
import SFU
import Synchronization

/// One try's publication through Janus's VideoRoom: a Janus session of its own, the room
/// made with our codec when it does not exist, joined as a publisher; our offer with
/// `publish`, our candidates trickled on the same handle, and that handle's events read
/// for the end. The try's task calls `open`, the rest and `close` in that order.
final class JanusPublicationSignaller: PublicationSignaller {
    private let url: String
    private let room: JanusVideoRoom.RoomSpec
    private let display: String
    private let logger: Logger
    /// The Janus session and our VideoRoom handle, once `open` made them.
    private let janus = Mutex<(client: JanusClient?, handle: JanusHandle?)>((nil, nil))

    init(url: String, room: JanusVideoRoom.RoomSpec, display: String, logger: Logger) {
        self.url = url
        self.room = room
        self.display = display
        self.logger = logger
    }

    func open() async throws(PublicationFailure) -> UInt64 {
        do throws(JanusError) {
            let client = try await JanusClient.connect(url: url, logger: logger)
            janus.withLock { $0.client = client }
            let handle = try await client.attach(plugin: JanusVideoRoom.plugin)
            janus.withLock { $0.handle = handle }
            try await JanusVideoRoom.ensure(room, on: handle)
            return try await JanusVideoRoom.joinAsPublisher(room: room.room, display: display, on: handle)
        } catch {
            throw Self.failure(error)
        }
    }

    func publish(offer sdp: String) async throws(PublicationFailure) -> String {
        guard let handle = janus.withLock({ $0.handle }) else { throw .lost("no Janus session to publish in") }
        do throws(JanusError) { return try await JanusVideoRoom.publish(offer: sdp, on: handle) } catch {
            throw Self.failure(error)
        }
    }

    func trickle(_ candidate: ICECandidate?) {
        janus.withLock { $0.handle }?.trickle(candidate.map { ($0.candidate, $0.mlineIndex) })
    }

    func ended() async -> PublicationEnd? {
        guard let handle = janus.withLock({ $0.handle }) else { return nil }
        // The stream ends with the session, or at once when the calling task is cancelled.
        for await event in handle.events {
            if event.verb == "hangup" || event.verb == "detached" {
                return .hungUp("\(event.verb)\(event.reason.map { ": \($0)" } ?? "")")
            }
            if event.pluginData?["videoroom"]?.stringValue == "destroyed" { return .roomDestroyed }
        }
        return Task.isCancelled ? nil : .lost("the connection to Janus closed")
    }

    func close() { janus.withLock { $0.client }?.close() }

    /// A Janus error as a refusal, or a lost connection.
    private static func failure(_ error: JanusError) -> PublicationFailure {
        error.isConnectionLost ? .lost("\(error)") : .refused("\(error)")
    }
}
