import Foundation
import PoseCastKit
import PoseMedia
import Publisher
import Subscriber
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
        try await publisher.start()
        try await subscriber.startAndWaitUntilPlaying()
        peer = try await publisher.addPeer(name: "lossy")
        link = LoopbackLink(publisher: peer, subscriber: subscriber)
        let channel = try peer.createDataChannel("control")
        _ = channel
        offer = try await peer.createOffer()
        try await peer.setLocalDescription(offer)
        answer = try await subscriber.answer(offer)
        try await peer.setRemoteDescription(answer)
        // Two seconds of clean stream first: the loss starts mid-stream.
        let peer = self.peer, subscriberPeer = subscriber.peer
        try await waitUntil(30, "two seconds of decoded frames", progress: {
            "\(log.received.withLock { $0.count }) decoded, \(log.sent.withLock { $0.count }) tagged; publisher "
                + "\(peer.connectionState) (ICE \(peer.iceConnectionState)), subscriber \(subscriberPeer.connectionState) "
                + "(ICE \(subscriberPeer.iceConnectionState))"
        }) { log.received.withLock { $0.count } >= 2 * Self.fps }
    }

    func close() {
        link.cancel()
        subscriber.stop()
        publisher.removePeer(peer)
        StateWorker.shared.drain()   // the branch teardown, before the pipeline goes
        publisher.stop()
    }

    /// The frames decoded so far and the poses sent.
    var frames: [DecodedFrame] { log.received.withLock { $0 } }
    func sentPose(_ id: UInt32) -> FramePose? { log.sent.withLock { $0[id] } }
    var sentIDs: [UInt32] { log.sent.withLock { Array($0.keys) } }

    /// The RTX payload type the offer pairs with the video's (`a=fmtp:N apt=PT`), if any.
    var rtxPayloadType: Int? {
        for line in offer.sdp.split(whereSeparator: \.isNewline) where line.hasPrefix("a=fmtp:") && line.contains("apt=") {
            return Int(line.dropFirst("a=fmtp:".count).prefix { $0.isNumber })
        }
        return nil
    }

    /// `seconds` of `lossPercent` loss, then `recoverySeconds` of none.
    func run(lossPercent: Double, delayMs: Int = 0, seconds: Double, recoverySeconds: Double = 2.5) async throws -> LossResult {
        let beforeStats = try await LossCounters(publisher: peer, subscriber: subscriber.peer)
        let firstFrame = frames.count
        let firstSent = (sentIDs.max() ?? 0) + 1
        let linkBefore = peer.link?.stats ?? LinkSimulatorStats()
        let keyframesBefore = publisher.keyframeRequests
        let start = WallClock.nowNanos()
        try publisher.setLinkConditions(LinkConditions(lossPercent: lossPercent, delayMs: delayMs))
        try await Task.sleep(for: .seconds(seconds))
        try publisher.setLinkConditions(.perfect)
        let stop = WallClock.nowNanos()
        let lastSent = sentIDs.max() ?? 0
        try await Task.sleep(for: .seconds(recoverySeconds))
        let afterStats = try await LossCounters(publisher: peer, subscriber: subscriber.peer)
        let linkAfter = peer.link?.stats ?? LinkSimulatorStats()
        let rtx = rtxPayloadType ?? -1
        func delta(_ f: (LinkSimulatorStats) -> UInt64) -> UInt64 { f(linkAfter) &- f(linkBefore) }
        let link = LinkDelta(
            packetsOffered: delta { $0.offeredTotal - ($0.offered[rtx] ?? 0) },
            packetsDropped: Int64(bitPattern: delta { $0.droppedTotal &- $0.dropped(payloadType: rtx) }),
            rtxSent: delta { $0.offered[rtx] ?? 0 }, rtxDelivered: delta { $0.passed[rtx] ?? 0 })
        return LossResult(lossPercent: lossPercent, start: start, stop: stop, frames: Array(frames[firstFrame...]),
                          sentDuringLoss: Int(lastSent &- firstSent &+ 1), firstSentID: firstSent, lastSentID: lastSent,
                          sentPose: { self.sentPose($0) }, link: link,
                          keyframeRequests: publisher.keyframeRequests - keyframesBefore, counters: afterStats - beforeStats)
    }
}

