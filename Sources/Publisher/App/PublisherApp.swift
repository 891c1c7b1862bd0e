import Foundation
import Logging
import SFU
import NodeOutput
import PoseCastKit
import PoseMedia
import RTCSession
import Signaling
import Synchronization
import TagTracking

/// Everything `posecast-publisher` runs, as options already checked: the executable
/// parses its arguments into this, then builds and runs a `PublisherApp` from it, as a
/// test can.
public struct PublisherAppConfig: Sendable {
    public var media = PublisherMediaConfig()
    /// The pose of each frame: a parsed `--pose` with its speed and camera.
    public var pose: PoseSourceSpec = .orbit
    public var poseSpeed: Double = 1
    /// With the synthetic camera and `--pose apriltag`: the path it renders along (the
    /// frames' poses come from the tags it paints).
    public var scenePath: PoseSourceSpec = .orbit
    public var camera = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4.0 / 3.0)
    /// The camera as `posecast-calibrate` measured it (`--intrinsics FILE`): its lens
    /// distortion is taken out of a real camera's pictures before anything reads them
    /// (`PictureUndistortion`), out of the tags' corners on the synthetic camera.
    public var calibration: CalibrationFile?
    /// A signaling server to register with; nil: embed one listening on `listen`.
    public var signalingURL: String?
    public var listen = (host: "127.0.0.1", port: 8443)
    /// Web pages that may use the embedded server besides its own (`--allow-origin`).
    public var origins: OriginPolicy = .sameOriginOnly
    /// The embedded server's limits (`ServerLimitOptions`); its host, port, origins and
    /// room sizes are set from the rest of this configuration.
    public var embeddedServer = SignalingServerConfiguration()
    public var room = "default"
    public var token: String?
    public var signalingCA: String?
    public var json = false
    public var frameLogPath: String?
    /// `--anchors`: the annotations kept across sessions (`AnchorFile`).
    public var anchorsPath: String?
    /// The node's session bounds (`PublisherNodeConfig`).
    public var setupTimeout: Duration = .seconds(15)
    public var maxSessionsPerConsumer = 4
    public var maxSessions = 16
    /// Publish through Janus as well (`--sfu`); nil: subscribers connect to us directly only.
    public var sfu: PublisherSFUConfig?
    public init() {}
}

/// What the signaling server said when it refused us for good (a token, a full room, a role).
final class Refusal: Sendable {
    let reason = Mutex<String?>(nil)
}

/// The publisher process: camera pipeline, optional pose feed, optional embedded
/// signaling server, the session node, and the once-a-second status with stall and
/// fatal-error handling. `build` sets it all up (failing with exit code 2 and a precise
/// message); `run` serves until the task is cancelled or SIGINT/SIGTERM arrives.
public final class PublisherApp: Sendable {
    public let media: PublisherMedia
    public let node: PublisherNode
    public let url: String
    private let out: EventOutput
    private let server: SignalingServer?
    private let feed: PoseFeedReceiver?
    /// `--pose apriltag`: the frames' poses from their tags.
    private let tags: TagPoseTracker?
    private let store: LivePoseStore
    private let frames: FrameLog?
    private let fatal: Refusal
    /// `--pose stdin`: stdin is the pose feed, not commands.
    private let stdinCarriesPoses: Bool
    private let sfu: PublisherSFUConfig?

    private init(out: EventOutput, media: PublisherMedia, node: PublisherNode, url: String,
                 server: SignalingServer?, feed: PoseFeedReceiver?, tags: TagPoseTracker?, store: LivePoseStore, frames: FrameLog?,
                 fatal: Refusal, stdinCarriesPoses: Bool, sfu: PublisherSFUConfig?) {
        self.out = out; self.media = media; self.node = node; self.url = url
        self.server = server; self.feed = feed; self.tags = tags; self.store = store; self.frames = frames
        self.fatal = fatal; self.stdinCarriesPoses = stdinCarriesPoses; self.sfu = sfu
    }

