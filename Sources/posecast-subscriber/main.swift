import ArgumentParser
import NetworkOptions
import Voice
import PoseCastKit
import PoseMedia
import Subscriber
import NodeOutput
import RTCSession
import Signaling

extension RoomRole: ExpressibleByArgument {}
extension LatencyProfile: ExpressibleByArgument {}
extension PoseTransport: ExpressibleByArgument {}

/// The remote expert's side: receive, decode and show the field camera; taps become
/// annotations anchored in the world from the pose of the frame on screen.
@main
struct Subscriber: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "posecast-subscriber",
        abstract: "Watch a PoseCast publisher and annotate what it sees.",
        discussion: "Headless commands (stdin or --script):\n" + SubscriberCommand.help)

    @Option(help: "Signaling server URL.") var signaling = "ws://127.0.0.1:8443/"
    @Option(help: "Room to join (with --sfu, a number: the Janus VideoRoom room the publisher publishes in).") var room = "default"
    @Option(help: "janus:ws://HOST:PORT/: take the video from a Janus VideoRoom instead of the publisher (docs/SCALING.md); the pose is read from the frames (SEI or trailer), control still goes through --signaling. Several Janus servers with the room (a cascade's edges), comma-separated (janus:ws://A:8188/,ws://B:8188/): one picked at random, the next when it fails.")
    var sfu: String?
    @Option(help: "Room token, when the signaling server requires one.") var token: String?
    @Option(help: "PEM CA certificate to trust for a wss:// signaling server (default: the system's trust store).")
    var signalingCa: String?
    @Option(help: "expert (may annotate and steer the camera) or viewer.") var role: RoomRole = .expert
    @Option(help: "Peer id of the publisher to watch (default: the room's publisher).") var producer: String?
    @Flag(help: "No window: commands from stdin or --script, status on stderr.") var headless = false
    @Option(help: "Run the commands in this file first (headless).") var script: String?
    @Flag(help: "With --script: quit when the script ends instead of reading stdin.") var exitAfterScript = false
    @Flag(help: "Print events, poses and a status object per second as JSON lines on stdout.") var json = false
    @Option(help: "Where a tap lands: auto (the publisher's depth where its source has depth, else the ground), ground (the y = 0 plane), depth:METRES along the ray, plane:NX,NY,NZ,OFFSET[;…], or publisher (its depth only).")
    var placement = "auto"
    @Option(help: "Hold every control message this many ms before sending (simulates a slow control channel).")
    var controlDelayMs = 0
    @Option(help: "Receive jitter-buffer latency in ms (default: the latency profile's, tuned 50, baseline 200); it rises from there when retransmissions arrive late, up to three retransmission round trips plus 40 ms (at least 200, at most --max-jitter-latency), and comes back after 10 s without loss.")
    var jitterLatency: Int?
    @Option(help: "The most the jitter-buffer latency may rise to, in ms (1000 holds a 300 ms round trip's retransmissions).")
    var maxJitterLatency = 1000
    @Flag(help: "Keep the jitter-buffer latency where it starts, whatever retransmissions need.")
    var fixedJitterLatency = false
    @Option(help: "Where an adapting jitter-buffer latency starts, in ms, until the publisher's echo of our first reception report tells the path's round trip (then that round trip plus 40 ms, at least --jitter-latency); 0 starts at --jitter-latency.")
    var startJitterLatency = 300
    @Option(help: "tuned (ours: 50 ms jitter buffer, frames shown as soon as decoded) or baseline (webrtcbin's defaults: 200 ms jitter buffer, the sink synchronised to the clock).")
    var latencyProfile: LatencyProfile = .tuned
    @Option(help: "Write one JSON line per shown frame here (frame id, capture, decode and shown times, pose hash; headless only).")
    var frameLog: String?
    @OptionGroup var network: NetworkOptions
    @Flag(help: "Copy decoded pictures out so that the `snapshot FILE.png` command can write one (what the expert sees, annotations included).")
    var snapshots = false
    @Option(help: "How the frames carry their pose: headerExtension (an RTP header extension in every packet) or trailer (at the end of each encoded frame, as browsers get it; docs/POSE_WIRE_FORMAT.md).")
    var poseTransport: PoseTransport = .headerExtension
    @Flag(help: "Look for the publisher's annotation marks in the decoded frames: an annotationVisible event per annotation we place, markerReport events on `checkmarkers N`. Taps are then drawn magenta (#FF00FF) so the marks can be found by colour (docs/SUBSCRIBER.md).")
    var checkMarkers = false
    @Option(help: "Benchmarks: compare every sampled decoded frame with the luma the publisher wrote here (its --quality-reference) and print a quality event (PSNR, SSIM).")
    var qualityReference: String?
    @Option(help: "With --quality-reference: the sampled frames are those whose id is a multiple of this (as the publisher's).")
    var qualityEvery = 15
    @OptionGroup var voice: VoiceArguments
    @Option(help: "A/V sync check: pair the publisher's flash frames (its --flash) with the onsets of this tone (its --microphone bursts=HZ) and report each pair's audio-video offset.")
    var avSync: Double?

    mutating func validate() throws {
        if let dir = qualityReference, !QualitySampling.isWritableDirectory(dir) {
            throw ValidationError("--quality-reference \(dir) is not a writable directory: create it first")
        }
        guard qualityEvery >= 1 else { throw ValidationError("--quality-every must be 1 or more, got \(qualityEvery)") }
        guard signaling.hasPrefix("ws://") || signaling.hasPrefix("wss://") else {
            throw ValidationError("--signaling must be a ws:// or wss:// URL, got \(signaling)")
        }
        do { _ = try PlacementOption.parse(placement) } catch { throw ValidationError(error.description) }
        guard (0...10_000).contains(controlDelayMs) else { throw ValidationError("--control-delay-ms must be in 0…10000") }
        if role == .publisher { throw ValidationError("--role must be expert or viewer") }
        if script != nil, !headless { throw ValidationError("--script needs --headless") }
        if frameLog != nil, !headless { throw ValidationError("--frame-log needs --headless (frames are timed at the headless sink)") }
        if let jitterLatency, !(0...10_000).contains(jitterLatency) { throw ValidationError("--jitter-latency must be in 0…10000 ms") }
        if !(50...10_000).contains(maxJitterLatency) { throw ValidationError("--max-jitter-latency must be in 50…10000 ms") }
        if !(0...10_000).contains(startJitterLatency) { throw ValidationError("--start-jitter-latency must be in 0…10000 ms") }
        if let avSync, !(100...8000).contains(avSync) { throw ValidationError("--av-sync takes a tone of 100…8000 Hz") }

    }

    func run() async throws {
        // GStreamer's DTLS key, made while signaling connects rather than when the first peer
        // connects (`GStreamer.prepareDTLS`).
        GStreamer.prepareDTLS()
        var node = SubscriberNodeConfig(signalingURL: signaling)
        node.room = room; node.token = token; node.role = role; node.producerId = producer
        node.signalingTLS = signalingCa.map { SignalingClientTLS(caCertificatePath: $0) }
        node.placement = try PlacementOption.parse(placement)
        node.controlDelay = .milliseconds(controlDelayMs)
        node.media.poseTransport = poseTransport
        if let sfu {
            let urls = sfu.hasPrefix("janus:") ? sfu.dropFirst("janus:".count).split(separator: ",").map(String.init) : []
            guard !urls.isEmpty, urls.allSatisfy({ $0.hasPrefix("ws://") || $0.hasPrefix("wss://") }) else {
                throw ValidationError("--sfu must be janus:ws://HOST:PORT/ (or janus:wss://…; several, comma-separated: janus:ws://A/,ws://B/), got \(sfu)")
            }
            guard let number = UInt64(room), number > 0 else {
                throw ValidationError("--sfu needs --room to be a positive number (Janus's VideoRoom rooms are numbers), got \(room)")
            }
            node.sfu = SubscriberSFUConfig(urls: urls, room: number)
            // The pose is in the frames, whichever the publisher's codec put it in.
            if poseTransport == .headerExtension { node.media.poseTransport = .sei }
        }
        node.media.apply(latencyProfile)
        if let jitterLatency { node.media.rtc.jitterBufferLatencyMs = jitterLatency }
        node.adaptJitterLatency = !fixedJitterLatency
        node.maxJitterLatencyMs = maxJitterLatency
        node.unknownPathJitterLatencyMs = startJitterLatency > 0 ? startJitterLatency : nil
        network.apply(to: &node.media.rtc)
        var voice = try self.voice.options()
        if let avSync, !voice.detectTones.contains(avSync) { voice.detectTones.append(avSync) }
        node.media.voice = voice
        var config = SubscriberAppConfig(node: node)
        config.pushToTalk = self.voice.pushToTalk; config.avSyncHertz = avSync
        config.headless = headless; config.scriptPath = script; config.exitAfterScript = exitAfterScript
        config.json = json; config.frameLogPath = frameLog; config.checkMarkers = checkMarkers; config.snapshots = snapshots
        config.qualitySampling = qualityReference.map { QualitySampling(directory: $0, every: qualityEvery) }
        if let turn = node.media.rtc.turnServer { Task.detached { [json] in await TURNReport.say(turn, out: EventOutput(json: json)) } }
        do throws(AppExit) {
            let app = try SubscriberApp.build(config)
            await app.run()
        } catch {
            ProcessSupport.printError(error.message)
            throw ExitCode(error.code)
        }
    }
}
