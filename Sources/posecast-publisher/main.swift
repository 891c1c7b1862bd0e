import ArgumentParser
import Foundation
import Logging
import PoseCastKit
import PoseMedia
import Publisher
import NodeOutput
import RTCSession
import Signaling
import Synchronization

extension VideoCodec: ExpressibleByArgument {}
extension LatencyProfile: ExpressibleByArgument {}

/// The field worker's side: camera → pose-tagged frames → one encoder → every subscriber.
@main
struct Publisher: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "posecast-publisher",
        abstract: "Send the camera, every frame tagged with its pose, to remote experts over WebRTC.",
        discussion: """
        Without --signaling it embeds the signaling server (--listen, default 127.0.0.1:8443), so a
        subscriber can connect straight away: posecast-subscriber --signaling ws://127.0.0.1:8443/
        """)

    @Option(help: "Video source: 'v4l2' (the camera at --device), a device path such as /dev/video2, 'synthetic' (the synthetic AR camera: a known 3D scene rendered from each frame's pose) or 'test' (videotestsrc).")
    var source = "v4l2"
    @Option(help: "V4L2 device for --source v4l2.") var device = "/dev/video0"
    @Option var width = 640
    @Option var height = 480
    @Option var fps = 30
    @Option(help: "vp8 or h264.") var codec: VideoCodec = .vp8
    @Option(help: "Target bitrate in kbit/s.") var bitrate = 2000
    @Option(help: "Signaling server URL (ws:// or wss://). Without it the publisher embeds one.") var signaling: String?
    @Option(help: "Address of the embedded signaling server, HOST:PORT (port 0: any free port).") var listen = "127.0.0.1:8443"
    @Option(help: "Room to publish in.") var room = "default"
    @Option(help: "Room token, when the signaling server requires one.") var token: String?
    @Option(help: "PEM CA certificate to trust for a wss:// signaling server (default: the system's trust store).")
    var signalingCa: String?
    @Option(help: "STUN server, stun://HOST:PORT.") var stun: String?
    @Option(help: "TURN server, turn://USER:PASSWORD@HOST:PORT.") var turn: String?
    @Option(help: "Pose source: orbit, walk, pan (standing, turning side to side), shake (hand-held around the orbit), shake:walk, tum:FILE (replay), stdin or udp:[HOST:]PORT (JSON lines from a tracker; docs/POSE_SOURCES.md).")
    var pose = "orbit"
    @Option(help: "Speed multiplier of the pose source (orbit 30°/s, walk 0.6 m/s, shake frequency, replay rate).")
    var poseSpeed: Double = 1
    @Option(help: "Camera intrinsics normalised to the image, FX,FY,CX,CY (a live feed may override them).")
    var intrinsics: String?
    @Option(help: "Horizontal field of view in degrees, when --intrinsics is not given.") var hfov: Float = 60
    @Flag(help: "Print events and a status object per second as JSON lines on stdout.") var json = false
    @Option(help: "Write one JSON line per encoded frame here (frame id, capture time, encode time, size, pose hash).")
    var frameLog: String?
    @Option(help: "tuned (ours: no clocksync before the encoder) or baseline (webrtcbin's defaults: a clocksync on the raw frames, as webrtcsink has).")
    var latencyProfile: LatencyProfile = .tuned
    @Option(help: "Simulated packet loss on each subscriber's outgoing video, in percent (netsim after the retransmission buffer, so NACKs can repair it; docs/NETWORK.md).")
    var loss: Double?

    mutating func validate() throws {
        do { _ = try PoseSourceSpec.parse(pose) } catch { throw ValidationError(error.description) }
        guard hfov.isFinite, hfov > 1, hfov < 179 else { throw ValidationError("--hfov must be in (1, 179) degrees") }
        if let intrinsics { _ = try Self.parseIntrinsics(intrinsics) }
        guard listen.split(separator: ":").count == 2, Int(listen.split(separator: ":")[1]) != nil else {
            throw ValidationError("--listen must be HOST:PORT, got \(listen)")
        }
        if let signaling, !(signaling.hasPrefix("ws://") || signaling.hasPrefix("wss://")) {
            throw ValidationError("--signaling must be a ws:// or wss:// URL, got \(signaling)")
        }
        if let loss, !(0...100).contains(loss) { throw ValidationError("--loss must be a percentage in 0...100, got \(loss)") }
    }

    func run() async throws {
        let logger = Logger(label: "posecast.publisher")
        let out = EventOutput(json: json)

        var mediaConfig = PublisherMediaConfig()
        switch source {
        case "test": mediaConfig.source = .test(pattern: "ball")
        case "synthetic": mediaConfig.source = .synthetic
        case "v4l2": mediaConfig.source = .v4l2(device: device)
        case let path where path.hasPrefix("/"): mediaConfig.source = .v4l2(device: path)
        default: throw ValidationError("--source must be v4l2, synthetic, test or a device path, got \(source)")
        }
        mediaConfig.width = width; mediaConfig.height = height; mediaConfig.fps = fps
        mediaConfig.codec = codec; mediaConfig.bitrateKbps = bitrate
        mediaConfig.rtc.stunServer = stun; mediaConfig.rtc.turnServer = turn
        if let loss { mediaConfig.rtc.linkConditions = LinkConditions(dropProbability: loss / 100) }
        mediaConfig.apply(latencyProfile)
        let frames: FrameLog?
        do throws(FrameLogError) { frames = try frameLog.map { path throws(FrameLogError) in try FrameLog(path: path) } } catch {
            ProcessSupport.printError("posecast-publisher: error: \(error)")
            throw ExitCode(2)
        }
        if let frames { mediaConfig.onEncoded = { frames.record($0) } }

        let camera = try intrinsics.map(Self.parseIntrinsics)
            ?? CameraIntrinsics(horizontalFOVDegrees: hfov, aspect: Float(width) / Float(height))
        let spec = try PoseSourceSpec.parse(pose)
        let store = LivePoseStore()
        let provider: any PoseProvider
        do {
            provider = try spec.makeProvider(speed: poseSpeed, intrinsics: camera, startNanos: WallClock.nowNanos(), store: store)
        } catch {
            ProcessSupport.printError("posecast-publisher: error: \(error)")
            throw ExitCode(2)
        }
        var feed: PoseFeedReceiver?
        if let transport = PoseFeedReceiver.Transport(spec) {
            let receiver = PoseFeedReceiver(transport: transport, store: store) { message in
                out.event("poseFeed", ["message": message], human: message)
            }
            do { try await receiver.start() } catch {
                ProcessSupport.printError("posecast-publisher: error: pose feed \(spec): \(error)")
                throw ExitCode(2)
            }
            if let port = receiver.boundPort { out.event("poseFeedListening", ["port": port], human: "pose feed: listening on UDP port \(port)") }
            feed = receiver
        }
        let media: PublisherMedia
        do {
            media = try PublisherMedia(config: mediaConfig) { id, t in provider.pose(frameID: id, captureTimeNanos: t) }
            try media.start()
        } catch {
            ProcessSupport.printError("posecast-publisher: error: \(error)")
            await feed?.stop()
            throw ExitCode(2)
        }

        var server: SignalingServer?
        let url: String
        if let signaling {
            url = signaling
        } else {
            let parts = listen.split(separator: ":")
            var serverConfig = SignalingServerConfiguration()
            serverConfig.host = String(parts[0]); serverConfig.port = Int(parts[1])!
            do {
                server = try await SignalingServer.start(serverConfig, logger: Logger(label: "posecast.signaling"))
            } catch {
                ProcessSupport.printError("posecast-publisher: error: cannot listen on \(listen): \(error)")
                media.stop()
                throw ExitCode(2)
            }
            url = server!.url
            out.event("listening", ["url": url], human: "signaling: listening on \(url) (embedded)")
        }

        var nodeConfig = PublisherNodeConfig(signalingURL: url)
        nodeConfig.room = room; nodeConfig.token = token
        nodeConfig.signalingTLS = signalingCa.map { SignalingClientTLS(caCertificatePath: $0) }
        let fatal = Mutex<String?>(nil)
        let node = PublisherNode(media: media, config: nodeConfig, logger: logger) { event in
            out.publisherEvent(event)
            if case let .serverError(code, details) = event, code == .unauthorized || code == .roomFull || code == .wrongRole {
                fatal.withLock { $0 = details }
            }
        }
        let runner = Task { await node.run() }
        let signals = ProcessSupport.terminationSignals()
        let stopper = Task { for await _ in signals { runner.cancel(); return } }

        // Camera pipeline errors are reported even with no subscriber (a session's peer
        // reports them too, but there may be none yet).
        media.onPipelineProblem { text, isError in
            out.event(isError ? "pipelineError" : "pipelineWarning", ["message": text],
                      human: (isError ? "camera pipeline error: " : "camera pipeline warning: ") + text)
        }
        var lastFrames = media.stats.framesTagged, lastBytes = media.rtpBytesProduced
        var silentSeconds = 0
        var lastTime = ContinuousClock.now
        while !runner.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            if let reason = fatal.withLock({ $0 }) {
                ProcessSupport.printError("posecast-publisher: error: the signaling server refused us: \(reason)")
                runner.cancel()
                _ = await runner.value
                media.stop()
                await server?.stop()
                throw ExitCode(3)
            }
            let now = ContinuousClock.now
            let seconds = (now - lastTime) / .seconds(1)
            let frames = media.stats.framesTagged, bytes = media.rtpBytesProduced
            let (connected, total) = node.subscriberCounts
            let fpsNow = Double(frames - lastFrames) / max(seconds, 0.001)
            let kbps = Double(bytes - lastBytes) * 8 / 1000 / max(seconds, 0.001)
            var fields: [String: Any] = [
                "subscribers": connected, "sessions": total, "fps": (fpsNow * 10).rounded() / 10,
                "kbps": kbps.rounded(), "frames_with_pose": Int(frames),
                "annotations": node.board.all.count,
            ]
            var human = String(format: "subscribers %d (%d sessions)  %.1f fps  %.0f kbit/s  frames sent with pose %llu  annotations %d",
                               connected, total, fpsNow, kbps, frames, node.board.all.count)
            if let render = media.syntheticStats {
                let ms = Double(render.lastRenderNanos) / 1e6
                fields["render_ms"] = (ms * 10).rounded() / 10
                fields["render_skipped"] = Int(render.framesSkipped)
                fields["frames_rendered"] = Int(render.framesRendered)
                if let error = render.lastError { fields["render_error"] = error; human += "  render error: \(error)" }
                human += String(format: "  render %.1f ms", ms)
            }
            if let st = media.cameraMeter?.status {
                fields.merge(st.statusFields) { _, new in new }
                human += "  " + st.summary
            }
            if feed != nil {
                let s = store.statistics
                fields["pose_feed_accepted"] = s.accepted; fields["pose_feed_rejected"] = s.rejected
                human += "  pose feed \(s.accepted) ok / \(s.rejected) rejected"
            }
            // A source that stops (or never starts) producing is said once, precisely, rather
            // than leaving subscribers with a connected call and no picture.
            silentSeconds = frames == lastFrames ? silentSeconds + 1 : 0
            if silentSeconds == 3 {
                out.event("sourceStalled", ["seconds": silentSeconds, "framesTagged": Int(frames), "pipeline": media.pipeline.stateDescription],
                          human: "error: no frame from the camera for \(silentSeconds) s (camera pipeline \(media.pipeline.stateDescription), \(frames) frames so far)")
            }
            // Sockets and threads a session holds must come back when it ends (fault tests, soak).
            if let resources = ProcessResources.current() { fields.merge(resources.statusFields) { _, new in new } }
            out.status(fields, human: human)
            (lastFrames, lastBytes, lastTime) = (frames, bytes, now)
        }
        _ = await runner.value
        stopper.cancel()
        media.stop()
        await feed?.stop()
        await server?.stop()
        frames?.close()
        out.event("stopped", [:], human: "stopped")
    }

    static func parseIntrinsics(_ text: String) throws -> CameraIntrinsics {
        let v = text.split(separator: ",").map { Float($0.trimmingCharacters(in: .whitespaces)) }
        guard v.count == 4, v.allSatisfy({ $0?.isFinite == true }) else {
            throw ValidationError("--intrinsics must be FX,FY,CX,CY (four numbers normalised to the image), got \(text)")
        }
        let k = CameraIntrinsics(fx: v[0]!, fy: v[1]!, cx: v[2]!, cy: v[3]!)
        do { try PoseFeedLine.validate(k) } catch { throw ValidationError("--intrinsics: \(error)") }
        return k
    }
}