    public static func build(_ config: PublisherAppConfig) async throws(AppExit) -> PublisherApp {
        func failure(_ text: String) -> AppExit { .error("posecast-publisher", text) }
        let out = EventOutput(json: config.json)
        var mediaConfig = config.media
        let frames: FrameLog?
        do throws(FrameLogError) { frames = try config.frameLogPath.map { path throws(FrameLogError) in try FrameLog(path: path) } } catch {
            throw failure("\(error)")
        }
        if let frames { mediaConfig.onEncoded = { frames.record($0) } }
        let anchors = config.anchorsPath.map { path in
            AnchorFile(path: path) { reason in
                out.event(.anchorsNotSaved, ["message": reason], human: "annotations not saved: \(reason)")
            }
        }
        let kept: [Annotation]
        do throws(AnchorFileError) { kept = try anchors?.load() ?? [] } catch { throw failure("\(error)") }
        mediaConfig.onTone = { toneEvent($0, out: out) }
        let store = LivePoseStore()
        let provider: any PoseProvider
        do {
            // The synthetic camera still moves along a path when its frames' poses are read
            // from the tags it paints: that path is their ground truth.
            let renderPose: PoseSourceSpec
            if case .apriltag = config.pose, mediaConfig.source == .synthetic { renderPose = config.scenePath } else { renderPose = config.pose }
            provider = try renderPose.makeProvider(speed: config.poseSpeed, intrinsics: config.camera,
                                                   startNanos: WallClock.nowNanos(), store: store)
        } catch {
            throw failure("\(error)")
        }
        // A calibrated lens (`--intrinsics FILE` with distortion): every captured picture of
        // a real camera is undistorted first, so the picture sent agrees with the pinhole
        // intrinsics sent with it (a tap near its edge lands where it points). The
        // synthetic camera renders a pinhole picture: nothing to take out.
        if let lens = config.calibration?.distortion, !lens.isNone, mediaConfig.source != .synthetic {
            let undistortion = PictureUndistortion(distortion: lens, intrinsics: config.camera)
            mediaConfig.preparePicture = { undistortion.apply(to: $0) }
        }
        var tags: TagPoseTracker?
        if case .apriltag(let path) = config.pose {
            let tracker: TagPoseTracker
            do {
                // On the synthetic camera the tags are its scene's field unless a map is given.
                let synthetic = mediaConfig.source == .synthetic
                let map = try path.map { path throws(TagMapError) in try TagMap.load(path: path) } ?? (synthetic ? .sceneField : .standard)
                // A real camera's picture is undistorted before the tracker sees it (above);
                // the synthetic camera's is a pinhole's, its corners corrected if asked.
                tracker = try TagPoseTracker(map: map, intrinsics: config.camera, lens: synthetic ? config.calibration?.distortion : nil)
                if synthetic, mediaConfig.sceneTags == nil { mediaConfig.sceneTags = map }
            } catch {
                throw failure("--pose \(config.pose): \(error)")
            }
            mediaConfig.framePoseSource = { frame, id, t in tracker.pose(frame, frameID: id, captureTimeNanos: t) }
            // The synthetic camera still renders along a known path (ahead of the capture
            // instant when asked); a real camera's frames are tagged as they arrive.
            if mediaConfig.source != .synthetic { mediaConfig.renderAhead = false }
            tags = tracker
        }
        var feed: PoseFeedReceiver?
        // A live feed's pose of a future instant is unknown: render ahead only along a trajectory.
        if PoseFeedReceiver.Transport(config.pose) != nil { mediaConfig.renderAhead = false }
        if let transport = PoseFeedReceiver.Transport(config.pose) {
            let receiver = PoseFeedReceiver(transport: transport, store: store) { message in
                out.event(.poseFeed, ["message": message], human: message)
            }
            do { try await receiver.start() } catch {
                throw failure("pose feed \(config.pose): \(error)")
            }
            if let port = receiver.boundPort { out.event(.poseFeedListening, ["port": port], human: "pose feed: listening on UDP port \(port)") }
            feed = receiver
        }
        // A picture as the camera is decoded once first: a file no decoder reads is named
        // at start, not found by the camera's watchdog restarting the source for ever.
        if case .image(let path) = mediaConfig.source {
            do throws(StillImage.LoadError) { try await StillImage.check(path) } catch {
                await feed?.stop()
                throw failure("--source image: \(error)")
            }
        }
        if case .video(let path) = mediaConfig.source {
            do throws(RTCError) { try await VideoFileSource.check(path) } catch {
                await feed?.stop()
                throw failure("--source video: \(error)")
            }
        }
        let media: PublisherMedia
        do {
            media = try PublisherMedia(config: mediaConfig) { id, t in provider.pose(frameID: id, captureTimeNanos: t) }
            try await media.start()
        } catch {
            await feed?.stop()
            throw failure("\(error)")
        }
        // The effects asked for at start: a missing model or picture is said, and the
        // video goes on without that effect.
        await Self.startEffects(config.media.effects, on: media.effects, out: out)
        reportVoice(media, out: out)
        var server: SignalingServer?
        let url: String
        if let signaling = config.signalingURL {
            url = signaling
        } else {
            var serverConfig = config.embeddedServer
            serverConfig.host = config.listen.host; serverConfig.port = config.listen.port
            serverConfig.origins = config.origins
            // The room holds the publisher and as many subscribers as it serves sessions: the
            // hub's default (16 peers) would otherwise be a second, lower cap with --sfu.
            serverConfig.limits.maxPeersPerRoom = max(serverConfig.limits.maxPeersPerRoom, config.maxSessions + 1)
            serverConfig.limits.maxSessionsPerProducer = max(serverConfig.limits.maxSessionsPerProducer, config.maxSessions)
            do {
                let started = try await SignalingServer.start(serverConfig, logger: Logger(label: "posecast.signaling"))
                server = started
                url = started.url
            } catch {
                await media.shutDown()
                await feed?.stop()
                throw failure("cannot listen on \(config.listen.host):\(config.listen.port): \(error)")
            }
            out.event(.listening, ["url": url], human: "signaling: listening on \(url) (embedded)")
        }
        var nodeConfig = PublisherNodeConfig(signalingURL: url)
        nodeConfig.room = config.room; nodeConfig.token = config.token
        nodeConfig.signalingTLS = config.signalingCA.map { SignalingClientTLS(caCertificatePath: $0) }
        nodeConfig.setupTimeout = config.setupTimeout
        nodeConfig.maxSessionsPerConsumer = config.maxSessionsPerConsumer; nodeConfig.maxSessions = config.maxSessions
        nodeConfig.publishesToSFU = config.sfu != nil
        let fatal = Refusal()
        let node = PublisherNode(media: media, config: nodeConfig, logger: Logger(label: "posecast.publisher")) { event in
            out.publisherEvent(event)
            // A busy room is not fatal (the node retries, `roomBusy`); a refused token or role is.
            if case let .serverError(code, details) = event, code == .unauthorized || code == .wrongRole {
                fatal.reason.withLock { $0 = details }
            }
        }
        if let anchors {
            node.board.restore(kept)
            node.board.onChange { anchors.save($0) }
            out.event(.anchorsLoaded, ["path": anchors.path, "count": kept.count, "ids": kept.map(\.id)],
                      human: "annotations kept in \(anchors.path): \(kept.isEmpty ? "none yet" : kept.map(\.id).joined(separator: ", "))")
        }
        let stdinPoses: Bool = if case .stdin = PoseFeedReceiver.Transport(config.pose) { true } else { false }
        return PublisherApp(out: out, media: media, node: node, url: url, server: server, feed: feed, tags: tags,
                            store: store, frames: frames, fatal: fatal, stdinCarriesPoses: stdinPoses, sfu: config.sfu)
    }

