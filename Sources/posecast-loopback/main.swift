import ArgumentParser
import Foundation
import PoseCastKit
import PoseMedia
import Publisher
import Subscriber
import RTCSession
import Synchronization

extension VideoCodec: ExpressibleByArgument {}

/// The one-process form of the demo: a publisher and a subscriber joined by two real
/// webrtcbins on loopback. Prints a live status line and a JSON summary; exits
/// non-zero if any decoded frame carried a pose that was not its own.
@main
struct PoseCastLoopback: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "posecast-loopback",
        abstract: "Publisher → subscriber over webrtcbin in one process, every frame tagged with its camera pose.")

    @Option(help: "Video source: 'test' (videotestsrc) or a V4L2 device path such as /dev/video0.")
    var source = "test"
    @Option(help: "h264 (the default, as the publisher's) or vp8.") var codec: VideoCodec = .h264
    @Option var width = 640
    @Option var height = 480
    @Option var fps = 30
    @Option(help: "Target bitrate in kbit/s.") var bitrate = 2000
    @Option(help: "How long to run, in seconds.") var seconds: Double = 10
    @Option(help: "Receive jitter-buffer latency in ms (webrtcbin's default is 200).") var jitterLatency = 200
    @Flag(help: "Show the received video in a window.") var display = false

    func run() async throws {
        var pub = PublisherMediaConfig()
        pub.source = source == "test" ? .test(pattern: "ball") : .v4l2(device: source)
        pub.codec = codec
        pub.width = width; pub.height = height; pub.fps = fps; pub.bitrateKbps = bitrate
        pub.stampFrameIDs = true
        pub.rtc.jitterBufferLatencyMs = jitterLatency
        var sub = SubscriberMediaConfig()
        sub.readFrameStamps = true
        sub.sink = display ? .display : .discard
        sub.rtc.jitterBufferLatencyMs = jitterLatency
        // Latency ends where the picture is shown: at the window's sink, or headless as it
        // is decoded (the sink takes it at once).
        let shown = Mutex<[Double]>([])
        sub.onShown = { timing in
            if let ms = timing.latencyMillis { shown.withLock { $0.append(ms) } }
        }

        let orbit = OrbitTrajectory(intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: Float(width) / Float(height)))
        let start = WallClock.nowNanos()
        let sent = Mutex<[UInt32: FramePose]>([:])
        let tally = Mutex(Tally())
        let publisher = try PublisherMedia(config: pub, poseSource: { id, t in
            orbit.pose(at: Double(t &- start) / 1e9, frameID: id, captureTimeNanos: t)
        }, onPoseAttached: { pose in
            sent.withLock { $0[pose.frameID] = pose; $0[pose.frameID &- 900] = nil }
        })
        let subscriber = try SubscriberMedia(config: sub) { frame in
            let original = frame.pose.flatMap { p in sent.withLock { $0[p.frameID] } }
            tally.withLock { $0.record(frame, original: original) }
        }
        try await publisher.start()
        try subscriber.start()
        let peer = try await publisher.addPeer(name: "expert")
        let link = LoopbackLink(publisher: peer, subscriber: subscriber)
        let channel = try await link.negotiate()
        let controlEchoes = Mutex(0)
        let watcher = Task {
            for await event in link.subscriberEvents {
                switch event {
                case .dataChannelMessage(_, .text): controlEchoes.withLock { $0 += 1 }
                case .pipelineError(let e): print("\nsubscriber error: \(e)")
                default: break
                }
            }
        }
        let publisherWatcher = Task {
            for await event in link.publisherEvents {
                if case .pipelineError(let e) = event { print("\npublisher error: \(e)") }
            }
        }

        let end = ContinuousClock.now + .seconds(seconds)
        var tick = 0
        while ContinuousClock.now < end {
            try await Task.sleep(for: .seconds(1))
            tick += 1
            if channel.readyState == .open { try? channel.send("{\"type\":\"status\",\"t\":\(tick)}") }
            let t = tally.withLock { $0 }
            let s = shown.withLock { $0 }
            print(String(format: "\r%3ds  decoded %5d  (%4.1f fps)  with own pose %6.2f%%  wrong %d  rejected %d  latency to shown p50 %5.1f ms  p95 %5.1f ms  control msgs %d ",
                         tick, t.decoded, t.fpsLastSecond(), t.posePercent, t.wrong, subscriber.rejections.total,
                         Tally.percentile(s, 0.5), Tally.percentile(s, 0.95), controlEchoes.withLock { $0 }), terminator: "")
            FileHandle.standardOutput.synchronizeFile()
            tally.withLock { $0.markSecond() }
        }
        print("")
        watcher.cancel(); publisherWatcher.cancel(); link.cancel()
        let t = tally.withLock { $0 }
        let shownMs = shown.withLock { $0 }
        let summary: [String: Any] = [
            "codec": codec.rawValue, "width": width, "height": height, "fps": fps, "seconds": seconds,
            "frames_tagged": publisher.stats.framesTagged, "frames_decoded": t.decoded,
            "pose_pct": (t.posePercent * 100).rounded() / 100, "wrong_poses": t.wrong,
            "rejected_poses": subscriber.rejections.total,
            "latency_ms_p50": Tally.percentile(shownMs, 0.5), "latency_ms_p95": Tally.percentile(shownMs, 0.95),
            "latency_ms_p99": Tally.percentile(shownMs, 0.99), "frames_shown": shownMs.count, "display": display,
            // The start-up burst the window used to have: the first second's worst.
            "latency_ms_max_first_second": Tally.percentile(Array(shownMs.prefix(fps)), 1),
            "latency_ms_first": Array(shownMs.prefix(60)).map { ($0 * 10).rounded() / 10 },
            "decode_latency_ms_p50": t.percentile(0.5), "decode_latency_ms_p95": t.percentile(0.95),
            "control_messages": controlEchoes.withLock { $0 },
        ]
        let json = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
        print(String(decoding: json, as: UTF8.self))
        await subscriber.shutDown()
        publisher.removePeer(peer)
        await publisher.shutDown()
        if t.wrong > 0 || t.decoded == 0 { throw ExitCode.failure }
    }
}

/// Running counts of what the subscriber decoded.
struct Tally {
    var decoded = 0, withOwnPose = 0, wrong = 0
    var latenciesMs: [Double] = []
    private var decodedAtLastMark = 0

    mutating func record(_ frame: DecodedFrame, original: FramePose?) {
        decoded += 1
        guard let pose = frame.pose else { return }
        if let original, pose.isBitwiseIdentical(to: original), frame.stampedFrameID == pose.frameID {
            withOwnPose += 1
        } else {
            wrong += 1
        }
        latenciesMs.append(Double(Int64(bitPattern: frame.decodedAtNanos &- pose.captureTimeNanos)) / 1e6)
    }

    var posePercent: Double { decoded == 0 ? 0 : Double(withOwnPose) * 100 / Double(decoded) }

    func percentile(_ p: Double) -> Double { Self.percentile(latenciesMs, p) }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let value = sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))]
        return (value * 10).rounded() / 10
    }

    func fpsLastSecond() -> Double { Double(decoded - decodedAtLastMark) }
    mutating func markSecond() { decodedAtLastMark = decoded }
}