extension EventOutput {
    func publisherEvent(_ event: PublisherNodeEvent) {
        switch event {
        case let .signalingConnected(url, peerId):
            self.event("signalingConnected", ["url": url, "peerId": peerId], human: "signaling: connected to \(url) as \(peerId)")
        case .signalingLost(let reason):
            self.event("signalingLost", ["reason": reason], human: "signaling: \(reason); reconnecting")
        case let .serverError(code, details):
            self.event("serverError", ["code": code?.rawValue ?? "", "details": details], human: "signaling error: \(details)")
        case let .sessionStarted(sessionId, consumer, role):
            self.event("sessionStarted", ["sessionId": sessionId, "consumer": consumer, "role": role.rawValue],
                       human: "session \(sessionId): \(role.rawValue) \(consumer) joining")
        case .subscriberConnected(let sessionId):
            self.event("subscriberConnected", ["sessionId": sessionId], human: "session \(sessionId): connected")
        case let .sessionEnded(sessionId, reason):
            self.event("sessionEnded", ["sessionId": sessionId, "reason": reason], human: "session \(sessionId): ended (\(reason))")
        case let .control(sessionId, request, reply):
            let answer = ControlCodec.encode(reply)
            self.event("control", ["sessionId": sessionId, "request": request ?? "", "reply": answer],
                       human: "session \(sessionId): \(request ?? "unreadable request") → \(answer)")
        case .error(let message):
            self.event("error", ["message": message], human: "error: \(message)")
        }
    }
}
