import Foundation
import NodeOutput
import Testing
import TestSupport

/// The browser console through Janus: scripts/interop/chromium_console.py in
/// its `--sfu` mode, run inside an `SFUNetwork` (Janus forwards no media on loopback).
/// The console opens its session on signaling with `via: sfu`, subscribes to the room's
/// feed through Janus's WebSocket API itself, reads each frame's pose from inside the
/// frame (H.264: the SEI; VP8: the trailer) and sends control over signaling.
enum SFUConsoleDriver {
    /// Runs the driver against the publisher's `console` page (http://…/) and Janus (`sfu`:
    /// `ws://HOST:8188/`, or the publisher's `janus:ws://…` form); returns its summary:
    /// `presented`, `presented_with_pose`, `pose_carrier`, `frames` ([frameId, captureNs]
    /// of each posed frame presented), `pose_mismatch_count` (against `frameLog`),
    /// `click` (`acked`, `control_route`, `annotationId`, `shown`), `viewer_error`, `ok`,
    /// `reasons`. `work`: a folder for the scene's features (the disc to click).
    static func run(in net: SFUNetwork, console: String, sfu: String, room: String, frameLog: String, work: String,
                    screenshots: String? = nil, timeout: Double = 170) async throws -> [String: Any] {
        let features = work + "/features.txt"
        let scene = try await ManagedProcess.run(ManagedProcess.binDirectory.appendingPathComponent("posecast-scene").path,
                                                 ["features"], timeout: 30)
        try scene.stdout.write(toFile: features, atomically: true, encoding: .utf8)
        let janus = sfu.hasPrefix("janus:") ? String(sfu.dropFirst("janus:".count)) : sfu
        var arguments = [AiortcPython.script("chromium_console.py"), "--console", console, "--sfu", janus, "--room", room,
                         "--frame-log", frameLog, "--features", features, "--timeout", String(Int(timeout))]
        if let screenshots { arguments += ["--screenshots", screenshots] }
        let (run, summary) = try await AiortcPython.run(arguments, timeout: timeout + 20, inside: net.exec)
        print(run.stdout.split(separator: "\n").filter { $0.hasPrefix("{\"step\"") }.joined(separator: "\n"))
        if summary["ok"] as? Bool != true { print("chromium_console.py --sfu: stderr:\n\(run.stderrTail)") }
        return summary
    }

    /// The `frames` of a summary whose frame id and capture time are not the publisher's
    /// (`--frame-log`), as text; empty when every one is its frame's own.
    /// The log is read once it holds the newest frame the page showed (up to 5 s): the
    /// publisher writes it from a queue of its own, which on a busy machine can be behind.
    static func framesNotOwn(_ summary: [String: Any], frameLog: String) async throws -> [String] {
        let frames = summary["frames"] as? [[Any]] ?? []
        let newest = frames.compactMap { ($0.first as? NSNumber)?.intValue }.max()
        var logged: [Int: Int64] = [:]
        let deadline = ContinuousClock.now + .seconds(5)
        repeat {
            logged = [:]
            for e in try FrameLogJoin.lines(frameLog) {
                if let id = (e["frameId"] as? NSNumber)?.intValue { logged[id] = (e["captureNs"] as? NSNumber)?.int64Value }
            }
            if newest.map({ logged[$0] != nil }) ?? true { break }
            try await Task.sleep(for: .milliseconds(100))
        } while ContinuousClock.now < deadline
        return frames.compactMap { pair in
            guard let id = (pair.first as? NSNumber)?.intValue, let text = pair.last as? String, let ns = Int64(text) else {
                return "unreadable \(pair)"
            }
            return logged[id] == ns ? nil : "frame \(id): page \(ns), log \(logged[id].map(String.init) ?? "none")"
        }
    }

    /// Whether the console can be tried here; else why not.
    static var unavailable: String? {
        if !FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") { return "Debian's chromium is not installed (scripts/setup installs it)" }
        if AiortcPython.path == nil { return "no Python with websockets (scripts/interop-setup)" }
        return nil
    }

    /// `run`, in a task of its own beside the test's other processes; the summary comes
    /// back as JSON text (a dictionary of Any cannot cross tasks).
    static func start(in net: SFUNetwork, console: String, sfu: String, room: String, frameLog: String, work: String,
                      screenshots: String?) -> Task<String, any Error> {
        Task {
            let summary = try await run(in: net, console: console, sfu: sfu, room: room, frameLog: frameLog, work: work,
                                        screenshots: screenshots)
            return String(decoding: try JSONSerialization.data(withJSONObject: summary), as: UTF8.self)
        }
    }
}
