import ArgumentParser
import CameraControl
import NetworkOptions
import Voice
import Foundation
import Logging
import PoseCastKit
import PoseMedia
import Publisher
import NodeOutput
import RTCSession
import ServerOptions
import Signaling
import TagTracking

extension VideoCodec: ExpressibleByArgument {}
extension LatencyProfile: ExpressibleByArgument {}
extension H264Encoder: ExpressibleByArgument {}

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

    @Option(help: "Video source: 'v4l2' (the camera at --device), a device path such as /dev/video2, 'synthetic' (the synthetic AR camera: a known 3D scene rendered from each frame's pose) or 'test' (videotestsrc), image:PATH (a PNG or JPEG picture as live video, letterboxed; for the effects' demo) or video:PATH (a recorded video played as live video, looping, letterboxed).")
    var source = "v4l2"
    @Option(help: "V4L2 device for --source v4l2.") var device = "/dev/video0"
    @Option(help: "Width of the picture sent.") var width = 640
    @Option(help: "Height of the picture sent.") var height = 480
    @Option(help: "WxH: capture a wider view than the picture sent (e.g. 1280x720 for 640x480): framing and zoom crop it, each frame's intrinsics those of its crop (docs/EFFECTS.md). --hfov is the capture's.")
    var captureSize: String?
    @Option(help: "Virtual background: off, blur[=RADIUS] (default radius 10), or image=PATH (PNG or JPEG), optionally with ,depth=METRES to hide what is farther than that by the source's depth instead of by person segmentation (the synthetic camera has depth). Change it while running with the stdin command `background SPEC`; an expert cannot turn it off.")
    var background = "off"
    @Option(help: "Automatic framing (Center Stage): off, face (the largest face) or person (the person mask's box). Needs --capture-size wider than the picture sent to have room to move.")
    var framing: FramingSubject = .off
    @Option(help: "Who may change framing and zoom while running: user (stdin only; experts refused), cooperative (stdin and experts) or app (nobody: the framing the publisher started with).")
    var framingControl: FramingControl = .cooperative
    @Option(help: "The largest digital zoom (1…4).") var maxZoom: Double = 4
    @Option(help: "Person segmentation and face detection runs per second (the latest result serves every frame).")
    var analysisFps: Double = 15
    @Flag(inversion: .prefixedEnableDisable, help: "The person background applies only while a face or a person detector finds someone in the person mask (the selfie model marks whatever stands out when no one is there; docs/EFFECTS.md gives the range).")
    var personGate = true
    @Option(help: "Folder of libLiteRt.so and the .tflite models (default: .build/effects, filled by scripts/effects-setup).")
    var effectsDir: String?
    @Option var fps = 30
    @OptionGroup var voice: VoiceArguments
    @Flag(help: "Viewers may talk too (the room's setting, held by its publisher; by default viewers only listen).")
    var viewersMayTalk = false
    @Flag(help: "The synthetic camera paints a white frame at each whole second of the wall clock (A/V tests, with --microphone bursts).")
    var flash = false
    @Option(help: "h264 (the default: x264, less latency and CPU than VP8 at the same median SSIM with fewer bits; docs/BENCHMARKS.md) or vp8.") var codec: VideoCodec = .h264
    @Option(help: "With --codec h264: x264 (the default: zero latency, veryfast, Constrained Baseline) or openh264 (Cisco's: 1 ms faster, a softer picture in hard scenes; docs/BENCHMARKS.md).")
    var h264Encoder: H264Encoder?
    @Option(help: "NAME=VALUE: set an encoder property after ours (repeatable; gst-inspect-1.0 vp8enc, openh264enc or x264enc lists them). For tuning and benchmarks: docs/BENCHMARKS.md has what was measured.")
    var encoderOption: [String] = []
    @Option(help: "The encoder's bitrate ceiling in kbit/s (with --fixed-bitrate: its bitrate).") var bitrate = 2000
    @Flag(inversion: .prefixedEnableDisable, help: "Congestion control (docs/NETWORK.md): the encoder follows the weakest subscriber's bandwidth estimate (loss, round trip, REMB) between --min-bitrate and --bitrate. --disable-adapt-bitrate sends --bitrate whatever the link.")
    var adaptBitrate = true
    @Flag(inversion: .prefixedEnableDisable, help: "With congestion control: ask browsers for transport-wide feedback (transport-cc) and estimate the path here from it; --disable-transport-cc leaves them REMB, their own estimate (docs/NETWORK.md).")
    var transportCc = true
    @Option(help: "The lowest bitrate congestion control goes to, kbit/s.") var minBitrate = 150
    @Option(help: "Where congestion control starts, kbit/s (within --min-bitrate…--bitrate).") var startBitrate = 800
    @Option(help: "How far congestion control may shrink the sent picture when the link is too slow for its size: 1 never, 2 half the width and height, 4 a quarter (never below 320×180). The pose stays exact.") var maxDownscale = 4
    @Option(help: "Signaling server URL (ws:// or wss://). Without it the publisher embeds one.") var signaling: String?
    @Option(help: "Address of the embedded signaling server, HOST:PORT (port 0: any free port).") var listen = "127.0.0.1:8443"
    @Option(name: .customLong("allow-origin"), parsing: .singleValue,
            help: ArgumentHelp("With the embedded server: a web origin whose pages may open a WebSocket to it (scheme://host[:port]; null: pages opened from files; *: any page). By default only its own pages (the console) and clients that are no browsers. Repeatable.",
                               valueName: "ORIGIN"))
    var allowedOrigins: [String] = []
    @Option(help: "Room to publish in (with --sfu, a number: Janus's VideoRoom room, made when missing).") var room = "default"
    @Option(help: "janus:ws://HOST:PORT/: publish one stream into a Janus VideoRoom for its subscribers (docs/SCALING.md); the pose travels in the frames (H.264: SEI; VP8: trailer). Experts still reach us through --signaling (or the embedded server) for control.")
    var sfu: String?
    @Option(help: "Room token, when the signaling server requires one.") var token: String?
    @Option(help: "PEM CA certificate to trust for a wss:// signaling server (default: the system's trust store).")
    var signalingCa: String?
    @OptionGroup var network: NetworkOptions
    @OptionGroup(title: "The embedded server's front door (without --signaling; docs/SECURITY.md)") var serverLimits: ServerLimitOptions
    @Option(help: "Pose source: orbit, walk, pan (standing, turning side to side), shake (hand-held around the orbit), shake:walk, tum:FILE (replay), stdin or udp:[HOST:]PORT (JSON lines from a tracker), apriltag[:MAP] (from the AprilTags each frame shows, placed by a JSON tag map; without one a 16 cm tag 0 lies at the origin; needs --intrinsics or --hfov true to the camera; docs/POSE_SOURCES.md).")
    var pose = "orbit"
    @Option(help: "Speed multiplier of the pose source (orbit 30°/s, walk 0.6 m/s, shake frequency, replay rate).")
    var poseSpeed: Double = 1
    @Option(help: "Camera intrinsics: FX,FY,CX,CY normalised to the image (a live feed may override them), or the file posecast-calibrate writes (focal lengths, principal point and lens distortion measured from views of a tag board; a real camera's pictures are then undistorted before anything reads or sends them, so the picture agrees with the pinhole intrinsics sent with it; docs/POSE_SOURCES.md).")
    var intrinsics: String?
    @Option(help: "Horizontal field of view in degrees, when --intrinsics is not given.") var hfov: Float = 60
    @Flag(help: "Print events and a status object per second as JSON lines on stdout.") var json = false
    @Option(help: "With --source synthetic and --pose apriltag: the path the synthetic camera moves along (orbit, walk, pan, shake…); each frame's pose is read from the tags it paints (its field of six 40 cm tags, or --pose apriltag:MAP's), the path's pose is the ground truth.")
    var scenePath = "orbit"
    @Option(help: "The synthetic camera paints AprilTags on its scene: 'field' (six 40 cm tags on the ground, as bench-tags) or a tag map file; implied by --pose apriltag on the synthetic camera.")
    var sceneTags: String?
    @Flag(help: "List the modes the camera at --device offers (encoding, size, frame rates) and the one the publisher would capture in for --width/--height (or --capture-size) at --fps, then exit.")
    var listFormats = false
    @Flag(inversion: .prefixedEnableDisable, help: "The synthetic camera renders each frame just ahead of its capture instant, with that instant's pose, so the render does not count as capture latency (trajectories and replays only; a live pose feed never renders ahead).")
    var renderAhead = true
    @Option(help: "Keep the annotations in this JSON file: read at start (none when it does not exist yet), rewritten after every change, so they come back in the next session where the same world holds (the tag map's with --pose apriltag, the scene's with the synthetic camera).")
    var anchors: String?
    @Option(help: "Write one JSON line per encoded frame here (frame id, capture time, encode time, size, pose hash).")
    var frameLog: String?
    @Option(help: "Benchmarks: write the luma of every sampled frame (as the encoder gets it) into this directory, for subscribers with the same option to measure PSNR and SSIM.")
    var qualityReference: String?
    @Option(help: "With --quality-reference: sample the frames whose id is a multiple of this.")
    var qualityEvery = 15
    @Option(help: "tuned (ours: no clocksync before the encoder) or baseline (webrtcbin's defaults: a clocksync on the raw frames, as webrtcsink has).")
    var latencyProfile: LatencyProfile = .tuned
    @Option(help: "Simulated packet loss on each subscriber's outgoing video, in percent (netsim after the retransmission buffer, so NACKs can repair it; docs/NETWORK.md).")
    var loss: Double?
    @Option(help: "Simulated link on each subscriber's outgoing video: rate=KBPS,loss=PERCENT,delay=MS[,bucket=KBIT], any subset (netsim after the retransmission buffer; docs/NETWORK.md).")
    var link: String?
    @Option(help: "Seconds a subscriber's session may take to connect (ICE and DTLS, its certificate verified) before it is ended and freed.")
    var setupTimeout: Double = 15
    @Option(help: "Sessions one subscriber may hold at once; more are refused whatever the signaling server allows.")
    var maxSessionsPerConsumer = 4
    @Option(help: "Sessions the publisher serves at once, being set up or live; more are refused. Default 16, or 64 with --sfu (a session through the SFU costs the publisher no stream). Its embedded signaling server's rooms hold as many subscribers.")
    var maxSessions: Int?

    mutating func validate() throws {
        if let dir = qualityReference, !QualitySampling.isWritableDirectory(dir) {
            throw ValidationError("--quality-reference \(dir) is not a writable directory: create it first")
        }
        for option in encoderOption where EncoderOption(option) == nil {
            throw ValidationError("--encoder-option takes NAME=VALUE, got \(option)")
        }
        if let h264Encoder, codec != .h264 { throw ValidationError("--h264-encoder \(h264Encoder.rawValue) needs --codec h264") }
        guard qualityEvery >= 1 else { throw ValidationError("--quality-every must be 1 or more, got \(qualityEvery)") }
        do { _ = try PoseSourceSpec.parse(pose) } catch { throw ValidationError(error.description) }
        let path: (any CameraTrajectory)?
        do { path = try PoseSourceSpec.parse(scenePath).trajectory() } catch { throw ValidationError("--scene-path: \(error.description)") }
        guard path != nil else {
            throw ValidationError("--scene-path must be a path the synthetic camera can move along (orbit, walk, pan, shake, shake:walk, tum:FILE), got \(scenePath)")
        }
        if sceneTags != nil, source != "synthetic" { throw ValidationError("--scene-tags paints tags on the synthetic camera's scene: it needs --source synthetic") }
        if let sceneTags, sceneTags != "field" {
            do { _ = try TagMap.load(path: sceneTags) } catch { throw ValidationError("--scene-tags: \(error)") }
        }
        guard hfov.isFinite, hfov > 1, hfov < 179 else { throw ValidationError("--hfov must be in (1, 179) degrees") }
        if let intrinsics {
            let capture = captureSize.flatMap(Self.parseSize) ?? (width, height)
            _ = try Self.cameraIntrinsics(intrinsics, width: capture.0, height: capture.1)
        }
        guard listen.split(separator: ":").count == 2, Int(listen.split(separator: ":")[1]) != nil else {
            throw ValidationError("--listen must be HOST:PORT, got \(listen)")
        }
        if let signaling, !(signaling.hasPrefix("ws://") || signaling.hasPrefix("wss://")) {
            throw ValidationError("--signaling must be a ws:// or wss:// URL, got \(signaling)")
        }
        guard setupTimeout.isFinite, setupTimeout >= 1, setupTimeout <= 600 else {
            throw ValidationError("--setup-timeout must be 1…600 seconds, got \(setupTimeout)")
        }
        guard maxSessionsPerConsumer >= 1, (maxSessions ?? 1) >= 1 else {
            throw ValidationError("--max-sessions-per-consumer and --max-sessions must be at least 1")
        }
        if let loss, !(0...100).contains(loss) { throw ValidationError("--loss must be a percentage in 0...100, got \(loss)") }
        if let link { do { _ = try LinkConditions(spec: link) } catch { throw ValidationError("--link: \(error)") } }
        guard (50...bitrate).contains(minBitrate) else { throw ValidationError("--min-bitrate must be 50…--bitrate (\(bitrate)) kbit/s, got \(minBitrate)") }
        if let captureSize, Self.parseSize(captureSize) == nil {
            throw ValidationError("--capture-size must be WxH with even numbers of at least 64, got \(captureSize)")
        }
        do { _ = try BackgroundSetting(spec: background) } catch { throw ValidationError("--background: \(error)") }
        guard maxZoom >= 1, maxZoom <= 4 else { throw ValidationError("--max-zoom must be 1…4, got \(maxZoom)") }
        guard analysisFps > 0, analysisFps <= 60 else { throw ValidationError("--analysis-fps must be in (0, 60], got \(analysisFps)") }
        guard [1, 2, 4].contains(maxDownscale) else { throw ValidationError("--max-downscale must be 1, 2 or 4, got \(maxDownscale)") }
        if link != nil, loss != nil { throw ValidationError("give --link loss=PERCENT instead of --loss with --link") }
    }

    func run() async throws {
        if listFormats { return try listCameraFormats() }
        // GStreamer's DTLS key, made while signaling connects rather than when the first peer
        // connects (`GStreamer.prepareDTLS`).
        GStreamer.prepareDTLS()
        // Sockets, pipes and GStreamer's own descriptors, and those of the embedded
        // server's clients: the default 1024 is too few to survive a crowd (docs/SECURITY.md).
        let openFiles = ProcessSupport.raiseOpenFileLimit()
        var config = PublisherAppConfig()
        serverLimits.apply(to: &config.embeddedServer)
        // Under a low file limit the server's clients must not take the descriptors the
        // camera's own sessions need: at most half of them, less a reserve for the media.
        if openFiles > 0 {
            let share = max(16, Int(openFiles) / 2 - 64)
            config.embeddedServer.maxConnections = min(config.embeddedServer.maxConnections, share)
            config.embeddedServer.frontDoor.maxConnectionsPerAddress = min(config.embeddedServer.frontDoor.maxConnectionsPerAddress, share)
        }
        switch source {
        case "test": config.media.source = .test(pattern: "ball")
        case "synthetic": config.media.source = .synthetic
        case "v4l2": config.media.source = .v4l2(device: device)
        case let spec where spec.hasPrefix("image:"): config.media.source = .image(path: String(spec.dropFirst("image:".count)))
        case let spec where spec.hasPrefix("video:"): config.media.source = .video(path: String(spec.dropFirst("video:".count)))
        case let path where path.hasPrefix("/"): config.media.source = .v4l2(device: path)
        default: throw ValidationError("--source must be v4l2, synthetic, test, image:PATH, video:PATH or a device path, got \(source)")
        }
        config.media.width = width; config.media.height = height; config.media.fps = fps
        let capture = captureSize.flatMap(Self.parseSize) ?? (width, height)
        if captureSize != nil { (config.media.captureWidth, config.media.captureHeight) = (capture.0, capture.1) }
        config.media.effects.background = try BackgroundSetting(spec: background)
        config.media.effects.framing = framing; config.media.effects.framingControl = framingControl
        config.media.effects.maxZoom = maxZoom; config.media.effects.analysisFPS = analysisFps
        config.media.effects.personGate = personGate; config.media.effects.assetsDirectory = effectsDir
        config.media.codec = codec; config.media.bitrateKbps = bitrate
        config.media.h264Encoder = h264Encoder ?? .x264; config.media.encoderOptions = encoderOption.compactMap(EncoderOption.init)
        config.media.adaptBitrate = adaptBitrate; config.media.minimumBitrateKbps = minBitrate
        config.media.transportWideCC = transportCc
        config.media.startBitrateKbps = startBitrate; config.media.maxDownscale = maxDownscale
        config.media.qualitySampling = qualityReference.map { QualitySampling(directory: $0, every: qualityEvery) }
        config.media.renderAhead = renderAhead
        config.media.voice = try voice.options()
        config.media.viewersMayTalk = viewersMayTalk
        config.media.flashEverySecond = flash
        network.apply(to: &config.media.rtc)
        if let loss { config.media.rtc.linkConditions = LinkConditions(dropProbability: loss / 100) }
        if let link { config.media.rtc.linkConditions = try LinkConditions(spec: link) }
        config.media.apply(latencyProfile)
        let measured = try intrinsics.map { try Self.cameraIntrinsics($0, width: capture.0, height: capture.1) }
        config.camera = measured?.intrinsics ?? CameraIntrinsics(horizontalFOVDegrees: hfov, aspect: Float(capture.0) / Float(capture.1))
        config.calibration = measured?.calibration
        config.pose = try PoseSourceSpec.parse(pose)
        config.scenePath = try PoseSourceSpec.parse(scenePath)
        if let sceneTags { config.media.sceneTags = sceneTags == "field" ? .sceneField : try TagMap.load(path: sceneTags) }
        config.poseSpeed = poseSpeed
        config.signalingURL = signaling
        let parts = listen.split(separator: ":")
        config.listen = (String(parts[0]), Int(parts[1])!)
        do { config.origins = try OriginPolicy(allowing: allowedOrigins) } catch { throw ValidationError("--allow-origin: \(error)") }
        if signaling != nil, !allowedOrigins.isEmpty {
            throw ValidationError("--allow-origin is for the embedded server; with --signaling give it to that server")
        }
        config.room = room; config.token = token; config.signalingCA = signalingCa
        if let sfu {
            guard let url = PublisherSFUConfig.janusURL(sfu) else {
                throw ValidationError("--sfu must be janus:ws://HOST:PORT/ (or janus:wss://…), got \(sfu)")
            }
            guard let number = UInt64(room), number > 0 else {
                throw ValidationError("--sfu needs --room to be a positive number (Janus's VideoRoom rooms are numbers), got \(room)")
            }
            config.sfu = PublisherSFUConfig(url: url, room: number)
        }
        config.json = json; config.frameLogPath = frameLog; config.anchorsPath = anchors
        config.setupTimeout = .milliseconds(Int64(setupTimeout * 1000))
        config.maxSessionsPerConsumer = maxSessionsPerConsumer
        config.maxSessions = maxSessions ?? (sfu == nil ? 16 : 64)
        if let turn = config.media.rtc.turnServer { Task.detached { [json] in await TURNReport.say(turn, out: EventOutput(json: json)) } }
        do throws(AppExit) {
            let app = try await PublisherApp.build(config)
            try await app.run()
        } catch {
            ProcessSupport.printError(error.message)
            throw ExitCode(error.code)
        }
    }

    static func parseSize(_ text: String) -> (Int, Int)? {
        let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, parts[0] >= 64, parts[1] >= 64, parts[0] % 2 == 0, parts[1] % 2 == 0 else { return nil }
        return (parts[0], parts[1])
    }

    /// `--intrinsics`: four numbers, or a calibration file (with the lens it measured) for
    /// a capture of `width` × `height`.
    static func cameraIntrinsics(_ text: String, width: Int, height: Int) throws
        -> (intrinsics: CameraIntrinsics, calibration: CalibrationFile?) {
        let numbers = text.split(separator: ",")
        guard numbers.count != 4 || FileManager.default.fileExists(atPath: text) else { return (try parseIntrinsics(text), nil) }
        do {
            let file = try CalibrationFile.load(path: text)
            return (try file.normalizedIntrinsics(width: width, height: height, path: text), file)
        } catch {
            throw ValidationError("--intrinsics: \(error)")
        }
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

    /// `--list-formats`: the camera's modes and the choice, on stdout.
    private func listCameraFormats() throws {
        try GStreamer.initialize()
        let path = source.hasPrefix("/") ? source : device
        let capture = captureSize.flatMap(Self.parseSize) ?? (width, height)
        let modes: [CaptureMode]
        do { modes = try CameraFormats.probe(device: path) } catch { throw ValidationError("--list-formats: \(error)") }
        print("\(path): \(modes.count) modes")
        for mode in modes { print("  \(mode)\(mode.usable ? "" : " (not used)")") }
        if let choice = CaptureFormatChoice.choose(from: modes, width: capture.0, height: capture.1, fps: fps) {
            print("for \(capture.0)x\(capture.1) at \(fps) fps: \(choice)")
        } else {
            print("for \(capture.0)x\(capture.1) at \(fps) fps: nothing usable (no raw or MJPEG mode)")
        }
    }
}

extension FramingSubject: ExpressibleByArgument {}
extension FramingControl: ExpressibleByArgument {}