    /// Serves until the calling task is cancelled or SIGINT/SIGTERM arrives; throws with
    /// exit code 3 when the signaling server refuses us for good.
    ///
    /// Everything it runs beside the pipeline is a child of one task group: the session
    /// node, the publication into an SFU, congestion control, stdin's commands, the signal
    /// watch and the once-a-second status. A signal, a refusal or the caller's cancellation
    /// cancels them all, and the pipeline shuts down only once every one has returned.
    public func run() async throws(AppExit) {
        let media = self.media, out = self.out
        // Camera pipeline errors are reported even with no subscriber (a session's peer
        // reports them too, but there may be none yet).
        media.onPipelineProblem { text, isError in
            out.event(isError ? .pipelineError : .pipelineWarning, ["message": text],
                      human: (isError ? "camera pipeline error: " : "camera pipeline warning: ") + text)
        }
        // A microphone or speaker lost under us (its sound server gone): said once, tried again each second.
        media.voice?.watchDevices { change in
            out.event(.voiceDevice, ["device": change.device, "state": change.lost ? "lost" : "back", "message": change.message],
                      human: change.lost ? "voice: \(change.device) lost (\(change.message)); trying it again each second"
                                         : "voice: \(change.device) back")
        }
        let signals = ProcessSupport.terminationSignals()
        let refused: String? = await withTaskGroup(of: Ending.self) { group in
            group.addTask { await self.node.run(); return .childDone }
            if let sfu = self.sfu {
                group.addTask {
                    let link = PublisherSFULink(config: sfu, node: self.node, logger: Logger(label: "posecast.publisher.sfu")) { event in
                        Self.report(event, out: out)
                    }
                    await link.run()
                    return .childDone
                }
                // The experts' voices through Janus, when the field has a voice at all.
                if let voice = media.voice, let voiceRoom = JanusVideoRoom.voiceRoom(of: sfu.room) {
                    group.addTask {
                        let voices = PublisherSFUVoices(url: sfu.url, room: voiceRoom, node: self.node, voice: voice,
                                                        logger: Logger(label: "posecast.publisher.sfuvoices")) { event in
                            Self.report(event, out: out)
                        }
                        await voices.run()
                        return .childDone
                    }
                }
            }
            // Congestion control, four times a second (receivers NACK within tens of ms).
            group.addTask {
                while (try? await Task.sleep(for: .milliseconds(250))) != nil {
                    media.adaptBitrate(nowNanos: MonotonicClock.nanos())
                }
                return .childDone
            }
            // stdin takes commands (`link`, `background`, `framing`, `zoom`, `follow`), unless
            // it carries the poses. Its end (EOF) stops nothing else.
            if !self.stdinCarriesPoses {
                group.addTask {
                    for await line in ProcessSupport.stdinLines() { await Self.command(line, media: media, node: self.node, out: out) }
                    return .childDone
                }
            }
            group.addTask {
                for await _ in signals { return .stop(refused: nil) }
                return .childDone
            }
            group.addTask { await self.reportStatus() }
            var refused: String?
            while let ending = await group.next() {
                if case .stop(let reason) = ending { refused = reason; break }
            }
            group.cancelAll()
            return refused
        }
        await media.shutDown()
        await feed?.stop()
        await server?.stop()
        frames?.close()
        if let refused {
            throw AppExit.error("posecast-publisher", "the signaling server refused us: \(refused)", code: 3)
        }
        out.event(.stopped, [:], human: "stopped")
    }

