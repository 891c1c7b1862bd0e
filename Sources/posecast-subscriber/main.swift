import ArgumentParser
import Foundation
import Logging
import PoseCastKit
import PoseMedia
import Subscriber
import NodeOutput
import RTCSession
import Signaling
import Synchronization

extension RoomRole: ExpressibleByArgument {}
extension LatencyProfile: ExpressibleByArgument {}

/// The remote expert's side: receive, decode and show the field camera; taps become
/// annotations anchored in the world from the pose of the frame on screen.
@main
struct Subscriber: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "posecast-subscriber",
        abstract: "Watch a PoseCast publisher and annotate what it sees.",
        discussion: "Headless commands (stdin or --script):\n" + SubscriberCommand.help)

    @Option(help: "Signaling server URL.") var signaling = "ws://127.0.0.1:8443/"
    @Option(help: "Room to join.") var room = "default"
    @Option(help: "Room token, when the signaling server requires one.") var token: String?
    @Option(help: "PEM CA certificate to trust for a wss:// signaling server (default: the system's trust store).")
    var signalingCa: String?
    @Option(help: "expert (may annotate and steer the camera) or viewer.") var role: RoomRole = .expert
    @Option(help: "Peer id of the publisher to watch (default: the room's publisher).") var producer: String?
    @Flag(help: "No window: commands from stdin or --script, status on stderr.") var headless = false
    @Option(help: "Run the commands in this file first (headless).") var script: String?
    @Flag(help: "With --script: quit when the script ends instead of reading stdin.") var exitAfterScript = false
    @Flag(help: "Print events, poses and a status object per second as JSON lines on stdout.") var json = false
    @Option(help: "Where a tap lands: ground (the y = 0 plane), depth:METRES along the ray, plane:NX,NY,NZ,OFFSET[;…], or publisher (its depth).")
    var placement = "ground"
    @Option(help: "Hold every control message this many ms before sending (simulates a slow control channel).")
    var controlDelayMs = 0
    @Option(help: "Receive jitter-buffer latency in ms (default: the latency profile's, tuned 50, baseline 200).")
    var jitterLatency: Int?
    @Option(help: "tuned (ours: 50 ms jitter buffer, frames shown as soon as decoded) or baseline (webrtcbin's defaults: 200 ms jitter buffer, the sink synchronised to the clock).")
    var latencyProfile: LatencyProfile = .tuned
    @Option(help: "Write one JSON line per shown frame here (frame id, capture, decode and shown times, pose hash; headless only).")
    var frameLog: String?
    @Option(help: "STUN server, stun://HOST:PORT.") var stun: String?
    @Flag(help: "Look for the publisher's annotation marks in the decoded frames: an annotationVisible event per annotation we place, markerReport events on `checkmarkers N`. Taps are then drawn magenta (#FF00FF) so the marks can be found by colour (docs/SUBSCRIBER.md).")
    var checkMarkers = false

    mutating func validate() throws {
        guard signaling.hasPrefix("ws://") || signaling.hasPrefix("wss://") else {
            throw ValidationError("--signaling must be a ws:// or wss:// URL, got \(signaling)")
        }
        do { _ = try PlacementOption.parse(placement) } catch { throw ValidationError(error.description) }
        guard (0...10_000).contains(controlDelayMs) else { throw ValidationError("--control-delay-ms must be in 0…10000") }
        if role == .publisher { throw ValidationError("--role must be expert or viewer") }
        if script != nil, !headless { throw ValidationError("--script needs --headless") }
        if frameLog != nil, !headless { throw ValidationError("--frame-log needs --headless (frames are timed at the headless sink)") }
        if let jitterLatency, !(0...10_000).contains(jitterLatency) { throw ValidationError("--jitter-latency must be in 0…10000 ms") }
    }

    func run() async throws {
        let out = EventOutput(json: json)
        if !headless, ProcessInfo.processInfo.environment["DISPLAY"] == nil,
           ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"] == nil {
            ProcessSupport.printError("posecast-subscriber: error: no display (DISPLAY/WAYLAND_DISPLAY unset); use --headless")
            throw ExitCode(2)
        }
        var config = SubscriberNodeConfig(signalingURL: signaling)
        config.room = room; config.token = token; config.role = role; config.producerId = producer
        config.signalingTLS = signalingCa.map { SignalingClientTLS(caCertificatePath: $0) }
        config.placement = try PlacementOption.parse(placement)
        config.controlDelay = .milliseconds(controlDelayMs)
        config.media.sink = headless ? .discard : .display
        config.media.apply(latencyProfile)
        if let jitterLatency { config.media.rtc.jitterBufferLatencyMs = jitterLatency }
        let frames: FrameLog?
        do throws(FrameLogError) { frames = try frameLog.map { path throws(FrameLogError) in try FrameLog(path: path) } } catch {
            ProcessSupport.printError("posecast-subscriber: error: \(error)")
            throw ExitCode(2)
        }
        if let frames { config.media.onShown = { frames.record($0) } }
        config.media.rtc.stunServer = stun
        if checkMarkers {
            let watcher = MarkerWatcher { event in out.event(event.name, event.fields, human: event.human) }
            config.markerWatcher = watcher
            config.media.onPicture = { watcher.observe($0) }
        }

        let nodeBox = NodeBox()
        config.media.onClick = { button, point in
            // Left click: annotate; right click: focus there.
            guard let node = nodeBox.node else { return }
            let command: SubscriberCommand = button == 3 ? .focus(point, .tapToAutoFocus) : .tap(point, label: "")
            Task { _ = await Self.execute(command, node: node, out: out) }
        }
        let node = SubscriberNode(config: config, logger: Logger(label: "posecast.subscriber")) { [watcher = config.markerWatcher] event in
            watcher?.observe(event)
            Self.report(event, out: out)
        }
        nodeBox.node = node
        let runner = Task { await node.run() }
        let signals = ProcessSupport.terminationSignals()
        let stopper = Task { for await _ in signals { runner.cancel(); return } }
        let statusTask = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                node.tickFrameWindow()
                Self.printStatus(node, out: out)
            }
        }
        let commands = Task {
            if headless {
                await Self.runCommands(script: script, readStdin: !exitAfterScript, node: node, out: out)
                runner.cancel()
            }
        }
        _ = await runner.value
        commands.cancel(); statusTask.cancel(); stopper.cancel()
        frames?.close()
        out.event("stopped", [:], human: "stopped")
    }

    final class NodeBox: @unchecked Sendable { var node: SubscriberNode? }

    static func runCommands(script: String?, readStdin: Bool, node: SubscriberNode, out: EventOutput) async {
        if let script {
            guard let text = try? String(contentsOfFile: script, encoding: .utf8) else {
                out.event("error", ["message": "cannot read script \(script)"], human: "error: cannot read script \(script)")
                return
            }
            for line in text.split(whereSeparator: \.isNewline) {
                if await !execute(line: String(line), node: node, out: out) { return }
            }
        }
        guard readStdin else { return }
        for await line in stdinLines() {
            if await !execute(line: line, node: node, out: out) { return }
        }
    }

    /// Lines of stdin, read on a thread of their own (readLine blocks).
    static func stdinLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine(strippingNewline: true) { continuation.yield(line) }
                continuation.finish()
            }
            thread.start()
        }
    }

    /// Runs one line; false when the session should end (`quit`).
    static func execute(line: String, node: SubscriberNode, out: EventOutput) async -> Bool {
        do throws(CommandError) {
            guard let command = try SubscriberCommand.parse(line) else { return true }
            return await execute(command, node: node, out: out)
        } catch {
            out.event("commandError", ["message": error.description, "line": line], human: "error: \(error)")
            return true
        }
    }

    static func execute(_ command: SubscriberCommand, node: SubscriberNode, out: EventOutput) async -> Bool {
        do throws(ControlError) {
            switch command {
            case let .tap(point, label): try node.tap(at: point, label: label, color: tapColor(node))
            case let .tapNaive(point, label): try node.tap(at: point, label: label, color: tapColor(node), naive: true)
            case let .tapWorld(p, naive, label): try node.tap(world: p, label: label, color: tapColor(node), naive: naive)
            case let .focus(point, mode): try node.send(.focus(point: point, mode: mode))
            case .meter(let request): try node.send(.meter(request))
            case .lock: try node.send(.lock(routines: MeteringRoutine.allCases))
            case .unlock: try node.send(.unlock(routines: MeteringRoutine.allCases))
            case .remove(let id): try node.send(.removeAnnotation(annotationId: id))
            case .clear: try node.send(.clearAnnotations)
            case .pose: printPose(node, out: out)
            case .status: printStatus(node, out: out)
            case .checkMarkers(let frames):
                guard let watcher = node.config.markerWatcher else {
                    throw ControlError(id: nil, code: .unsupported, message: "checkmarkers needs --check-markers")
                }
                do throws(CommandError) { try watcher.checkMarkers(frames: frames) } catch {
                    out.event("commandError", ["message": error.description], human: "error: \(error)")
                }
            case .sleep(let seconds): try? await Task.sleep(for: .seconds(seconds))
            case .quit: return false
            }
        } catch {
            out.event("commandError", ["message": error.message, "code": error.code.rawValue], human: "error: \(error.message)")
        }
        return true
    }

    /// Marks are drawn magenta while they are being checked (a colour the scene never shows).
    static func tapColor(_ node: SubscriberNode) -> String {
        node.config.markerWatcher == nil ? "#FF3B30" : MarkerWatcher.markerColor
    }

    static func printPose(_ node: SubscriberNode, out: EventOutput) {
        guard let frame = node.frameWindow.lastFrame else {
            out.event("pose", ["frameId": NSNull()], human: "pose: no frame on screen yet")
            return
        }
        guard let p = frame.pose else {
            out.event("pose", ["frameId": NSNull(), "error": frame.poseError.map { "\($0)" } ?? "no pose"],
                      human: "pose: the frame on screen carries no pose")
            return
        }
        let fields: [String: Any] = [
            "frameId": p.frameID, "captureTimeNs": p.captureTimeNanos,
            "position": [p.position.x, p.position.y, p.position.z].map(Double.init),
            "orientation": [p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w].map(Double.init),
            "intrinsics": [p.intrinsics.fx, p.intrinsics.fy, p.intrinsics.cx, p.intrinsics.cy].map(Double.init),
            "flags": Int(p.flags.rawValue),
        ]
        out.event("pose", fields, human: String(
            format: "pose of frame %u: position (%.3f, %.3f, %.3f) m  orientation (%.4f, %.4f, %.4f, %.4f)  fx %.3f fy %.3f",
            p.frameID, p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y, p.orientation.z,
            p.orientation.w, p.intrinsics.fx, p.intrinsics.fy))
    }

    static func printStatus(_ node: SubscriberNode, out: EventOutput) {
        let w = node.frameWindow
        var fields: [String: Any] = [
            "connected": node.isConnected, "fps": (w.fps * 10).rounded() / 10, "frames": w.framesDecoded,
            "frames_with_pose": w.framesWithPose, "pose_pct": (w.posePercent * 100).rounded() / 100,
            "rejected_poses": node.rejections?.total ?? 0,
        ]
        fields["latency_ms_p50"] = w.latencyMsP50.map { ($0 * 10).rounded() / 10 }
        var scene = ""
        if let st = node.sceneStatus {
            fields.merge(st.statusFields) { _, new in new }
            scene = "  " + st.summary
        }
        out.status(fields, human: String(
            format: "%@  %.1f fps  latency p50 %@  frames %d  with pose %.2f%%",
            node.isConnected ? "connected" : "waiting for the publisher", w.fps,
            w.latencyMsP50.map { String(format: "%.1f ms", $0) } ?? "–", w.framesDecoded, w.posePercent) + scene)
    }

    static func report(_ event: SubscriberNodeEvent, out: EventOutput) {
        switch event {
        case let .signalingConnected(url, peerId):
            out.event("signalingConnected", ["url": url, "peerId": peerId], human: "signaling: connected to \(url) as \(peerId)")
        case .signalingLost(let reason):
            out.event("signalingLost", ["reason": reason], human: "signaling: \(reason); retrying")
        case let .serverError(code, details):
            out.event("serverError", ["code": code?.rawValue ?? "", "details": details], human: "signaling error: \(details)")
        case let .sessionStarted(sessionId, producer):
            out.event("sessionStarted", ["sessionId": sessionId, "producer": producer], human: "session \(sessionId) with \(producer)")
        case .connected(let sessionId):
            out.event("connected", ["sessionId": sessionId], human: "session \(sessionId): connected")
        case let .sessionEnded(sessionId, reason):
            out.event("sessionEnded", ["sessionId": sessionId, "reason": reason], human: "session \(sessionId): ended (\(reason))")
        case .controlOpen:
            out.event("controlOpen", [:], human: "control channel open")
        case let .requestSent(id, type, text):
            out.event("requestSent", ["id": id, "type": type, "text": text], human: "→ \(text)")
        case .reply(let reply):
            switch reply {
            case let .ack(id, annotationId, skipped):
                var fields: [String: Any] = ["id": id]
                fields["annotationId"] = annotationId
                if !skipped.isEmpty { fields["skipped"] = skipped.map(\.rawValue) }
                out.event("ack", fields, human: "← ack \(id)" + (annotationId.map { " (annotation \($0))" } ?? "")
                          + (skipped.isEmpty ? "" : " (skipped as unsupported: \(skipped.map(\.rawValue).joined(separator: ", ")))"))
            case .error(let e):
                var fields: [String: Any] = ["code": e.code.rawValue, "message": e.message]
                fields["id"] = e.id
                out.event("error", fields, human: "← error \(e.id ?? "-") \(e.code.rawValue): \(e.message)")
            case .sceneStatus:
                // Streamed several times a second: JSON readers get every one, people the status line.
                var fields = (try? JSONSerialization.jsonObject(with: Data(ControlCodec.encode(reply).utf8))) as? [String: Any] ?? [:]
                fields.removeValue(forKey: "type")
                out.event("sceneStatus", fields, human: nil)
            case .annotations(let list):
                out.event("annotations", ["count": list.count, "ids": list.map(\.id)],
                          human: "← annotations: " + (list.isEmpty ? "none" : list.map { "\($0.id) \($0.kind.rawValue) \($0.label)" }.joined(separator: ", ")))
            }
        case .placement(let r):
            var fields: [String: Any] = [
                "annotationId": r.annotationId, "placement": r.placement.rawValue,
                "truth": [r.truth.x, r.truth.y, r.truth.z].map(Double.init),
                "placed": [r.placed.x, r.placed.y, r.placed.z].map(Double.init),
                "error_cm": Double(r.errorCentimetres), "tapFrameId": r.tapFrameId, "laterFrameId": r.laterFrameId,
            ]
            fields["error_px"] = r.errorPixels.map { Double($0) }
            out.event("placement", fields, human: String(
                format: "placement of %@ (%@): %.2f cm, %@ from the true point", r.annotationId, r.placement.rawValue,
                r.errorCentimetres, r.errorPixels.map { String(format: "%.2f px", $0) } ?? "– px"))
        case .error(let message):
            out.event("localError", ["message": message], human: "error: \(message)")
        }
    }
}
