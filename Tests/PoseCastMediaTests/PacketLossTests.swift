import Foundation
import PoseCastKit
import PoseCastMedia
import RTCSession
import Synchronization
import TestSupport
import Testing

/// One publisher → subscriber pair over real webrtcbins, with `netsim` on the
/// publisher's outgoing RTP (after the retransmission store): loss for a while, then
/// none, with every decoded frame checked against the pose it was sent with and the
/// frame id painted into its picture.
final class LossHarness: Sendable {
    static let fps = 30

    let publisher: PublisherMedia
    let subscriber: SubscriberMedia
    let peer: WebRTCPeer
    let link: LoopbackLink
    let offer: SessionDescription
    let answer: SessionDescription
    private let log = FrameLog()

    /// Connected and decoding (at least a second of frames) before it returns.
    init(codec: VideoCodec = .vp8, jitterLatencyMs: Int = 200) async throws {
        let generator = PoseGenerator()
        let log = self.log
        var pubConfig = PublisherMediaConfig()
        pubConfig.codec = codec
        pubConfig.fps = Self.fps
        // Noise at 320×240 costs about 9.6 kB a frame (8 RTP packets, 2.3 Mbit/s), the
        // packet rate of a 2 Mbit/s camera stream, so a loss hits most frames; a plain
        // test pattern would fit a frame in one packet, and 640×480 noise needs 8 Mbit/s.
        pubConfig.source = .test(pattern: "snow")
        pubConfig.width = 320
        pubConfig.height = 240
        pubConfig.stampFrameIDs = true
        pubConfig.rtc.linkConditions = .perfect
        publisher = try PublisherMedia(config: pubConfig, poseSource: { id, t in
            generator.pose(frameID: id, captureTimeNanos: t)
        }, onPoseAttached: { pose in log.sent.withLock { $0[pose.frameID] = pose } })
        var subConfig = SubscriberMediaConfig()
        subConfig.readFrameStamps = true
        subConfig.codecs = [codec]
        subConfig.rtc.jitterBufferLatencyMs = jitterLatencyMs
        subscriber = try SubscriberMedia(config: subConfig) { frame in log.received.withLock { $0.append(frame) } }
        try publisher.start()
        try subscriber.start()
        subscriber.waitUntilPlaying()
        peer = try await publisher.addPeer(name: "lossy")
        link = LoopbackLink(publisher: peer, subscriber: subscriber)
        let channel = try peer.createDataChannel("control")
        _ = channel
        offer = try await peer.createOffer()
        try await peer.setLocalDescription(offer)
        answer = try await subscriber.answer(offer)
        try await peer.setRemoteDescription(answer)
        try await waitUntil(30, "a second of decoded frames", progress: {
            "\(log.received.withLock { $0.count }) decoded"
        }) { log.received.withLock { $0.count } >= Self.fps }
    }

    func close() {
        link.cancel()
        subscriber.stop()
        publisher.removePeer(peer)
        publisher.stop()
    }

    /// The frames decoded so far and the poses sent.
    var frames: [DecodedFrame] { log.received.withLock { $0 } }
    func sentPose(_ id: UInt32) -> FramePose? { log.sent.withLock { $0[id] } }
    var sentIDs: [UInt32] { log.sent.withLock { Array($0.keys) } }

    /// `seconds` of `lossPercent` loss, then `recoverySeconds` of none.
    func run(lossPercent: Double, seconds: Double, recoverySeconds: Double = 2.5) async throws -> LossResult {
        let beforeStats = try await LossCounters(publisher: peer, subscriber: subscriber.peer)
        let firstFrame = frames.count
        let firstSent = (sentIDs.max() ?? 0) + 1
        let linkBefore = peer.link?.stats ?? LinkSimulatorStats()
        let start = WallClock.nowNanos()
        try publisher.setLinkConditions(LinkConditions(lossPercent: lossPercent))
        try await Task.sleep(for: .seconds(seconds))
        try publisher.setLinkConditions(.perfect)
        let stop = WallClock.nowNanos()
        let lastSent = sentIDs.max() ?? 0
        let linkAfter = peer.link?.stats ?? LinkSimulatorStats()
        try await Task.sleep(for: .seconds(recoverySeconds))
        let afterStats = try await LossCounters(publisher: peer, subscriber: subscriber.peer)
        let all = Array(frames[firstFrame...])
        return LossResult(lossPercent: lossPercent, start: start, stop: stop, frames: all,
                          sentDuringLoss: Int(lastSent &- firstSent &+ 1), firstSentID: firstSent, lastSentID: lastSent,
                          sentPose: { self.sentPose($0) },
                          packetsOffered: linkAfter.offeredTotal - linkBefore.offeredTotal,
                          packetsDropped: linkAfter.droppedTotal - linkBefore.droppedTotal,
                          counters: afterStats - beforeStats)
    }
}

