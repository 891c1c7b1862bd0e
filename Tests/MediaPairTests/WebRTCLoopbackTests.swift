import PoseCastKit
import PoseMedia
import Publisher
import Subscriber
import RTCSession
import Synchronization
import TestSupport
import Testing

/// Two real webrtcbins in one process (publisher → subscriber over ICE/DTLS/SRTP on
/// loopback), 640×480@30: every decoded frame must carry exactly its own pose.
@Suite("webrtcbin loopback", .serialized)
struct WebRTCLoopbackTests {
    static let framesRequired = 300

    @Test("poses arrive bit for bit, matched by frame id, and the control channel works both ways",
          arguments: VideoCodec.allCases)
    func posesSurviveWebRTC(codec: VideoCodec) async throws {
        let generator = PoseGenerator()
        let sent = Mutex<[UInt32: FramePose]>([:])
        let received = Mutex<[DecodedFrame]>([])

        var pubConfig = PublisherMediaConfig()
        pubConfig.codec = codec
        pubConfig.stampFrameIDs = true
        pubConfig.maxApplicationBytes = PoseWireFormat.maxApplicationBytes
        let publisher = try PublisherMedia(config: pubConfig, poseSource: { id, t in
            generator.pose(frameID: id, captureTimeNanos: t)
        }, onPoseAttached: { pose in sent.withLock { $0[pose.frameID] = pose } })

        var subConfig = SubscriberMediaConfig()
        subConfig.readFrameStamps = true
        let subscriber = try SubscriberMedia(config: subConfig) { frame in
            received.withLock { $0.append(frame) }
        }
        try await publisher.start()
        try subscriber.start()
        let peer = try await publisher.addPeer(name: "expert1")
        let link = LoopbackLink(publisher: peer, subscriber: subscriber)
        defer { link.cancel(); subscriber.stop(); publisher.removePeer(peer); publisher.stop() }

        let publisherChannel = try await link.negotiate()

        // Control channel, both directions, text and binary.
        let subscriberChannel = try await withTimeout(15, "the control channel to open on both sides") {
            var remote: DataChannel?
            var remoteOpen = false
            for await event in link.subscriberEvents {
                if case .dataChannel(let channel) = event { remote = channel; if channel.readyState == .open { remoteOpen = true } }
                if case .dataChannelOpen = event { remoteOpen = true }
                if case .pipelineError(let error) = event { throw error }
                if remoteOpen, let remote { return remote }
            }
            throw RTCError.closed("subscriber events")
        }
        try await waitUntil(10, "publisher channel open") { publisherChannel.readyState == .open }
        try publisherChannel.send("{\"type\":\"hello\",\"from\":\"publisher\"}")
        try subscriberChannel.send("{\"type\":\"hello\",\"from\":\"expert\"}")
        try subscriberChannel.send([0, 1, 2, 255])
        let atSubscriber = try await withTimeout(10, "publisher → expert message") {
            for await event in link.subscriberEvents {
                if case .dataChannelMessage(_, let message) = event { return message }
            }
            throw RTCError.closed("subscriber events")
        }
        let atPublisher = try await withTimeout(10, "expert → publisher messages") {
            var got: [DataChannelMessage] = []
            for await event in link.publisherEvents {
                if case .dataChannelMessage(_, let message) = event { got.append(message) }
                if got.count == 2 { return got }
            }
            throw RTCError.closed("publisher events")
        }
        #expect(atSubscriber == .text("{\"type\":\"hello\",\"from\":\"publisher\"}"))
        #expect(atPublisher == [.text("{\"type\":\"hello\",\"from\":\"expert\"}"), .binary([0, 1, 2, 255])])

        try await waitUntil(60, "\(Self.framesRequired) decoded frames", progress: {
            "\(received.withLock { $0.count }) decoded, \(sent.withLock { $0.count }) tagged, "
                + "\(publisher.packetsWithPose) packets with pose, subscriber \(subscriber.stats)"
        }) {
            received.withLock { $0.count } >= Self.framesRequired
        }
        let frames = received.withLock { $0 }
        let sentPoses = sent.withLock { $0 }
        var mismatches = 0, withoutPose = 0, stampMismatches = 0
        for frame in frames {
            guard let pose = frame.pose else { withoutPose += 1; continue }
            if frame.stampedFrameID != pose.frameID { stampMismatches += 1 }
            if sentPoses[pose.frameID].map({ pose.isBitwiseIdentical(to: $0) }) != true { mismatches += 1 }
        }
        let stats = try await peer.stats()
        let outbound = stats.entries(ofType: "outbound-rtp").first
        print("[\(codec)] frames decoded: \(frames.count), without pose: \(withoutPose), pose mismatches: \(mismatches), "
              + "picture/pose id mismatches: \(stampMismatches), rejected: \(subscriber.rejections.total), "
              + "packets with pose: \(publisher.packetsWithPose), packets sent: \(outbound?["packets-sent"]?.number ?? -1)")
        #expect(frames.count >= Self.framesRequired)
        #expect(withoutPose == 0)
        #expect(mismatches == 0)
        #expect(stampMismatches == 0)
        #expect(subscriber.rejections.total == 0)
        #expect(publisher.packetsWithPose >= UInt64(frames.count))
        #expect(Set(frames.compactMap { $0.pose?.frameID }).count == frames.count, "each frame id decoded once")
    }
}
