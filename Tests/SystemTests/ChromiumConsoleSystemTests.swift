import Foundation
import TestSupport
import Testing

/// The browser console (issue 14) in Debian's real Chromium, driven by
/// scripts/interop/chromium_console.py, against a real publisher on the synthetic camera
/// orbiting at 30°/s with its embedded signaling server serving the console at `/`.
/// Beside it, two of our GStreamer subscribers: one as before (header extension), one
/// asking for the trailer too.
@Suite("system: the browser console in Chromium", .serialized,
       .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") && AiortcPython.path != nil,
                "needs Debian's chromium (scripts/setup installs it) and a Python with websockets (scripts/interop-setup)"))
struct ChromiumConsoleSystemTests {
    static let artifacts = AiortcPython.packageRoot.appendingPathComponent(".build/test-artifacts/console").path

    static func number(_ o: [String: Any], _ key: String) -> Double? { (o[key] as? NSNumber)?.doubleValue }

    @Test("console: ≥ 99 % of presented frames find their own pose by RTP timestamp; disc clicks within 1 cm; pins where later frames project them; remove, clear, focus lock, a viewer's notAllowed")
    func console() async throws {
        let work = NSTemporaryDirectory() + "posecast-console-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let frameLog = work + "/frames.jsonl", features = work + "/features.txt"
        let scene = try await ManagedProcess.run(ManagedProcess.binDirectory.appendingPathComponent("posecast-scene").path, ["features"], timeout: 30)
        try scene.stdout.write(toFile: features, atomically: true, encoding: .utf8)

        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "synthetic", "--pose", "orbit", "--listen", "127.0.0.1:0", "--json", "--frame-log", frameLog,
            "--ice-address", "127.0.0.1"], name: "publisher")
        defer { publisher.signal(SIGTERM) }
        let (listening, _) = try await publisher.waitForEvent("embedded signaling", timeout: 20) { $0.is(.listening) }
        let url = try #require(listening.string("url"))
        let console = url.replacingOccurrences(of: "ws://", with: "http://")

        // Our GStreamer subscribers: one as before, one reading the trailer.
        let plain = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url, "--role", "viewer"],
                                       name: "subscriber (header extension)")
        defer { plain.signal(SIGTERM) }
        let trailer = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url, "--role", "viewer",
                                                                 "--pose-transport", "trailer"], name: "subscriber (trailer)")
        defer { trailer.signal(SIGTERM) }

        try await Fault.expectPosedFrames(plain)
        try await Fault.expectPosedFrames(trailer)
        // The publisher's level with the two GStreamer calls: the browser's sessions must give back what they take.
        let base = try await Fault.steadyResources(publisher, sessions: 2)

        try? FileManager.default.removeItem(atPath: Self.artifacts)
        let mark = publisher.output.count
        let (run, summary) = try await AiortcPython.run([
            AiortcPython.script("chromium_console.py"), "--console", console, "--frame-log", frameLog,
            "--features", features, "--screenshots", Self.artifacts, "--timeout", "170"], timeout: 190)
        print(run.stdout.split(separator: "\n").filter { $0.hasPrefix("{\"step\"") }.joined(separator: "\n"))
        #expect(summary["ok"] as? Bool == true, "chromium_console.py: \(summary["reasons"] ?? "?"); stderr:\n\(run.stderrTail)")

        // 1. Every presented frame's pose, found by RTP timestamp, is the publisher's own.
        let presented = Self.number(summary, "presented") ?? 0, withPose = Self.number(summary, "presented_with_pose") ?? 0
        print("console: \(Int(withPose)) of \(Int(presented)) presented frames found their pose; "
              + "\(summary["pose_mismatch_count"] ?? "?") differ from the frame log; the element held a newer frame than "
              + "its callback said for \(summary["presented_newer_than_callback"] ?? "?")")
        #expect(presented >= 200, "only \(presented) frames presented in 10 s")
        #expect(withPose >= 0.99 * presented, "\(withPose) of \(presented) presented frames found their pose")
        #expect(Self.number(summary, "poses_compared") == withPose)
        #expect(Self.number(summary, "pose_mismatch_count") == 0, "poses unlike the frame log: \(summary["pose_mismatches"] ?? "?")")

        // 2. Disc clicks within 1 cm; pins in later frames within 2 px of their projection.
        let discs = summary["discs"] as? [[String: Any]] ?? []
        #expect(discs.count == 3)
        for disc in discs {
            let error = Self.number(disc, "error_cm") ?? .infinity
            print("console: \(disc["name"] ?? "?") disc clicked at \(disc["clicked_px"] ?? "?") px, world error "
                  + String(format: "%.2f cm", error) + " (\(disc["placement"] ?? "?"))")
            #expect(error <= 1.0, "the \(disc["name"] ?? "?") disc's annotation is \(error) cm from its centre")
        }
        let pinsFound = Self.number(summary, "pins_found") ?? 0, maxOffset = Self.number(summary, "pin_offset_max_px") ?? .infinity
        print("console: \(Int(pinsFound)) of \(summary["pin_checks"] ?? "?") pin checks found the pin, worst "
              + String(format: "%.2f px", maxOffset) + " from its projection")
        #expect(pinsFound >= 20)
        #expect(maxOffset <= 2.0, "a pin is \(maxOffset) px from where its frame's pose projects it: \(summary["pin_offsets_px"] ?? "?")")

        // 3. Remove and clear, focus lock, the viewer.
        #expect(summary["removed"] as? Bool == true)
        #expect(Self.number(summary, "magenta_pixels_after_clear") == 0, "pins still drawn after Clear")
        #expect(summary["focus_locked_s"] != nil, "focus never reached locked")
        #expect(summary["viewer_tools_shown"] as? Bool == false, "the viewer sees the annotation tools")
        #expect((summary["viewer_message_shown"] as? String ?? "").contains("Not allowed"),
                "the viewer's refusal is not shown in words: \(summary["viewer_message_shown"] ?? "?")")

        // 4. Screenshots kept.
        let shots = summary["screenshots"] as? [String] ?? []
        #expect(shots.count >= 5, "screenshots: \(shots)")
        print("console: screenshots in \(Self.artifacts): \(shots.map { ($0 as NSString).lastPathComponent })")

        // Our subscribers decoded every frame with its pose, each by its own transport.
        for (subscriber, name) in [(plain, "header extension"), (trailer, "trailer")] {
            let status = try #require(subscriber.events.last { $0.is(.status) }, "no status from the \(name) subscriber")
            let frames = Self.number(status, "frames") ?? 0, posed = Self.number(status, "frames_with_pose") ?? -1
            print("subscriber (\(name)): \(Int(posed)) of \(Int(frames)) frames with pose")
            #expect(frames >= 600, "the \(name) subscriber decoded \(frames) frames")
            #expect(posed == frames, "the \(name) subscriber: \(posed) of \(frames) frames with pose")
        }
        // Chromium is gone: its two sessions (expert, viewer) end, and their branches, sockets and threads go.
        let (left, _) = try await publisher.waitForEvent("resources back to \(base) after Chromium", timeout: 30, after: mark) {
            $0.is(.status) && $0.int("sessions") == 2
                && $0.int("open_fds") <= base.fds && $0.int("threads") <= base.threads + Fault.idleThreadSlack
        }
        print("console: publisher open_fds/threads \(base.fds)/\(base.threads) before Chromium, "
              + "\(left.int("open_fds"))/\(left.int("threads")) after")
        let transports = publisher.events.filter { $0.is(.sessionStarted) }.compactMap { $0.string("poseTransport") }
        #expect(transports.filter { $0 == "trailer" }.count >= 2, "sessions by transport: \(transports)")
        #expect(transports.contains("headerExtension"))
    }

    @Test("console through a TURN relay (coturn): Chromium and the publisher both relay-only, every presented frame with its own pose",
          .enabled(if: FileManager.default.isExecutableFile(atPath: Coturn.binary), "needs coturn (scripts/setup installs it)"))
    func throughTURN() async throws {
        let work = NSTemporaryDirectory() + "posecast-console-turn-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let coturn = try await Coturn.start(directory: work)
        defer { coturn.process.signal(SIGTERM) }
        let frameLog = work + "/frames.jsonl", features = work + "/features.txt"
        try "".write(toFile: features, atomically: true, encoding: .utf8)
        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "synthetic", "--listen", "127.0.0.1:0", "--json", "--frame-log", frameLog,
            "--turn", coturn.url, "--ice-transport-policy", "relay"], name: "publisher")
        defer { publisher.signal(SIGTERM) }
        let (listening, _) = try await publisher.waitForEvent("embedded signaling", timeout: 20) { $0.is(.listening) }
        let console = try #require(listening.string("url")).replacingOccurrences(of: "ws://", with: "http://")
        let (run, summary) = try await AiortcPython.run([
            AiortcPython.script("chromium_console.py"), "--console", console, "--frame-log", frameLog, "--features", features,
            "--poses-only", "--turn", coturn.browserURL, "--turn-user", coturn.user, "--turn-password", coturn.password,
            "--relay-only", "--timeout", "90"], timeout: 110)
        #expect(summary["ok"] as? Bool == true, "chromium_console.py: \(summary["reasons"] ?? "?"); stderr:\n\(run.stderrTail)")
        let route = summary["route"] as? [String: Any] ?? [:]
        let (publisherRoute, _) = try await publisher.waitForEvent("the publisher's media route", timeout: 10) { $0.is(.mediaRoute) }
        let presented = Self.number(summary, "presented") ?? 0, withPose = Self.number(summary, "presented_with_pose") ?? 0
        print("console through TURN: Chromium \(route), publisher \(publisherRoute.string("local") ?? "?") ↔ "
              + "\(publisherRoute.string("remote") ?? "?"); \(Int(withPose)) of \(Int(presented)) presented frames with their pose")
        #expect(route["local"] as? String == "relay" && route["remote"] as? String == "relay", "Chromium's route: \(route)")
        #expect(publisherRoute.string("local") == "relay", "\(publisherRoute)")
        #expect(presented >= 200 && withPose >= 0.99 * presented, "\(withPose) of \(presented) presented frames found their pose")
        #expect(Self.number(summary, "pose_mismatch_count") == 0, "\(summary["pose_mismatches"] ?? "?")")
        #expect(coturn.process.output.contains { $0.contains("username=<posecast>") && $0.contains("new") }, "coturn logged no allocation")
    }

    @Test("console reconnects by itself: the publisher killed and restarted on the same port, the page is back in a new session with posed frames")
    func reconnects() async throws {
        let work = NSTemporaryDirectory() + "posecast-console-restart-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let frameLog = work + "/frames.jsonl", features = work + "/features.txt"
        try "".write(toFile: features, atomically: true, encoding: .utf8)
        let port = try Fault.freeLoopbackPort()
        func publisher(_ name: String) throws -> ManagedProcess {
            try ManagedProcess("posecast-publisher", ["--source", "synthetic", "--listen", "127.0.0.1:\(port)", "--json",
                                                      "--frame-log", frameLog], name: name)
        }
        let first = try publisher("publisher")
        defer { first.signal(SIGKILL) }
        try await first.waitForEvent("embedded signaling", timeout: 20) { $0.is(.listening) }
        let python = try #require(AiortcPython.path)
        let driver = try ManagedProcess(python[0], Array(python.dropFirst()) + [
            AiortcPython.script("chromium_console.py"), "--console", "http://127.0.0.1:\(port)/", "--frame-log", frameLog,
            "--features", features, "--poses-only", "--await-restart", "--timeout", "150"], name: "chromium console")
        defer { driver.signal(SIGTERM) }
        try await driver.waitForLine("the console's poses checked", timeout: 90) { $0.contains("\"awaiting-restart\"") }
        first.signal(SIGKILL)
        try? await Task.sleep(for: .seconds(2))
        let second = try publisher("publisher (restarted)")
        defer { second.signal(SIGTERM) }
        let (line, _) = try await driver.waitForLine("the driver's summary", timeout: 100) { $0.contains("\"summary\": true") }
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        print("console restart: \(driver.output.filter { $0.hasPrefix("{\"step\"") }.joined(separator: " "))")
        #expect(summary["ok"] as? Bool == true, "\(summary["reasons"] ?? "?"); stderr: \(driver.stderrTail)")
        #expect(summary["reconnected"] as? Bool == true)
        #expect(Self.number(summary, "frames_after_reconnect") ?? 0 >= 60, "\(summary)")
        #expect(Self.number(summary, "with_pose_after_reconnect") == Self.number(summary, "frames_after_reconnect"))
        #expect(second.events.contains { $0.is(.sessionStarted) && $0.string("poseTransport") == "trailer" })
    }
}