/// What the impaired link saw during a run (media packets, retransmissions).
struct LinkDelta: Sendable {
    /// `packetsDropped` is offered minus passed: a packet still inside the link (its
    /// delay, the shaper's queue) when either count is read counts as dropped until it
    /// leaves, so a run on a loss-free link can read ±1 or 2 (negative when one was in
    /// flight at the first reading).
    var packetsOffered: UInt64, packetsDropped: Int64
    /// RTX packets the publisher sent (answers to NACKs) and those that crossed the link.
    var rtxSent: UInt64, rtxDelivered: UInt64
}

/// The poses sent (by frame id) and the frames decoded, filled from streaming threads.
final class FrameLog: Sendable {
    let sent = Mutex<[UInt32: FramePose]>([:])
    let received = Mutex<[DecodedFrame]>([])
}

/// NACK and keyframe-request counters from both peers' `get-stats` (webrtcbin 1.22
/// reports no retransmission counts: those come from the link, `LinkSimulatorStats`).
struct LossCounters: Sendable, CustomStringConvertible {
    /// NACK packets sent by the subscriber / received by the publisher.
    var nacksSent = 0.0, nacksReceived = 0.0
    /// Keyframe requests: the depayloaders ask with FIR (all headers), PLI otherwise.
    var plisSent = 0.0, firsSent = 0.0, plisReceived = 0.0, firsReceived = 0.0

    init(nacksSent: Double = 0, nacksReceived: Double = 0, plisSent: Double = 0, firsSent: Double = 0,
         plisReceived: Double = 0, firsReceived: Double = 0) {
        self.nacksSent = nacksSent; self.nacksReceived = nacksReceived; self.plisSent = plisSent
        self.firsSent = firsSent; self.plisReceived = plisReceived; self.firsReceived = firsReceived
    }

    init(publisher: WebRTCPeer, subscriber: WebRTCPeer) async throws {
        // One entry per SSRC (the media's and its RTX stream's): sum them.
        let out = try await publisher.stats().entries(ofType: "outbound-rtp")
        let inbound = try await subscriber.stats().entries(ofType: "inbound-rtp")
        func n(_ entries: [[String: RTCStats.Value]], _ k: String) -> Double { entries.reduce(0) { $0 + ($1[k]?.number ?? 0) } }
        self.init(nacksSent: n(inbound, "nack-count"), nacksReceived: n(out, "nack-count"),
                  plisSent: n(inbound, "pli-count"), firsSent: n(inbound, "fir-count"),
                  plisReceived: n(out, "pli-count"), firsReceived: n(out, "fir-count"))
    }

    static func - (a: Self, b: Self) -> Self {
        Self(nacksSent: a.nacksSent - b.nacksSent, nacksReceived: a.nacksReceived - b.nacksReceived,
             plisSent: a.plisSent - b.plisSent, firsSent: a.firsSent - b.firsSent,
             plisReceived: a.plisReceived - b.plisReceived, firsReceived: a.firsReceived - b.firsReceived)
    }

