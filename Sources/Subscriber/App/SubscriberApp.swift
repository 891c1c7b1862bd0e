import Foundation
import Logging
import NodeOutput
import PoseCastKit
import PoseMedia
import Synchronization

/// Everything `posecast-subscriber` runs, as options already checked: the executable
/// parses its arguments into this, then builds and runs a `SubscriberApp` from it, as a
/// test can.
public struct SubscriberAppConfig: Sendable {
    /// The session node's settings; `build` fills in the media sink, the frame log and
    /// the marker watcher from the fields below.
    public var node: SubscriberNodeConfig
    /// No window: commands from `script` and stdin, status lines instead of a picture.
    public var headless = false
    /// Commands run first (headless).
    public var scriptPath: String?
    /// With `scriptPath`: quit when the script ends instead of reading stdin.
    public var exitAfterScript = false
    public var json = false
    public var frameLogPath: String?
    /// Look for the publisher's annotation marks in the decoded frames (`--check-markers`).
    public var checkMarkers = false
    /// Copy decoded pictures out so that `snapshot PATH` can write one (a copy per frame).
    public var snapshots = false
    /// Compare sampled decoded frames with the publisher's references: a `quality` event each.
    public var qualitySampling: QualitySampling?
    /// Push-to-talk in the window (the space bar talks while held).
    public var pushToTalk = false
    /// Pair the publisher's flash frames with this tone's onsets (`avSync` events).
    public var avSyncHertz: Double?
    /// Where the display check looks for DISPLAY and WAYLAND_DISPLAY.
    public var environment = ProcessInfo.processInfo.environment
    public init(node: SubscriberNodeConfig) { self.node = node }
}

