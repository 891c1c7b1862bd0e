import Logging
import PoseCastKit
import PoseMedia
import RTCSession
import SFU
import Signaling

/// Where and how the publisher publishes through an SFU.
public struct PublisherSFUConfig: Sendable {
    /// Janus's WebSocket API (`ws://HOST:8188/`).
    public var url: String
    /// The VideoRoom room: made with our codec when it does not exist.
    public var room: UInt64
    public var display = "posecast-publisher"
    /// Pause before publishing again after Janus is lost.
    public var retryDelay: Duration = .seconds(2)
    public init(url: String, room: UInt64) { self.url = url; self.room = room }

    /// `janus:ws://HOST:PORT/` (the `--sfu` value): the WebSocket URL.
    public static func janusURL(_ value: String) -> String? {
        guard value.hasPrefix("janus:") else { return nil }
        let url = String(value.dropFirst("janus:".count))
        return url.hasPrefix("ws://") || url.hasPrefix("wss://") ? url : nil
    }
}

public enum PublisherSFUEvent: Sendable {
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

    /// Publishes, and again after every loss, until the task is cancelled.
    public func run() async {
        while !Task.isCancelled {
            let reason = await publishOnce()
            if Task.isCancelled { return }
            onEvent(.lost(reason: reason, retryIn: config.retryDelay))
            try? await Task.sleep(for: config.retryDelay)
        }
    }

    /// One publication: returns why it ended (or why it could not start).
    private func publishOnce() async -> String {
        let media = node.media
        let client: JanusClient
        do throws(JanusError) { client = try await JanusClient.connect(url: config.url, logger: logger) } catch { return "\(error)" }
        defer { client.close() }
        let handle: JanusHandle
        let feed: UInt64
        do throws(JanusError) {
            handle = try await client.attach(plugin: JanusVideoRoom.plugin)
            try await JanusVideoRoom.ensure(.init(room: config.room, videoCodec: media.config.codec.encodingName.lowercased()), on: handle)
            feed = try await JanusVideoRoom.joinAsPublisher(room: config.room, display: config.display, on: handle)
        } catch {
            return "\(error)"
        }
        let transport = media.config.codec.inBandPoseTransport
        let peer: WebRTCPeer
        do throws(RTCError) {
            peer = try await media.addPeer(name: "sfu", poseTransport: transport, mayTalk: false)
        } catch {
            return "\(error)"
        }
        defer { node.detachBroadcast(peer); media.removePeer(peer) }
        // Watchers and negotiation in one task group: cancelling `run` ends the streams
        // they read, so the group (and the publication) ends with it.
        return await withTaskGroup(of: String.self) { [node, onEvent, config] group in
            // The peer's events: candidates to Janus, the DTLS check, the data channel.
            group.addTask {
                // The annotation list goes once the channel is open and Janus's certificate checked.
                var (verified, open) = (false, false)
                for await event in peer.events {
                    switch event {
                    case .localCandidate(let c):
                        handle.trickle((c.candidate, c.mlineIndex))
                    case .iceGatheringState(.complete):
                        handle.trickle(nil)
                    case .connectionState(.connected):
                        let check = await peer.verifyRemoteFingerprintWhenReady()
                        guard check.isVerified else { return "Janus's DTLS certificate does not match its answer (\(check))" }
                        onEvent(.connected)
                        verified = true
                        if open { node.broadcastChannelOpened(peer) }
                    case .dataChannelOpen("control"):
                        open = true
                        if verified { node.broadcastChannelOpened(peer) }
                    case .connectionState(.failed), .connectionState(.closed):
                        return "the connection to Janus \(event)"
                    default:
                        break
                    }
                }
                return Task.isCancelled ? "stopping" : "the connection to Janus ended"
            }
            // Until Janus hangs up or the session goes.
            group.addTask {
                for await event in handle.events where event.verb == "hangup" || event.verb == "detached" {
                    return "Janus ended our publication (\(event.verb)\(event.reason.map { ": \($0)" } ?? ""))"
                }
                return Task.isCancelled ? "stopping" : "the connection to Janus closed"
            }
            if let failure = await negotiate(peer: peer, handle: handle, transport: transport) {
                group.cancelAll()
                return failure
            }
            onEvent(.publishing(room: config.room, feed: feed, poseTransport: transport))
            let first = await group.next() ?? "ended"
            group.cancelAll()
            return first
        }
    }

    /// The data channel, our offer (with its SSRC) to Janus and Janus's answer: nil, or what failed.
    private func negotiate(peer: WebRTCPeer, handle: JanusHandle, transport: PoseTransport) async -> String? {
        let offer: SessionDescription
        do throws(RTCError) {
            let channel = try peer.createDataChannel("control")
            node.attachBroadcast(channel, peer: peer)
            var made = try await peer.createOffer().addingFeedback("goog-remb")
            // Janus's feedback on our uplink to it, where it keeps the extension (docs/SCALING.md).
            if node.media.config.adaptBitrate && node.media.config.transportWideCC { made = made.addingTransportWideCC() }
            // Janus routes a publisher's RTP by the SSRCs in its offer.
            if let ssrc = node.media.sentSSRC(transport) { made = made.addingSSRC(ssrc, cname: "posecast") }
            offer = made
            try await peer.setLocalDescription(offer)
        } catch {
            return "\(error)"
        }
        let answer: String
        do throws(JanusError) { answer = try await JanusVideoRoom.publish(offer: offer.sdp, on: handle) } catch { return "\(error)" }
        do throws(RTCError) {
            try await peer.setRemoteDescription(SessionDescription(kind: .answer, sdp: answer))
        } catch {
            return "\(error)"
        }
        return nil
    }
}