    var description: String {
        "nack sent \(Int(nacksSent)) received \(Int(nacksReceived)), pli/fir sent \(Int(plisSent))/\(Int(firsSent)) "
            + "received \(Int(plisReceived))/\(Int(firsReceived))"
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
    var link: LinkDelta
    /// Keyframe requests that reached the publisher's encoder.
    var keyframeRequests: UInt64
    var counters: LossCounters

    init(lossPercent: Double, start: UInt64, stop: UInt64, frames: [DecodedFrame], sentDuringLoss: Int,
         firstSentID: UInt32, lastSentID: UInt32, sentPose: (UInt32) -> FramePose?,
         link: LinkDelta, keyframeRequests: UInt64, counters: LossCounters) {
        self.lossPercent = lossPercent; self.start = start; self.stop = stop; self.frames = frames
        self.sentDuringLoss = sentDuringLoss; self.firstSentID = firstSentID; self.lastSentID = lastSentID
        self.link = link; self.keyframeRequests = keyframeRequests; self.counters = counters
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
        // Only frames captured after the loss stopped: the backlog repaired late (and
        // decoded in a burst) must not pass for the stream being back.
        let fresh = frames.filter { ($0.pose?.captureTimeNanos ?? 0) >= stop }
        recoveryMs = Self.recovery(after: stop, decodedAt: fresh.map(\.decodedAtNanos).sorted(), fps: LossHarness.fps)
    }

    /// Milliseconds from `stop` to the start of the first 1 s window holding at least
    /// 90 % of the nominal frame rate (windows start at `stop` or at a decoded frame);
    /// `times` are the decode times of frames captured after `stop`.
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
        String(format: "%.0f%% loss: %d frames decoded (%d sent during loss, %d missing, %.1f fps during loss), "
               + "%.2f%% with pose, %d wrong; packets %llu sent, %lld dropped; rtx %llu sent, %llu delivered; %@; "
               + "keyframe requests %llu; recovery %@ ms; latency p50 %.1f p95 %.1f ms",
               lossPercent, frames.count, sentDuringLoss, framesMissing, decodedFPSDuringLoss, posePercent, wrongPoses,
               link.packetsOffered, link.packetsDropped, link.rtxSent, link.rtxDelivered, counters.description,
               keyframeRequests, recoveryMs.map { String(format: "%.0f", $0) } ?? "none", latencyP50Ms, latencyP95Ms)
    }

    /// One JSON object (scripts/bench-loss).
    var json: [String: Any] {
        func round1(_ x: Double) -> Double { (x * 10).rounded() / 10 }
        return [
            "loss_pct": lossPercent, "frames_decoded": frames.count, "frames_sent_during_loss": sentDuringLoss,
            "frames_lost": framesMissing, "decoded_fps_during_loss": round1(decodedFPSDuringLoss),
            "pose_pct": (posePercent * 100).rounded() / 100, "wrong_poses": wrongPoses, "frames_without_pose": withoutPose,
            "packets_sent": link.packetsOffered, "packets_dropped": link.packetsDropped,
            "rtx_sent": link.rtxSent, "rtx_delivered": link.rtxDelivered,
            "nack_sent": counters.nacksSent, "nack_received": counters.nacksReceived,
            "pli_sent": counters.plisSent, "fir_sent": counters.firsSent, "keyframe_requests": keyframeRequests,
            "recovery_ms": recoveryMs.map(round1) as Any,
            "latency_p50_ms": round1(latencyP50Ms), "latency_p95_ms": round1(latencyP95Ms),
        ]
    }
}

@Suite("packet loss: netsim, NACK/RTX and keyframe requests", .serialized, .tags(.realtime))
struct PacketLossTests {
    @Test("link conditions reject what netsim cannot do")
    func linkConditionsValidate() throws {
        #expect(throws: RTCError.self) { try LinkConditions(lossPercent: 101) }
        #expect(throws: RTCError.self) { try LinkConditions(lossPercent: -1) }
        #expect(throws: RTCError.self) { try LinkConditions(lossPercent: .nan) }
        #expect(throws: RTCError.self) { try LinkConditions(dropProbability: 0.1, delayMs: -5).validate() }
        let five = try LinkConditions(lossPercent: 5, delayMs: 20)
        #expect(five.dropProbability == 0.05)
        #expect(five.description == "5.0% loss, 20 ms delay")
    }

    /// A few seconds of loss on the publisher's outgoing RTP, then none: every decoded
    /// picture shows its own pose; NACKs go out and retransmissions come back; the
    /// frame rate is whole again within a second of the loss stopping.
    @Test("loss on the media path: own poses only, NACK/RTX repair, recovery within 1 s",
          arguments: [1.0, 5.0, 10.0])
    func lossAndRecovery(lossPercent: Double) async throws {
        let harness = try await LossHarness()
        defer { harness.close() }
        try Self.expectNegotiated(harness)
        let result = try await harness.run(lossPercent: lossPercent, seconds: 3)
        print("[loss] \(result.summary)")
        try Self.expectRepaired(result, minimumPosePercent: lossPercent <= 5 ? 99 : 90)
    }

