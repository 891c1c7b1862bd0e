import Logging
import PoseCastKit
import PoseMedia
import RTCSession
import SFU
import Signaling
import Synchronization

/// Where and how the publisher publishes through an SFU.
public struct PublisherSFUConfig: Sendable {
    /// Janus's WebSocket API (`ws://HOST:8188/`).
    public var url: String
    /// The VideoRoom room: made with our codec when it does not exist.
    public var room: UInt64
    public var display = "posecast-publisher"
    /// Pause before publishing again after Janus is lost or refuses us; it doubles with
    /// each failure in a row, up to `maxRetryDelay`, until frames flow again.
    public var retryDelay: Duration = .seconds(2)
    public var maxRetryDelay: Duration = .seconds(10)
    public init(url: String, room: UInt64) { self.url = url; self.room = room }

    /// `janus:ws://HOST:PORT/` (the `--sfu` value): the WebSocket URL.
    public static func janusURL(_ value: String) -> String? {
        guard value.hasPrefix("janus:") else { return nil }
        let url = String(value.dropFirst("janus:".count))
        return url.hasPrefix("ws://") || url.hasPrefix("wss://") ? url : nil
    }
}

public enum PublisherSFUEvent: Sendable, Equatable {
    /// Published: Janus took our offer (`feed` is our id in the room).
    case publishing(room: UInt64, feed: UInt64, poseTransport: PoseTransport)
    /// DTLS to Janus is up and its certificate matches its answer: frames flow.
    case connected
    /// Janus or the connection to it is gone: we publish again after `retryIn`.
    case lost(reason: String, retryIn: Duration)
}

/// The publisher's one stream into a Janus VideoRoom: a branch like a subscriber's,
/// whose frames carry their pose inside (H.264: SEI; VP8: the trailer), since Janus
/// forwards the payload but no header extension of ours; and its data channel, which
/// Janus relays to every subscriber (the annotation list and the scene status, from
/// `PublisherNode`'s broadcasts). Control requests do not come back this way (the
/// VideoRoom relays data only from publisher to subscribers): experts send them over our
/// signaling server (docs/SCALING.md).
///
/// When to publish, try again, or open the broadcasts is `SFUPublication`'s decision;
/// this link carries out its effects and feeds it what the SFU and the peer say. What is
/// said to the SFU, and how, is each try's `PublicationSignaller`'s (Janus's VideoRoom). Every
/// task it starts (one per try, one timer) is its own and ends before `run` returns.
public final class PublisherSFULink: Sendable {
    public let config: PublisherSFUConfig
    private let node: PublisherNode
    private let logger: Logger
    private let onEvent: @Sendable (PublisherSFUEvent) -> Void

    public init(config: PublisherSFUConfig, node: PublisherNode, logger: Logger,
                onEvent: @escaping @Sendable (PublisherSFUEvent) -> Void) {
        self.config = config
        self.node = node
        self.logger = logger
        self.onEvent = onEvent
    }

    /// A new try's signaller: Janus's VideoRoom at `config.url`, the room made with our codec.
    private func makeSignaller() -> any PublicationSignaller {
        JanusPublicationSignaller(
            url: config.url,
            room: .init(room: config.room, videoCodec: node.media.config.codec.encodingName.lowercased()),
            display: config.display, logger: logger)
    }

    /// Publishes, and again after every loss, until the calling task is cancelled; then
    /// withdraws the publication and returns once its peer has left the pipeline.
    public func run() async {
        var machine = SFUPublication(room: config.room, poseTransport: node.media.config.codec.inBandPoseTransport,
                                     backoff: RetryBackoff(initial: config.retryDelay, maximum: config.maxRetryDelay))
        let (events, inlet) = AsyncStream.makeStream(of: SFUPublication.Event.self)
        var tries: [Int: PublicationTry] = [:]
        let wakes = WakeTimer()
        wakes.arm { inlet.yield(.tick) }
        func carry(_ effects: [SFUPublication.Effect]) {
            for effect in effects {
                switch effect {
                case .publish(let attempt):
                    tries[attempt] = PublicationTry(attempt: attempt, link: self, report: { inlet.yield($0) })
                case .withdraw(let attempt):
                    tries.removeValue(forKey: attempt)?.withdraw()
                case .openBroadcast(let attempt):
                    tries[attempt]?.openBroadcast()
                case .emit(let event):
                    onEvent(event)
                case .wake(let at):
                    wakes.schedule(at: at)
                }
            }
        }
        inlet.yield(.start)
        await withTaskCancellationHandler {
            for await event in events {
                carry(machine.handle(event, now: MonotonicClock.nanos()))
            }
        } onCancel: {
            inlet.finish()
        }
        carry(machine.handle(.stop, now: MonotonicClock.nanos()))
        wakes.stop()
        for (_, remaining) in tries { remaining.withdraw() }
        for (_, remaining) in tries { await remaining.finished() }
    }

