import RTCSession
import PoseMedia

/// Connects a publisher peer and a subscriber in one process, with no signaling
/// server: SDP and ICE candidates are handed across directly, and each side checks the
/// other's DTLS certificate once connected (`verifyRemoteFingerprint`). Every other event of
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
                    } else if case .connectionState(.connected) = event {
                        // Each side checks the other's DTLS certificate, as the nodes do;
                        // the publisher's branch opens only for a verified peer.
                        let check = await from.verifyRemoteFingerprintWhenReady()
                        if !check.isVerified {
                            sink.yield(.pipelineError(.negotiation(peer: from.name, reason: "DTLS certificate: \(check)")))
                        }
                        sink.yield(event)
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
    /// Returns the publisher's end of the control channel. `alterAnswer` rewrites the
    /// answer on its way to the publisher, as someone on the signaling path could.
    public func negotiate(controlLabel: String = "control",
                          alterAnswer: (@Sendable (String) -> String)? = nil) async throws(RTCError) -> DataChannel {
        let channel = try publisher.createDataChannel(controlLabel)
        let offer = try await publisher.createOffer()
        try await publisher.setLocalDescription(offer)
        var answer = try await subscriber.answer(offer)
        if let alterAnswer { answer.sdp = alterAnswer(answer.sdp) }
        try await publisher.setRemoteDescription(answer)
        return channel
    }

    public func cancel() { for task in forwarders { task.cancel() } }
}