    /// The same at 5 % with the receive jitter buffer at 40 ms. NACKs go out and
    /// retransmissions cross, but they do not repair most of it: 47–88 of the 90 frames
    /// sent during the loss were not shown (measured on 2026-11-25, the same with
    /// `rtx-next-seqnum` on or off). A frame whose retransmission misses the 40 ms is
    /// dropped whole, the depayloader waits for a keyframe and the keyframe requests are
    /// spaced 0.5 s apart (`KeyframeThrottle`). What holds, and is asserted: no picture
    /// with a pose not its own, and full frame rate within 1 s of the loss stopping.
    @Test("with a 40 ms jitter buffer at 5 % loss, NACK/RTX still run, no pose is wrong and the picture comes back")
    func shortJitterBuffer() async throws {
        let harness = try await LossHarness(jitterLatencyMs: 40)
        defer { harness.close() }
        let result = try await harness.run(lossPercent: 5, seconds: 3)
        print("[loss, 40 ms jitter buffer] \(result.summary)")
        try Self.expectRepaired(result, minimumPosePercent: 99)
    }

    /// A second with 90 % of the packets dropped, retransmissions too, loses some for good
    /// (a packet and every retransmission of it within the jitter buffer's 200 ms all
    /// dropped; at 50 % one run in two repaired everything): the depayloader asks for a keyframe
    /// (FIR), the request reaches the publisher's encoder through the branch, and the
    /// picture comes back with it. (A blackout no longer does: our receiver NACKs a
    /// packet when a later one shows it missing, so the first packets after the blackout
    /// ask for all of it again and the retransmissions, on a clean link by then, repair
    /// it; `rtx-next-seqnum`, RetransmissionRequests.)
    @Test("an unrepairable gap brings a keyframe request and the picture back within 1 s")
    func keyframeRequest() async throws {
        let harness = try await LossHarness()
        defer { harness.close() }
        let result = try await harness.run(lossPercent: 90, seconds: 1)
        print("[blackout] \(result.summary)")
        #expect(result.wrongPoses == 0)
        #expect(result.counters.plisSent + result.counters.firsSent > 0, "the subscriber asked for no keyframe")
        #expect(result.keyframeRequests > 0, "no keyframe request reached the publisher's encoder")
        let recovery = try #require(result.recoveryMs, "the frame rate never came back after the loss stopped")
        #expect(recovery <= 1000, "full frame rate came back \(recovery) ms after the loss stopped")
    }

    /// A fixed delay on the link shows in the capture → decoded latency of the frames
    /// sent while it lasts (and nothing is lost or reordered).
    @Test("a link delay adds to the latency, in order, without loss")
    func linkDelay() async throws {
        let harness = try await LossHarness()
        defer { harness.close() }
        let clean = try await harness.run(lossPercent: 0, seconds: 1, recoverySeconds: 0.5)
        let delayed = try await harness.run(lossPercent: 0, delayMs: 80, seconds: 2, recoverySeconds: 0.5)
        print("[delay] clean p50 \(clean.latencyP50Ms) ms, with 80 ms delay p50 \(delayed.latencyP50Ms) ms; "
              + "link counts offered − passed \(delayed.link.packetsDropped) of \(delayed.link.packetsOffered)")
        #expect(delayed.latencyP50Ms >= clean.latencyP50Ms + 60)
        #expect(delayed.wrongPoses == 0)
        // Nothing dropped: a packet in flight at either reading of the link's counts is all
        // the count may show (a fresh-clone CI run read 1 or more here on a busy machine).
        #expect(abs(delayed.link.packetsDropped) <= 2, "netsim dropped \(delayed.link.packetsDropped) packets on a loss-free link")
    }

    /// The offer and the answer both carry RTX for the video payload type and NACK/PLI feedback.
    static func expectNegotiated(_ harness: LossHarness) throws {
        let rtx = try #require(harness.rtxPayloadType, "the offer has no RTX payload type:\n\(harness.offer.sdp)")
        for (side, sdp) in [("offer", harness.offer.sdp), ("answer", harness.answer.sdp)] {
            #expect(sdp.contains("a=rtpmap:\(rtx) rtx/90000"), "\(side) lacks rtx \(rtx)")
            #expect(sdp.contains("a=fmtp:\(rtx) apt=96"), "\(side) lacks apt=96 for rtx \(rtx)")
            #expect(sdp.contains("a=rtcp-fb:96 nack\r\n") || sdp.contains("a=rtcp-fb:96 nack\n"), "\(side) lacks nack")
            #expect(sdp.contains("a=rtcp-fb:96 nack pli"), "\(side) lacks nack pli")
        }
    }

