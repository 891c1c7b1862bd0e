import RTCSession
import PoseMedia

/// Connects a publisher peer and a subscriber in one process, with no signaling
/// server: SDP and ICE candidates are handed across directly. Every other event of
/// each side is passed on to `publisherEvents` / `subscriberEvents`.
public final class LoopbackLink: Sendable {
    public let publisherEvents: AsyncStream<RTCEvent>
    public let subscriberEvents: AsyncStream<RTCEvent>
    private let publisher: WebRTCPeer
    private let subscriber: SubscriberMedia
    private let forwarders: [Task<Void, Never>]

    public init(publisher: WebRTCPeer, subscriber: SubscriberMedia) {
        self.publisher = publisher
        self.subscriber = subscriber
        let (pubOut, pubSink) = AsyncStream.makeStream(of: RTCEvent.self)
        let (subOut, subSink) = AsyncStream.makeStream(of: RTCEvent.self)
        publisherEvents = pubOut
        subscriberEvents = subOut
        func forward(_ from: WebRTCPeer, to remote: WebRTCPeer,
                     _ sink: AsyncStream<RTCEvent>.Continuation) -> Task<Void, Never> {
            Task {
                for await event in from.events {
                    if case .localCandidate(let candidate) = event {
                        do throws(RTCError) { try remote.addICECandidate(candidate) } catch { sink.yield(.pipelineError(error)) }
                    } else {
                        sink.yield(event)
                    }
                }
                sink.finish()
            }
        }
        forwarders = [forward(publisher, to: subscriber.peer, pubSink), forward(subscriber.peer, to: publisher, subSink)]
    }

    /// The publisher offers (after opening `controlLabel`), the subscriber answers.
    /// Returns the publisher's end of the control channel.
    public func negotiate(controlLabel: String = "control") async throws(RTCError) -> DataChannel {
        let channel = try publisher.createDataChannel(controlLabel)
        let offer = try await publisher.createOffer()
        try await publisher.setLocalDescription(offer)
        let answer = try await subscriber.answer(offer)
        try await publisher.setRemoteDescription(answer)
        return channel
    }

    public func cancel() { for task in forwarders { task.cancel() } }
}
