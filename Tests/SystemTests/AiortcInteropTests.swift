import Foundation
import Synchronization
import Testing
import TestSupport

/// An independent WebRTC peer against the real executables: aiortc (Python) joins
/// through posecast-signaling as an expert, answers the publisher's offer, decodes at
/// least 100 frames and uses the control channel (scripts/interop/aiortc_subscriber.py,
/// docs/INTEROP.md). Runs only where a Python imports aiortc: `scripts/interop-setup`.
@Suite("system: aiortc interop", .serialized,
       .enabled(if: AiortcPython.path != nil,
                "no Python imports aiortc and websockets ($POSECAST_PYTHON, .build/interop-venv, python3 on PATH): run scripts/interop-setup"), .tags(.system))
struct AiortcInteropTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var codec: String
        var source: String
        /// A room with a token, so the expert's room, role and token are exercised too.
        var room: (name: String, token: String)?
        var testDescription: String {
            "\(codec) from \(source)" + (room.map { " in room \($0.name) with a token" } ?? "")
        }
    }

    @Test("aiortc receives ≥ 100 decoded frames and uses the control channel", arguments: [
        Case(codec: "vp8", source: "synthetic"),
        Case(codec: "h264", source: "synthetic", room: ("lab", "s3cret")),
        Case(codec: "vp8", source: "test"),
    ])
    func aiortcSubscriber(_ c: Case) async throws {
        var signalingArguments = ["--port", "0"]
        if let room = c.room { signalingArguments += ["--token", "\(room.name)=\(room.token)"] }
        let signaling = try ManagedProcess("posecast-signaling", signalingArguments, name: "signaling")
        let (listening, _) = try await signaling.waitForLine("listening line", timeout: 20) { $0.hasPrefix("listening ") }
        let url = String(listening.dropFirst("listening ".count))

        var publisherArguments = ["--source", c.source, "--codec", c.codec, "--signaling", url, "--json"]
        if let room = c.room { publisherArguments += ["--room", room.name, "--token", room.token] }
        let publisher = try ManagedProcess("posecast-publisher", publisherArguments, name: "publisher")
        try await publisher.waitForEvent("publisher registered", timeout: 30) { $0.is(.signalingConnected) }

        var scriptArguments = [AiortcPython.script("aiortc_subscriber.py"), "--signaling", url, "--frames", "100", "--timeout", "60",
                               "--expect-codec", c.codec.uppercased()]
        // The synthetic camera has a lens to focus and streams sceneStatus; videotestsrc has neither.
        scriptArguments += c.source == "synthetic" ? ["--expect-focus", "ack"] : ["--expect-focus", "unsupported", "--no-scene-status"]
        if let room = c.room { scriptArguments += ["--room", room.name, "--token", room.token] }
        let (run, result) = try await AiortcPython.run(scriptArguments, timeout: 90)
        let publisherEvents = publisher.events.compactMap { e in e.string("event").map { $0 == "error" ? "error: \(e["message"] ?? "")" : $0 } }
            .filter { $0 != "status" }
        let failure = "aiortc subscriber failed: \(result["errors"] ?? "?")\npublisher events: \(publisherEvents)"
            + "\npublisher stderr:\n\(publisher.stderrTail)\naiortc stderr:\n\(run.stderrTail)"
        #expect(run.status == 0, "\(failure)")
        #expect(result["ok"] as? Bool == true)
        #expect(result.int("frames_decoded") >= 100)
        #expect(result.int("width") == 640 && result.int("height") == 480, "decoded size \(result["sizes"] ?? "?")")
        // The pose extension was offered, left out of aiortc's answer, and still on every
        // packet aiortc decoded around.
        let offer = result["offer"] as? [String: Any], answer = result["answer"] as? [String: Any]
        #expect((offer?["extmaps"] as? [String])?.contains("urn:x-posecast:rtp-hdrext:pose:1") == true)
        #expect((answer?["extmaps"] as? [String])?.contains("urn:x-posecast:rtp-hdrext:pose:1") == false)
        #expect(result.int("rtp_packets_with_pose") > 0 && result.int("rtp_packets_with_pose") == result.int("rtp_packets"),
                "video packets \(result.int("rtp_packets")), with the pose element \(result.int("rtp_packets_with_pose"))")
        #expect(result.int("ice_before_offer") == 0)

        // Each request got the reply docs/CONTROL_CHANNEL.md promises.
        let replies = (result["control_replies"] as? [[String: Any]] ?? []).compactMap { entry in
            (entry["request"] as? String).flatMap { request in (entry["reply"] as? [String: Any]).map { (request, $0) } }
        }
        let byRequest = Dictionary(replies, uniquingKeysWith: { first, _ in first })
        #expect(byRequest["annotate"]?.string("type") == "ack" && byRequest["annotate"]?.string("annotationId") != nil)
        #expect(byRequest["focus"]?.string(c.source == "synthetic" ? "type" : "code") == (c.source == "synthetic" ? "ack" : "unsupported"))
        #expect(byRequest["annotate with tap.x = 7.5"]?.string("code") == "invalidValue")
        #expect(byRequest["text that is not JSON"]?.string("code") == "malformed")
        #expect(byRequest["removeAnnotation"]?.string("type") == "ack")

        // The publisher saw the same exchange, and the session ended cleanly.
        try await publisher.waitForEvent("publisher answered the annotate", timeout: 10) {
            $0.is(.control) && $0.string("request") == "annotate"
        }
        try await publisher.waitForEvent("session ended", timeout: 15) { $0.is(.sessionEnded) }
        #expect(publisher.isRunning, "the publisher survived the independent peer")
        publisher.signal(SIGTERM)
        try await publisher.expectCleanExit(timeout: 15)
        signaling.signal(SIGTERM)
        try await signaling.expectCleanExit(timeout: 15)
    }
}

/// The Python that runs the aiortc subscriber, looked for once: `$POSECAST_PYTHON`,
/// the venv `scripts/interop-setup` makes, then `python3` on PATH — the first that
/// imports aiortc and websockets within 20 s.
enum AiortcPython {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    /// The path of a script in scripts/interop.
    static func script(_ name: String) -> String { packageRoot.appendingPathComponent("scripts/interop/\(name)").path }

    /// Runs a script of scripts/interop (`arguments[0]`) and reads the JSON object its last
    /// stdout line holds.
    /// `inside`: a command the Python runs under (`SFUNetwork.exec`: in a network namespace).
    static func run(_ arguments: [String], timeout: Double, inside: [String] = []) async throws -> (CommandRun, [String: Any]) {
        let command = inside + (try #require(path))
        let run = try await ManagedProcess.run(command[0], Array(command.dropFirst()) + arguments, timeout: timeout)
        let line = try #require(run.stdout.split(separator: "\n").last.map(String.init),
                                "\(arguments[0]) printed no result line; stderr:\n\(run.stderrTail)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                                  "\(arguments[0]): result is not a JSON object: \(line)")
        return (run, result)
    }

    static let path: [String]? = {
        var candidates: [[String]] = []
        if let chosen = ProcessInfo.processInfo.environment["POSECAST_PYTHON"], !chosen.isEmpty { candidates.append([chosen]) }
        candidates.append([packageRoot.appendingPathComponent(".build/interop-venv/bin/python3").path])
        candidates.append(["/usr/bin/env", "python3"])
        return candidates.first { command in
            FileManager.default.isExecutableFile(atPath: command[0])
                && (try? ManagedProcess.runBlocking(command[0], Array(command.dropFirst()) + ["-c", "import aiortc, websockets"], timeout: 20).status) == 0
        }
    }()
}