    static func expectRepaired(_ result: LossResult, minimumPosePercent: Double) throws {
        #expect(result.link.packetsDropped > 0, "netsim dropped nothing")
        #expect(result.wrongPoses == 0, "a decoded picture showed a pose that is not its own")
        #expect(result.posePercent >= minimumPosePercent)
        #expect(result.counters.nacksSent > 0, "the subscriber sent no NACK")
        #expect(result.counters.nacksReceived > 0, "the publisher received no NACK")
        #expect(result.link.rtxSent > 0 && result.link.rtxDelivered > 0, "no retransmission crossed the link")
        let recovery = try #require(result.recoveryMs, "the frame rate never came back after the loss stopped")
        #expect(recovery <= 1000, "full frame rate came back \(recovery) ms after the loss stopped")
    }
}

/// The benchmark `scripts/bench-loss` runs: per loss rate, a fresh pair, `seconds` of
/// loss and 3 s without, then a blackout (every packet dropped for a moment, so only a
/// keyframe request can repair it); one JSON line each. Skipped unless
/// POSECAST_BENCH_LOSS_OUT names the JSON-lines file to write. POSECAST_BENCH_LOSS_SECONDS:
/// loss duration (default 6); POSECAST_BENCH_LOSS_RATES: percentages (default 1,5,10);
/// POSECAST_BENCH_LOSS_BLACKOUT_MS: blackout length (default 500, 0 for none);
/// POSECAST_BENCH_LOSS_JITTER_MS: receive jitter buffer latency (default 200).
@Suite(.tags(.realtime)) struct PacketLossBenchmark {
    static let environment = ProcessInfo.processInfo.environment
    static let output = environment["POSECAST_BENCH_LOSS_OUT"]

    @Test(.enabled(if: PacketLossBenchmark.output != nil)) func lossBenchmark() async throws {
        let path = try #require(Self.output)
        let seconds = Double(Self.environment["POSECAST_BENCH_LOSS_SECONDS"] ?? "") ?? 6
        let rates = (Self.environment["POSECAST_BENCH_LOSS_RATES"] ?? "1,5,10").split(separator: ",").compactMap { Double($0) }
        let blackoutMs = Int(Self.environment["POSECAST_BENCH_LOSS_BLACKOUT_MS"] ?? "") ?? 500
        let jitterMs = Int(Self.environment["POSECAST_BENCH_LOSS_JITTER_MS"] ?? "") ?? 200
        var episodes = rates.map { (percent: $0, seconds: seconds) }
        if blackoutMs > 0 { episodes.append((percent: 100, seconds: Double(blackoutMs) / 1000)) }
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let file = try #require(FileHandle(forWritingAtPath: path))
        defer { try? file.close() }
        for episode in episodes {
            // A pair that does not connect (seen once with the 2 cores loaded 7×) is
            // set up again once; the row says so.
            var setupRetries = 0
            let harness: LossHarness
            do { harness = try await LossHarness(jitterLatencyMs: jitterMs) } catch {
                print("[bench-loss] setting up the pair failed (\(error)); once more")
                setupRetries = 1
                harness = try await LossHarness(jitterLatencyMs: jitterMs)
            }
            let result: LossResult
            do { result = try await harness.run(lossPercent: episode.percent, seconds: episode.seconds, recoverySeconds: 3) } catch {
                harness.close()
                throw error
            }
            harness.close()
            print("[bench-loss] \(result.summary)")
            #expect(result.wrongPoses == 0)
            var row = result.json
            row["loss_seconds"] = episode.seconds
            row["jitter_latency_ms"] = jitterMs
            row["setup_retries"] = setupRetries
            row["source"] = "videotestsrc snow 320x240@30, vp8 2000 kbit/s"
            file.write(try JSONSerialization.data(withJSONObject: row, options: [.sortedKeys, .withoutEscapingSlashes])
                       + Data("\n".utf8))
        }
    }
}