/// The subscriber process: the session node, its commands (stdin, a script or clicks in
/// the window), the once-a-second status and the event output. `build` checks what can
/// fail before anything runs (a display, the frame log); `run` serves until the commands
/// say quit, the task is cancelled or SIGINT/SIGTERM arrives.
public final class SubscriberApp: Sendable {
    public let node: SubscriberNode
    let out: EventOutput
    let config: SubscriberAppConfig
    private let frames: FrameLog?
    /// `snapshot PATH` (with `config.snapshots` or `config.checkMarkers`).
    let snapshot: PictureSnapshot?
    /// The window's input state (double clicks, the focus point, the HUD).
    let windowControls = Mutex(WindowControls())
    /// Quit asked from the window (a key, its close button).
    private let quitRequests: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)
    /// The one window of the run (X11), which every session's picture is drawn into;
    /// nil headless, or where no X display opens (then each session's sink makes its own).
    let window: ExpertWindow?

    private init(node: SubscriberNode, out: EventOutput, config: SubscriberAppConfig, frames: FrameLog?,
                 snapshot: PictureSnapshot?, window: ExpertWindow?) {
        self.node = node; self.out = out; self.config = config; self.frames = frames; self.snapshot = snapshot
        self.window = window
        quitRequests = AsyncStream.makeStream(of: Void.self)
    }

    func requestQuit() { quitRequests.continuation.yield() }

    public static func build(_ config: SubscriberAppConfig) throws(AppExit) -> SubscriberApp {
        func failure(_ text: String) -> AppExit { .error("posecast-subscriber", text) }
        if !config.headless, config.environment["DISPLAY"] == nil, config.environment["WAYLAND_DISPLAY"] == nil {
            throw failure("no display (DISPLAY/WAYLAND_DISPLAY unset); use --headless")
        }
        let out = EventOutput(json: config.json)
        var nodeConfig = config.node
        nodeConfig.media.sink = config.headless ? .discard : .display
        let frames: FrameLog?
        do throws(FrameLogError) { frames = try config.frameLogPath.map { path throws(FrameLogError) in try FrameLog(path: path) } } catch {
            throw failure("\(error)")
        }
        if let frames { nodeConfig.media.onShown = { frames.record($0) } }
        if let sampling = config.qualitySampling {
            nodeConfig.media.qualitySampling = sampling
            nodeConfig.media.onQuality = { q in
                out.event(.quality, ["frameId": Int(q.frameID), "width": q.width, "height": q.height,
                                     "psnrDb": (q.psnrDB * 100).rounded() / 100, "ssim": (q.ssim * 10000).rounded() / 10000],
                          human: String(format: "quality of frame %u (%dx%d): PSNR %.2f dB, SSIM %.4f", q.frameID, q.width, q.height, q.psnrDB, q.ssim))
            }
        }
        var snapshot: PictureSnapshot?
        if config.snapshots || config.checkMarkers {
            snapshot = PictureSnapshot { result in
                switch result {
                case let .success((path, frameId)):
                    out.event(.snapshot, ["path": path, "frameId": frameId.map { Int($0) } as Any],
                              human: "snapshot: \(path)" + (frameId.map { " (frame \($0))" } ?? ""))
                case .failure(let error):
                    out.event(.commandError, ["message": error.description], human: "error: \(error)")
                }
            }
        }
        let watcher = config.checkMarkers ? MarkerWatcher { event in out.event(event.name, event.fields, human: event.human) } : nil
        nodeConfig.markerWatcher = watcher
        if watcher != nil || snapshot != nil {
            nodeConfig.media.onPicture = { [snapshot] picture in
                watcher?.observe(picture)
                snapshot?.observe(picture)
            }
        }
        let sync = config.avSyncHertz.map { AVSyncMeter(hertz: $0) { pair in avSyncEvent(pair, out: out) } }
        if let sync { nodeConfig.media.onFlash = { sync.flash(captureNanos: $0, shownNanos: $1) } }
        nodeConfig.media.onTone = { change in
            toneEvent(change, out: out)
            sync?.tone(change)
        }
        // Window input needs the app, which needs the node, which needs the input handler
        // in its config: the box is filled right after the app is made.
        let box = Mutex<SubscriberApp?>(nil)
        nodeConfig.media.onWindowInput = { input in box.withLock { $0 }?.handle(input) }
        var window: ExpertWindow?
        // POSECAST_WINDOW=sink: no window of ours; each session's GL sink opens its own
        // (cheap with a GPU; scripts/bench-window-cpu compares the two).
        if !config.headless, config.environment["DISPLAY"] != nil, config.environment["POSECAST_WINDOW"] != "sink" {
            window = ExpertWindow(title: Self.windowTitle(config.node)) { input in box.withLock { $0 }?.handle(input) }
            if let window {
                nodeConfig.media.window = window
                window.setBackdrop("waiting for the publisher in room \(config.node.room)…")
            } else {
                out.event(.windowNotice, ["message": "no window of our own on \(config.environment["DISPLAY"] ?? ""): no display, or a screen that is not 24-bit TrueColor"],
                          human: "window: no X window of our own; each session's video sink opens one")
            }
        }
        let node = SubscriberNode(config: nodeConfig, logger: Logger(label: "posecast.subscriber")) { [watcher = nodeConfig.markerWatcher] event in
            watcher?.observe(event)
            out.subscriberEvent(event)
            if case .connected = event, let app = box.withLock({ $0 }) {
                app.reportVoice()
                // A new session: the last one's "session ended" line is history.
                app.noteForHUD("")
            }
            if let line = Self.hudLine(for: event) { box.withLock { $0 }?.noteForHUD(line) }
        }
        let app = SubscriberApp(node: node, out: out, config: config, frames: frames, snapshot: snapshot, window: window)
        box.withLock { $0 = app }
        app.windowControls.withLock { $0.pushToTalk = config.pushToTalk; $0.muted = config.node.media.voice?.startMuted ?? false }
        return app
    }

    /// What the session's voice does (once connected): two-way, listen only, …
    func reportVoice() {
        guard let voice = node.voice else { return }
        for message in voice.unavailable { out.event(.voiceUnavailable, ["message": message], human: "voice: \(message)") }
        out.event(.voice, ["enabled": true, "mode": voice.mode, "echoCancellation": voice.echoCancelling, "muted": voice.isMuted],
                  human: "voice: \(voice.mode)" + (voice.echoCancelling ? ", echo cancellation on" : "") + (voice.isMuted ? ", muted" : ""))
    }

    /// Serves until the commands say quit (headless), the calling task is cancelled or
    /// SIGINT/SIGTERM arrives. The node, the signal and quit watches, the status and the
    /// commands are children of one task group: whichever ends the run cancels the others,
    /// and the window closes once every one has returned.
    public func run() async {
        let node = self.node, out = self.out, config = self.config, quitRequests = self.quitRequests
        let signals = ProcessSupport.terminationSignals()
        // Each child says whether its end ends the run.
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await node.run(); return true }
            group.addTask { for await _ in signals { return true }; return false }
            group.addTask { for await _ in quitRequests.stream { return true }; return false }
            group.addTask {
                // Cancelled while asleep: no status line after the run ends.
                while (try? await Task.sleep(for: .seconds(1))) != nil {
                    node.tickFrameWindow()
                    out.subscriberStatus(node)
                    self.refreshHUD()
                }
                return false
            }
            group.addTask {
                let quit = await self.runCommands(script: config.scriptPath, readStdin: !config.exitAfterScript)
                // Headless, the commands are the only way in: their end (quit, end of stdin) ends
                // the run. With a window, `quit` does; the end of stdin leaves the window open.
                return config.headless || quit
            }
            while let endsRun = await group.next() {
                if endsRun { break }
            }
            group.cancelAll()
        }
        window?.close()
        frames?.close()
        out.event(.stopped, [:], human: "stopped")
    }
}

extension SubscriberApp {
    /// The window's title: the program, the role and the room (a window list or a task
    /// bar names it; its class is `posecast-subscriber`, `PoseCast`).
    static func windowTitle(_ node: SubscriberNodeConfig) -> String {
        "PoseCast — \(node.role.rawValue) in room \(node.room)"
    }

    /// The line an event leaves in the window's HUD (replies, refusals, errors, the
    /// session's end), or nil.
    static func hudLine(for event: SubscriberNodeEvent) -> String? {
        switch event {
        case .reply(.ack(let id, let annotationId, _)): "← ack \(id)" + (annotationId.map { " (annotation \($0))" } ?? "")
        case .reply(.error(let e)): "← refused \(e.id ?? ""): \(e.message)"
        case .error(let message): "error: \(message)"
        case let .sessionEnded(_, reason): "session ended: \(reason)"
        case .annotationPlaced(let a): EventOutput.placedLine(a)
        default: nil
        }
    }
}