/// The poses sent (by frame id) and the frames decoded, filled from streaming threads.
final class FrameLog: Sendable {
    let sent = Mutex<[UInt32: FramePose]>([:])
    let received = Mutex<[DecodedFrame]>([])
}

/// NACK, retransmission and keyframe-request counters from both peers' `get-stats`.
struct LossCounters: Sendable, CustomStringConvertible {
    /// Sent by the subscriber / received by the publisher.
    var nacksSent = 0.0, nacksReceived = 0.0
    var plisSent = 0.0, plisReceived = 0.0, firsSent = 0.0
    /// Retransmitted packets the publisher sent and the subscriber's jitter buffer got.
    var rtxSent = 0.0, rtxRequests = 0.0, rtxReceived = 0.0
    var packetsLost = 0.0

    init(nacksSent: Double = 0, nacksReceived: Double = 0, plisSent: Double = 0, plisReceived: Double = 0,
         firsSent: Double = 0, rtxSent: Double = 0, rtxRequests: Double = 0, rtxReceived: Double = 0, packetsLost: Double = 0) {
        self.nacksSent = nacksSent; self.nacksReceived = nacksReceived; self.plisSent = plisSent
        self.plisReceived = plisReceived; self.firsSent = firsSent; self.rtxSent = rtxSent
        self.rtxRequests = rtxRequests; self.rtxReceived = rtxReceived; self.packetsLost = packetsLost
    }

    init(publisher: WebRTCPeer, subscriber: WebRTCPeer) async throws {
        let out = try await publisher.stats().entries(ofType: "outbound-rtp").first ?? [:]
        let inbound = try await subscriber.stats().entries(ofType: "inbound-rtp").first ?? [:]
        func n(_ e: [String: RTCStats.Value], _ k: String) -> Double { e[k]?.number ?? 0 }
        self.init(nacksSent: n(inbound, "nack-count"), nacksReceived: n(out, "nack-count"),
                  plisSent: n(inbound, "pli-count"), plisReceived: n(out, "pli-count"), firsSent: n(inbound, "fir-count"),
                  rtxSent: n(out, "retransmitted-packets-sent"), rtxRequests: n(out, "rtx-requests"),
                  rtxReceived: n(inbound, "retransmitted-packets-received"), packetsLost: n(inbound, "packets-lost"))
    }

    static func - (a: Self, b: Self) -> Self {
        Self(nacksSent: a.nacksSent - b.nacksSent, nacksReceived: a.nacksReceived - b.nacksReceived,
             plisSent: a.plisSent - b.plisSent, plisReceived: a.plisReceived - b.plisReceived, firsSent: a.firsSent - b.firsSent,
             rtxSent: a.rtxSent - b.rtxSent, rtxRequests: a.rtxRequests - b.rtxRequests,
             rtxReceived: a.rtxReceived - b.rtxReceived, packetsLost: a.packetsLost - b.packetsLost)
    }

    var description: String {
        "nack sent \(Int(nacksSent)) received \(Int(nacksReceived)), pli sent \(Int(plisSent)) received \(Int(plisReceived)), "
            + "rtx requests \(Int(rtxRequests)) sent \(Int(rtxSent)) received \(Int(rtxReceived)), lost \(Int(packetsLost))"
    }
}

/// What one loss episode did to the decoded frames.
struct LossResult: Sendable {
    var lossPercent: Double
    var start: UInt64, stop: UInt64
    var frames: [DecodedFrame]
    var sentDuringLoss: Int
    var firstSentID: UInt32, lastSentID: UInt32
    var wrongPoses = 0, withPose = 0, withoutPose = 0
    var lossFramesDecoded = 0
    var recoveryMs: Double?
    var latencyP50Ms = 0.0, latencyP95Ms = 0.0
    var packetsOffered: UInt64, packetsDropped: UInt64
    var counters: LossCounters

    init(lossPercent: Double, start: UInt64, stop: UInt64, frames: [DecodedFrame], sentDuringLoss: Int,
         firstSentID: UInt32, lastSentID: UInt32, sentPose: (UInt32) -> FramePose?,
         packetsOffered: UInt64, packetsDropped: UInt64, counters: LossCounters) {
        self.lossPercent = lossPercent; self.start = start; self.stop = stop; self.frames = frames
        self.sentDuringLoss = sentDuringLoss; self.firstSentID = firstSentID; self.lastSentID = lastSentID
        self.packetsOffered = packetsOffered; self.packetsDropped = packetsDropped; self.counters = counters
        var latencies: [Double] = []
        for frame in frames {
            guard let pose = frame.pose else { withoutPose += 1; continue }
            withPose += 1
            // Its own pose: bit for bit the one sent for that id, and the id painted in the picture.
            if frame.stampedFrameID != pose.frameID || sentPose(pose.frameID).map({ pose.isBitwiseIdentical(to: $0) }) != true {
                wrongPoses += 1
            }
            if (firstSentID...max(firstSentID, lastSentID)).contains(pose.frameID) { lossFramesDecoded += 1 }
            latencies.append(Double(frame.decodedAtNanos &- pose.captureTimeNanos) / 1e6)
        }
        latencies.sort()
        if !latencies.isEmpty {
            latencyP50Ms = latencies[latencies.count / 2]
            latencyP95Ms = latencies[min(latencies.count - 1, latencies.count * 95 / 100)]
        }
        recoveryMs = Self.recovery(after: stop, decodedAt: frames.map(\.decodedAtNanos).sorted(), fps: LossHarness.fps)
    }