    /// How one of `run`'s children ended.
    private enum Ending: Sendable {
        /// It is done, and the others go on (stdin at EOF, say).
        case childDone
        /// Everything stops; `refused`: the signaling server's refusal, when that is why.
        case stop(refused: String?)
    }

    /// The once-a-second status, the source watchdog and the lost devices' retries, until
    /// cancelled; stops everything when the signaling server has refused us for good.
    private func reportStatus() async -> Ending {
        var status = PublisherStatusSampler(media: media)
        while (try? await Task.sleep(for: .seconds(1))) != nil {
            if let reason = fatal.reason.withLock({ $0 }) { return .stop(refused: reason) }
            media.voice?.retryLostDevices()
            let sample = status.sample(node: node, feed: feed == nil ? nil : store.statistics, tags: tags?.stats)
            await Self.act(on: sample, media: media, out: out)
            out.status(sample.fields, human: sample.human)
            if media.config.adaptBitrate { Self.reportCongestion(media.congestion, out: out) }
        }
        return .childDone
    }

    /// Says what the source watchdog saw, and restarts the source path when it asks.
    private static func act(on sample: PublisherStatusSampler.Sample, media: PublisherMedia, out: EventOutput) async {
        let facts = "camera pipeline \(sample.pipeline), \(sample.framesTagged) frames so far"
        switch sample.watchdog {
        case .none:
            return
        case let .stalled(seconds, restart):
            out.event(.sourceStalled, ["seconds": seconds, "framesTagged": sample.framesTagged, "pipeline": sample.pipeline,
                                       "restarting": restart != nil],
                      human: "error: no frame from the camera for \(seconds) s (\(facts))"
                          + (restart != nil ? "; restarting the source path" : ""))
            if let attempt = restart { await Self.restart(media, attempt: attempt, seconds: seconds, out: out) }
        case let .restart(attempt, seconds):
            await Self.restart(media, attempt: attempt, seconds: seconds, out: out)
        case let .recovered(seconds, restarts):
            out.event(.sourceRecovered, ["silentSeconds": seconds, "restarts": restarts],
                      human: "camera: frames flow again after \(seconds) s without (\(restarts) restart(s) of the source path)")
        }
    }