    /// One try: open a place in the SFU, add a peer, offer, then report what the peer and
    /// the SFU say until the try ends or is withdrawn; its peer and its signaller go when
    /// it returns.
    fileprivate func publish(attempt: Int, holder: PublicationTry,
                             report: @escaping @Sendable (SFUPublication.Event) -> Void) async {
        let media = node.media
        let signaller = makeSignaller()
        defer { signaller.close() }
        let feed: UInt64
        do throws(PublicationFailure) { feed = try await signaller.open() } catch {
            return report(error.event(attempt: attempt))
        }
        let transport = media.config.codec.inBandPoseTransport
        let peer: WebRTCPeer
        do throws(RTCError) {
            peer = try await media.addPeer(name: "sfu-\(attempt)", poseTransport: transport, mayTalk: false, declaresSSRC: true)
        } catch {
            return report(.lost(attempt: attempt, reason: "\(error)"))
        }
        holder.adopt(peer)
        defer { node.detachBroadcast(peer); media.removePeer(peer) }
        // Watchers and negotiation in one task group: withdrawing the try cancels it, which
        // ends the streams they read, so the group (and the try) ends with it.
        let end: SFUPublication.Event? = await withTaskGroup(of: SFUPublication.Event?.self) { group in
            group.addTask {
                for await event in peer.events {
                    switch event {
                    case .localCandidate(let c):
                        signaller.trickle(c)
                    case .iceGatheringState(.complete):
                        signaller.trickle(nil)
                    case .connectionState(.connected):
                        let check = await peer.verifyRemoteFingerprintWhenReady()
                        if !check.isVerified { return .connected(attempt: attempt, mismatch: "\(check)") }
                        report(.connected(attempt: attempt, mismatch: nil))
                    case .dataChannelOpen("control"):
                        report(.channelOpen(attempt: attempt))
                    case .connectionState(.failed), .connectionState(.closed):
                        return .lost(attempt: attempt, reason: "the connection to the SFU \(event)")
                    default:
                        break
                    }
                }
                return Task.isCancelled ? nil : .lost(attempt: attempt, reason: "the connection to the SFU ended")
            }
            group.addTask { await signaller.ended()?.event(attempt: attempt) }
            if let failure = await negotiate(peer: peer, signaller: signaller, attempt: attempt) {
                group.cancelAll()
                return failure
            }
            report(.published(attempt: attempt, feed: feed))
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let end, !Task.isCancelled { report(end) }
    }

    /// The data channel, our offer (with its SSRC) to the SFU and its answer: nil, or what failed.
    private func negotiate(peer: WebRTCPeer, signaller: any PublicationSignaller, attempt: Int) async -> SFUPublication.Event? {
        let offer: SessionDescription
        do throws(RTCError) {
            let channel = try peer.createDataChannel("control")
            node.attachBroadcast(channel, peer: peer)
            var made = try await peer.createOffer().addingFeedback("goog-remb")
            // The SFU's feedback on our uplink to it, where it keeps the extension (docs/SCALING.md).
            if node.media.config.adaptBitrate && node.media.config.transportWideCC { made = made.addingTransportWideCC() }
            // Janus routes a publisher's RTP by the SSRCs in its offer: webrtcbin wrote the
            // media's and its retransmissions' (`ssrc-group:FID`) from the preferences
            // (`declaresSSRC`); a section left without any gets the media's here.
            if let ssrc = node.media.sentSSRC(node.media.config.codec.inBandPoseTransport) {
                made = made.addingSSRC(ssrc, cname: "posecast")
            }
            offer = made
            try await peer.setLocalDescription(offer)
        } catch {
            return .lost(attempt: attempt, reason: "\(error)")
        }
        let answer: String
        do throws(PublicationFailure) { answer = try await signaller.publish(offer: offer.sdp) } catch {
            return error.event(attempt: attempt)
        }
        do throws(RTCError) {
            try await peer.setRemoteDescription(SessionDescription(kind: .answer, sdp: answer))
        } catch {
            return .refused(attempt: attempt, reason: "the SFU's answer: \(error)")
        }
        return nil
    }

    fileprivate func openBroadcast(_ peer: WebRTCPeer) { node.broadcastChannelOpened(peer) }
}

/// One try's task and, once added, its peer: `withdraw` cancels the task, whose defers
/// take the peer out of the pipeline and close the Janus session.
private final class PublicationTry: Sendable {
    let attempt: Int
    private let state = Mutex<(task: Task<Void, Never>?, peer: WebRTCPeer?)>((nil, nil))
    private weak let link: PublisherSFULink?

    init(attempt: Int, link: PublisherSFULink, report: @escaping @Sendable (SFUPublication.Event) -> Void) {
        self.attempt = attempt
        self.link = link
        let task = Task { [weak self] in
            guard let self else { return }
            await link.publish(attempt: attempt, holder: self, report: report)
        }
        state.withLock { $0.task = task }
    }

    fileprivate func adopt(_ peer: WebRTCPeer) { state.withLock { $0.peer = peer } }

    func openBroadcast() {
        guard let peer = state.withLock({ $0.peer }) else { return }
        link?.openBroadcast(peer)
    }

    func withdraw() { state.withLock { $0.task }?.cancel() }

    func finished() async { await state.withLock { $0.task }?.value }
}