    /// Milliseconds from `stop` to the start of the first 1 s window holding at least
    /// 90 % of the nominal frame rate (windows start at `stop` or at a decoded frame).
    static func recovery(after stop: UInt64, decodedAt times: [UInt64], fps: Int) -> Double? {
        let needed = Int((Double(fps) * 0.9).rounded(.up))
        let starts = [stop] + times.filter { $0 > stop }
        for start in starts {
            let inWindow = times.filter { $0 >= start && $0 < start + 1_000_000_000 }.count
            // Only whole windows (the run must go on for a second after `start`).
            guard let last = times.last, last >= start + 900_000_000 else { return nil }
            if inWindow >= needed { return Double(start - stop) / 1e6 }
        }
        return nil
    }

    var posePercent: Double { frames.isEmpty ? 0 : 100 * Double(withPose) / Double(frames.count) }
    /// Frames sent during the loss that never showed.
    var framesMissing: Int { max(0, sentDuringLoss - lossFramesDecoded) }
    var decodedFPSDuringLoss: Double { Double(lossFramesDecoded) / (Double(stop - start) / 1e9) }

    var summary: String {
        String(format: "%.0f%% loss: %d frames decoded (%d sent during loss, %d missing, %.1f fps), %d with pose (%.2f%%), "
               + "%d wrong, packets %llu offered %llu dropped, %@, recovery %@ ms, latency p50 %.1f p95 %.1f ms",
               lossPercent, frames.count, sentDuringLoss, framesMissing, decodedFPSDuringLoss, withPose, posePercent,
               wrongPoses, packetsOffered, packetsDropped, counters.description,
               recoveryMs.map { String(format: "%.0f", $0) } ?? "none", latencyP50Ms, latencyP95Ms)
    }

    /// One JSON object (scripts/bench-loss).
    var json: [String: Any] {
        [
            "loss_pct": lossPercent, "frames_decoded": frames.count, "frames_sent_during_loss": sentDuringLoss,
            "frames_missing": framesMissing, "decoded_fps_during_loss": (decodedFPSDuringLoss * 10).rounded() / 10,
            "pose_pct": (posePercent * 100).rounded() / 100, "wrong_poses": wrongPoses, "frames_without_pose": withoutPose,
            "packets_offered": packetsOffered, "packets_dropped": packetsDropped,
            "nack_sent": counters.nacksSent, "nack_received": counters.nacksReceived,
            "rtx_requests": counters.rtxRequests, "rtx_sent": counters.rtxSent, "rtx_received": counters.rtxReceived,
            "pli_sent": counters.plisSent, "pli_received": counters.plisReceived, "packets_lost": counters.packetsLost,
            "recovery_ms": recoveryMs.map { ($0 * 10).rounded() / 10 } as Any,
            "latency_p50_ms": (latencyP50Ms * 10).rounded() / 10, "latency_p95_ms": (latencyP95Ms * 10).rounded() / 10,
        ]
    }
}

@Suite("packet loss: NACK/RTX and keyframe requests", .serialized)
struct PacketLossTests {
    @Test("probe: SDP and stats")
    func probe() async throws {
        let harness = try await LossHarness()
        defer { harness.close() }
        print(harness.offer.sdp.split(separator: "\r\n").filter { $0.contains("rtx") || $0.contains("rtcp-fb") || $0.hasPrefix("m=") }.joined(separator: "\n"))
        print("ANSWER")
        print(harness.answer.sdp.split(separator: "\r\n").filter { $0.contains("rtx") || $0.contains("rtcp-fb") || $0.hasPrefix("m=") }.joined(separator: "\n"))
        let result = try await harness.run(lossPercent: 5, seconds: 3)
        print(result.summary, "keyframe requests", harness.publisher.keyframeRequests, harness.peer.link!.stats)
        for (k, v) in try await harness.peer.stats().entries where v["type"]?.string == "outbound-rtp" || v["type"]?.string == "remote-inbound-rtp" { print("PUB", k, v) }
        for (k, v) in try await harness.subscriber.peer.stats().entries where v["type"]?.string == "inbound-rtp" || v["type"]?.string == "remote-outbound-rtp" { print("SUB", k, v) }
    }
}