    /// One `congestion` event per subscriber (JSON only: the status line has the encoder's rate).
    private static func reportCongestion(_ snapshots: [CongestionSnapshot], out: EventOutput) {
        for c in snapshots {
            var fields: [String: Any] = ["peer": c.peer, "estimateKbps": c.estimateKbps, "encoderKbps": c.encoderKbps,
                                         "reason": c.reason, "transportFeedback": c.transportFeedback]
            if let v = c.sentKbps { fields["sentKbps"] = Int(v.rounded()) }
            if let v = c.loss { fields["loss"] = (v * 1000).rounded() / 1000 }
            if let v = c.roundTripMs { fields["rttMs"] = (v * 10).rounded() / 10 }
            if let v = c.baseRoundTripMs { fields["baseRttMs"] = (v * 10).rounded() / 10 }
            if let v = c.rembKbps { fields["rembKbps"] = Int(v.rounded()) }
            if let v = c.queueMs { fields["queueMs"] = v }
            if let v = c.delayTrend { fields["delayTrend"] = v }
            if c.overusing { fields["overusing"] = true }
            if let v = c.pacedPackets { fields["pacedPackets"] = Int(v) }
            if c.transportFeedbackRefused > 0 { fields["transportFeedbackRefused"] = Int(c.transportFeedbackRefused) }
            if let v = c.link { fields["linkOffered"] = Int(v.offeredTotal); fields["linkDropped"] = Int(v.droppedTotal) }
            out.event(.congestion, fields, human: nil)
        }
    }

    /// One stdin line: `link …` or an effect command (`PublisherApp+Effects.swift`).
    private static func command(_ line: String, media: PublisherMedia, node: PublisherNode, out: EventOutput) async {
        let verb = line.split(separator: " ").first.map(String.init) ?? ""
        switch verb {
        case "": return
        case "link": linkCommand(line, media: media, node: node, out: out)
        case "background", "framing", "zoom", "follow": await effectCommand(line, media: media, node: node, out: out)
        case "mute", "unmute", "talk", "over": voiceCommand(verb, media: media, node: node, out: out)
        default:
            out.event(.commandError, ["line": line, "message": "unknown command \(verb): the publisher takes link, background, framing, zoom and follow"],
                      human: "error: unknown command \(verb): the publisher takes `link [SESSION] SPEC`, `background SPEC`, `framing off|face|person`, `zoom X Y FACTOR` and `follow ANNOTATION [FACTOR]|off`")
        }
    }

    /// `link [SESSION] rate=KBPS,loss=PERCENT,delay=MS,bucket=KBIT` (any subset; the rest
    /// back to perfect; `none`: perfect) on stdin: new conditions on every subscriber's
    /// link at once, or on one session's only.
    private static func linkCommand(_ line: String, media: PublisherMedia, node: PublisherNode, out: EventOutput) {
        var words = line.split(separator: " ").map(String.init)
        guard words.first == "link" else { return }
        guard media.config.rtc.linkConditions != nil else {
            out.event(.commandError, ["line": line, "message": "link: this publisher runs without a simulated link (start it with --link or --loss)"],
                      human: "error: link: this publisher runs without a simulated link (start it with --link or --loss)")
            return
        }
        words.removeFirst()
        let session = words.count == 2 ? words.removeFirst() : nil
        do throws(RTCError) {
            guard words.count <= 1 else { throw .invalidArgument("link takes [SESSION] SPEC, got \(line)") }
            let conditions = try LinkConditions(spec: words.first ?? "")
            if let session { try node.setLinkConditions(conditions, session: session) } else { try media.setLinkConditions(conditions) }
            var fields: [String: Any] = ["link": conditions.description]
            if let session { fields["sessionId"] = session }
            out.event(.linkChanged, fields, human: "link\(session.map { " (session \($0))" } ?? ""): \(conditions.description)")
        } catch {
            out.event(.commandError, ["line": line, "message": "\(error)"], human: "error: link: \(error)")
        }
    }

    private static func restart(_ media: PublisherMedia, attempt: Int, seconds: Int, out: EventOutput) async {
        let elements = await media.restartSourcePath()
        out.event(.sourceRestarted, ["attempt": attempt, "silentSeconds": seconds, "elements": elements],
                  human: "camera: restarted the source path (\(elements.joined(separator: " → "))), attempt \(attempt), after \(seconds) s without a frame")
    }
}
