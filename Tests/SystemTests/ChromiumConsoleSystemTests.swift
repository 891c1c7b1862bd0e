import Foundation
import TestSupport
import Testing

/// The browser console in Debian's real Chromium, driven by
/// scripts/interop/chromium_console.py, against a real publisher on the synthetic camera
/// orbiting at 30°/s with its embedded signaling server serving the console at `/`.
/// Beside it, two of our GStreamer subscribers: one as before (header extension), one
/// asking for the trailer too.
@Suite("system: the browser console in Chromium", .serialized,
       .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") && AiortcPython.path != nil,
                "needs Debian's chromium (scripts/setup installs it) and a Python with websockets (scripts/interop-setup)"), .tags(.system))
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

        // Our GStreamer subscribers: one as before, one reading the trailer. On loopback as
        // the publisher: libnice binds each UDP socket to its address, and 192.0.2.2 does
        // not reach the publisher's 127.0.0.1 (only ICE-TCP, now off by default, did).
        let plain = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url, "--role", "viewer",
                                                               "--ice-address", "127.0.0.1"], name: "subscriber (header extension)")
        defer { plain.signal(SIGTERM) }
        let trailer = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url, "--role", "viewer",
                                                                 "--ice-address", "127.0.0.1", "--pose-transport", "trailer"],
                                         name: "subscriber (trailer)")
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

    /// The restart both reconnect tests make: once the driver says it awaits it, `first`
    /// is killed and, 2 s later, a second publisher started on the same port; then the
    /// driver's summary. Returns that publisher (the caller ends it) and the summary.
    static func restart(_ first: ManagedProcess, driver: ManagedProcess, awaiting what: String, timeout: Double,
                        publisher: (String) throws -> ManagedProcess) async throws -> (ManagedProcess, [String: Any]) {
        try await driver.waitForLine(what, timeout: timeout) { $0.contains("\"awaiting-restart\"") }
        first.signal(SIGKILL)
        try? await Task.sleep(for: .seconds(2))
        let second = try publisher("publisher (restarted)")
        let (line, _) = try await driver.waitForLine("the driver's summary", timeout: 100) { $0.contains("\"summary\": true") }
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        return (second, summary)
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
        let (second, summary) = try await Self.restart(first, driver: driver, awaiting: "the console's poses checked", timeout: 90,
                                                       publisher: publisher)
        defer { second.signal(SIGTERM) }
        print("console restart: \(driver.output.filter { $0.hasPrefix("{\"step\"") }.joined(separator: " "))")
        #expect(summary["ok"] as? Bool == true, "\(summary["reasons"] ?? "?"); stderr: \(driver.stderrTail)")
        #expect(summary["reconnected"] as? Bool == true)
        #expect(Self.number(summary, "frames_after_reconnect") ?? 0 >= 60, "\(summary)")
        #expect(Self.number(summary, "with_pose_after_reconnect") == Self.number(summary, "frames_after_reconnect"))
        #expect(second.events.contains { $0.is(.sessionStarted) && $0.string("poseTransport") == "trailer" })
    }

    /// The console on a phone (390×844, mobile emulation, touch events) and on a desk
    /// (1280×800, the mouse), `chromium_console.py --device` (docs/CONSOLE.md, "Phones,
    /// tablets and desks"): the layout, a disc pinned by a tap, the camera menu by a long
    /// press, a pinch zoom, and a publisher killed and restarted on the same port while
    /// the page is open.
    @Test("console on a phone and a desk: the picture first, no sideways scroll, a short one-line badge; a tapped disc within 1 cm; the long-press menu on screen and acknowledged; a pinch ×2 acknowledged with the pinched point within 5 %; a restart clears the stale state",
          arguments: ["phone", "desk"])
    func device(_ device: String) async throws {
        let work = NSTemporaryDirectory() + "posecast-console-\(device)-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let frameLog = work + "/frames.jsonl", features = work + "/features.txt"
        let scene = try await ManagedProcess.run(ManagedProcess.binDirectory.appendingPathComponent("posecast-scene").path, ["features"], timeout: 30)
        try scene.stdout.write(toFile: features, atomically: true, encoding: .utf8)
        let port = try Fault.freeLoopbackPort()
        func publisher(_ name: String) throws -> ManagedProcess {
            try ManagedProcess("posecast-publisher", ["--source", "synthetic", "--pose", "orbit", "--listen", "127.0.0.1:\(port)",
                                                      "--json", "--frame-log", frameLog, "--ice-address", "127.0.0.1",
                                                      "--microphone", "none", "--speaker", "none"], name: name)
        }
        let first = try publisher("publisher")
        defer { first.signal(SIGKILL) }
        try await first.waitForEvent("embedded signaling", timeout: 20) { $0.is(.listening) }
        let shots = Self.artifacts + "-\(device)"
        try? FileManager.default.removeItem(atPath: shots)
        let python = try #require(AiortcPython.path)
        let driver = try ManagedProcess(python[0], Array(python.dropFirst()) + [
            AiortcPython.script("chromium_console.py"), "--console", "http://127.0.0.1:\(port)/", "--frame-log", frameLog,
            "--features", features, "--device", device, "--await-restart", "--screenshots", shots, "--timeout", "200"],
                                        name: "chromium console (\(device))")
        defer { driver.signal(SIGTERM) }
        let (second, summary) = try await Self.restart(first, driver: driver, awaiting: "the \(device) checks before the restart",
                                                       timeout: 150, publisher: publisher)
        defer { second.signal(SIGTERM) }
        print("console (\(device)): \(driver.output.filter { $0.hasPrefix("{\"step\"") }.joined(separator: "\n"))")
        #expect(summary["ok"] as? Bool == true, "\(summary["reasons"] ?? "?"); stderr: \(driver.stderrTail)")

        // The layout: the picture across the phone's width (the desk's beside the panels), nothing sideways.
        let layout = summary["layout"] as? [String: Any] ?? [:]
        func pair(_ key: String) -> [Double] { (layout[key] as? [Any] ?? []).compactMap { ($0 as? NSNumber)?.doubleValue } + [0, 0] }
        let picture = pair("picture"), viewport = pair("viewport")
        #expect(picture[0] >= (device == "phone" ? 0.99 : 0.7) * viewport[0], "the picture is \(picture) in \(viewport)")
        #expect(Self.number(layout, "header_height") ?? 999 <= 48, "the header: \(layout)")
        #expect(layout["page_scrolls_sideways"] as? Bool == false && layout["panel_scrolls_sideways"] as? Bool == false, "\(layout)")
        #expect(layout["badge_one_line"] as? Bool == true && layout["badge_has_uuid"] as? Bool == false, "the badge: \(layout["badge"] ?? "?")")
        #expect(layout["status_visible"] as? Bool == true, "the status panel is below the fold")
        if device == "phone" {
            let turned = summary["layout_landscape"] as? [String: Any] ?? [:]
            #expect(turned["page_scrolls_sideways"] as? Bool == false && Self.number(turned, "picture_share") ?? 0 >= 0.4, "landscape: \(turned)")
            #expect((summary["menu_landscape"] as? [String: Any])?["inside"] as? Bool == true, "the landscape menu: \(summary["menu_landscape"] ?? "?")")
        }

        // Poses, the tapped disc, the menu, the pinch.
        let presented = Self.number(summary, "presented") ?? 0, withPose = Self.number(summary, "presented_with_pose") ?? 0
        #expect(presented >= 120 && withPose >= 0.995 * presented, "\(withPose) of \(presented) presented frames with their pose")
        #expect(Self.number(summary, "pose_mismatch_count") == 0)
        #expect(Self.number(summary, "no_pose_refusals") == 0)
        let disc = summary["disc"] as? [String: Any] ?? [:]
        let tapError = Self.number(disc, "error_cm") ?? .infinity
        #expect(tapError <= 1.0, "the \(disc["name"] ?? "?") disc's pin is \(tapError) cm from its centre")
        let menu = summary["menu"] as? [String: Any] ?? [:]
        #expect((menu["box"] as? [String: Any])?["inside"] as? Bool == true, "the menu: \(menu["box"] ?? "?")")
        #expect((menu["reply"] as? [String: Any])?["code"] as? String == "ack", "the menu's item: \(menu)")
        let zoom = summary["zoom"] as? [String: Any] ?? [:]
        let drift = Self.number(zoom, "drift_pct_max") ?? .infinity
        #expect(Self.number(zoom, "settled_zoom") ?? 0 >= 1.8, "the zoom: \(zoom)")
        #expect(drift <= 5, "the pinched point moved \(drift) % of the picture: \(zoom)")
        print("console (\(device)): tap \(String(format: "%.2f", tapError)) cm from the disc; zoom ×\(zoom["settled_zoom"] ?? "?"), "
              + "the pinched point \(String(format: "%.3f", drift)) % from its place; \(Int(withPose)) of \(Int(presented)) frames with pose")

        // The restart: nothing stale while reconnecting, said without a close code; back with posed frames.
        let reconnect = summary["reconnect"] as? [String: Any] ?? [:]
        #expect((reconnect["stale"] as? [String])?.isEmpty == true, "stale while reconnecting: \(reconnect["stale"] ?? "?")")
        #expect(reconnect["close_code_shown"] as? Bool == false, "\(reconnect["words"] ?? "?")")
        #expect(reconnect["back"] as? Bool == true)
        #expect(second.events.contains { $0.is(.sessionStarted) })
        #expect((summary["screenshots"] as? [String] ?? []).count >= 4)
    }

    /// Two-way voice in the console (docs/CONSOLE.md, "Voice"): Chromium's fake microphone
    /// plays a 440 Hz WAV, the publisher's microphone a 1 kHz tone. The publisher's tone
    /// detector (what the field hears) and Chromium's getStats and analyser (what the expert
    /// hears) show both ways; `m`, Space held and `m` again switch the 440 Hz at the
    /// publisher off and on, matched by wall clock with the driver's key presses.
    @Test("console voice: Chromium's microphone (440 Hz) heard by the publisher, the publisher's 1 kHz decoded in Chromium; m mutes it at the publisher, Space held talks, m unmutes; a refused microphone and a viewer listen only")
    func voice() async throws {
        let work = NSTemporaryDirectory() + "posecast-console-voice-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let frameLog = work + "/frames.jsonl", features = work + "/features.txt"
        try "".write(toFile: features, atomically: true, encoding: .utf8)
        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "synthetic", "--pose", "orbit", "--listen", "127.0.0.1:0", "--json", "--frame-log", frameLog,
            "--ice-address", "127.0.0.1", "--microphone", "tone=1000", "--speaker", "discard", "--detect-tones", "440",
            // 1 Mbit/s, not 2 (as VoiceSystemTests): a test of voice, not of bitrate. Chromium
            // decoding 2 Mbit/s beside the publisher fills both cores, and the transport-wide
            // estimate keeps the rate at 2000 kbit/s where Chromium's REMB held it at 830–1400
            // while Chromium was busy; the expert's voice then reaches the publisher's mixer late
            // more often (the voice path under CPU load is open work). And 320×240: the
            // synthetic camera's 640×480 render alone is half a core (16 ms a frame); run after
            // the suite's other tests (load 4 on the two cores), the 440 Hz dropped out 19 and
            // 117 times at the publisher (a fresh-clone CI run) against 0–2 when run alone.
            "--bitrate", "1000", "--width", "320", "--height", "240"],
                                           name: "publisher")
        defer { publisher.signal(SIGTERM) }
        let (listening, _) = try await publisher.waitForEvent("embedded signaling", timeout: 20) { $0.is(.listening) }
        let console = try #require(listening.string("url")).replacingOccurrences(of: "ws://", with: "http://")
        let shots = Self.artifacts + "-voice"
        try? FileManager.default.removeItem(atPath: shots)
        let (run, summary) = try await AiortcPython.run([
            AiortcPython.script("chromium_console.py"), "--console", console, "--frame-log", frameLog, "--features", features,
            "--audio", "tone=440", "--heard-hz", "1000", "--screenshots", shots, "--timeout", "150"], timeout: 170)
        print(run.stdout.split(separator: "\n").filter { $0.hasPrefix("{\"step\"") }.joined(separator: "\n"))
        #expect(summary["ok"] as? Bool == true, "chromium_console.py: \(summary["reasons"] ?? "?"); stderr:\n\(run.stderrTail)")

        // The offer asks an expert for its voice; the console sends it.
        #expect(summary["voice_offered"] as? String == "sendrecv")
        #expect(summary["voice_sending"] as? Bool == true, "\(summary["voice_shown"] ?? "?")")
        let sent = summary["sent"] as? [String: Any] ?? [:]
        #expect(Self.number(sent, "packetsSent") ?? 0 >= 100, "Chromium sent \(sent)")

        // What the expert hears: the publisher's 1 kHz, decoded, without gaps made up.
        let heard = summary["heard"] as? [String: Any] ?? [:]
        let packets = Self.number(heard, "packets") ?? 0, concealed = Self.number(heard, "concealed_share") ?? 1
        let peaks = Self.number(heard, "peaks_at_heard_hz") ?? 0, samples = Self.number(heard, "peak_samples") ?? 0
        print("console voice: heard \(Int(packets)) packets in 5 s (\(heard["lost"] ?? "?") lost), "
              + String(format: "%.1f %% concealed", 100 * concealed) + ", energy \(heard["energy"] ?? "?"), "
              + "peak \(heard["peak_hz_median"] ?? "?") Hz in \(Int(peaks)) of \(Int(samples)) samples, "
              + "\(heard["rms_db_median"] ?? "?") dBFS; playing \(summary["playing"] ?? "?")")
        #expect(packets >= 200, "Chromium received \(packets) audio packets in 5 s (50/s sent)")
        #expect(concealed <= 0.1, "Chromium concealed \(concealed) of what it played: packets lost or late (\(heard))")
        #expect(Self.number(heard, "energy") ?? 0 > 0, "decoded silence: \(heard)")
        #expect(samples > 0 && peaks >= 0.8 * samples, "the loudest frequency heard is not 1 kHz: \(heard)")
        #expect(summary["playing"] as? Bool == true, "the <audio> element does not play: \(summary["play_refused"] ?? "?")")
        // The console asks for Chromium's voice processing (the driver then turns noise
        // suppression and gain control off under it: they learn the test's steady tone as noise).
        let asked = (summary["microphone_constraints_asked"] as? [String: Any])?["audio"] as? [String: Any] ?? [:]
        #expect(["echoCancellation", "noiseSuppression", "autoGainControl"].allSatisfy { asked[$0] as? Bool == true },
                "the console's microphone constraints: \(summary["microphone_constraints_asked"] ?? "none")")

        // What the field hears: the 440 Hz, switched by m, Space held, m.
        let timeline = summary["voice_timeline"] as? [String: Any] ?? [:]
        func at(_ key: String) -> Int64 { (timeline[key] as? NSNumber)?.int64Value ?? 0 }
        let events = publisher.events.filter { $0["event"] as? String == "tone" && Self.number($0, "hertz") == 440 }
            .map { (at: ($0["atNanos"] as? NSNumber)?.int64Value ?? 0, started: $0["started"] as? Bool ?? false,
                    level: Self.number($0, "levelDb") ?? 0) }
        print("console voice: tone events at the publisher (ms from the mute key): "
              + events.map { "\($0.started ? "on" : "off") \(($0.at - at("mute_ns")) / 1_000_000) (\(Int($0.level)) dBFS)" }.joined(separator: ", "))
        // A gap of 150 ms or less is a dropout, not a switch (a switch here lasts 250 ms
        // or more): on this two-core machine an expert's voice now and then reaches the
        // publisher's mixer too late for its slot (Chromium, the publisher and the test share
        // the cores), and the voice moves later, a gap as long as it was late plus its new
        // slack (40 or 80 ms, `PlayoutRetimer`). Counted, and few allowed.
        var tones: [(at: Int64, started: Bool, level: Double)] = [], dropouts = 0
        for event in events {
            if event.started, let last = tones.last, !last.started, event.at - last.at <= 150_000_000 {
                tones.removeLast(); dropouts += 1
            } else {
                tones.append(event)
            }
        }
        print("console voice: \(dropouts) dropouts of 150 ms or less at the publisher")
        #expect(dropouts <= 4, "the 440 Hz dropped out \(dropouts) times at the publisher")
        func on(at instant: Int64) -> Bool { tones.last { $0.at <= instant }?.started ?? false }
        func changes(_ started: Bool, _ from: Int64, _ to: Int64) -> [Int64] {
            tones.filter { $0.started == started && $0.at >= from && $0.at <= to }.map(\.at)
        }
        let second: Int64 = 1_000_000_000, slack = second * 3 / 2
        // Talking: heard from before the driver's first mark to the mute key.
        #expect(on(at: at("talking_since_ns")) && changes(false, at("talking_since_ns"), at("mute_ns")).isEmpty,
                "the 440 Hz was not heard steadily while talking")
        // Muted: gone within 1.5 s and not back until Space.
        let off = changes(false, at("mute_ns") - second / 10, at("mute_ns") + slack).first
        #expect(off != nil, "muting did not stop the 440 Hz at the publisher within 1.5 s")
        #expect(changes(true, at("mute_ns") + slack, at("talk_down_ns")).isEmpty, "the 440 Hz came back while muted")
        // Space held (talks after 250 ms), let go.
        let talk = changes(true, at("talk_down_ns"), at("talk_down_ns") + slack).first
        let stop = changes(false, at("talk_up_ns") - second / 10, at("talk_up_ns") + slack).first
        #expect(talk != nil, "holding Space did not bring the 440 Hz within 1.5 s")
        #expect(stop != nil, "letting Space go did not stop the 440 Hz within 1.5 s")
        #expect(changes(true, at("talk_up_ns") + slack, at("unmute_ns")).isEmpty, "the 440 Hz came back after Space")
        // Unmuted: back within 1.5 s and steady to the end.
        let back = changes(true, at("unmute_ns"), at("unmute_ns") + slack).first
        #expect(back != nil, "unmuting did not bring the 440 Hz back within 1.5 s")
        if let back { #expect(changes(false, back, at("end_ns") - second / 2).isEmpty, "the 440 Hz dropped out after unmuting") }
        func ms(_ change: Int64?, _ key: String) -> String { change.map { "\(($0 - at(key)) / 1_000_000) ms" } ?? "never" }
        print("console voice: at the publisher, off \(ms(off, "mute_ns")) after m, on \(ms(talk, "talk_down_ns")) after Space "
              + "went down (held 250 ms to talk), off \(ms(stop, "talk_up_ns")) after it came up, on \(ms(back, "unmute_ns")) after m")

        // The publisher's `voices` says we are muted; Space and its tap behave.
        let me = summary["peer_id"] as? String
        let roster = summary["participants_muted"] as? [[String: Any]] ?? []
        #expect(roster.contains { $0["id"] as? String == me && $0["muted"] as? Bool == true },
                "voices while muted: \(roster) (\(summary["voices_problem"] ?? ""))")
        #expect(roster.contains { $0["id"] as? String == "field" && $0["role"] as? String == "publisher" })
        let push = summary["push_to_talk"] as? [String: Any] ?? [:]
        #expect(push["while_held"] as? Bool == true && push["after"] as? Bool == false && push["still_muted"] as? Bool == true,
                "push to talk: \(push)")
        #expect(push["frozen_while_held"] as? Bool == false && push["frozen_after"] as? Bool == false, "holding Space froze: \(push)")
        #expect(summary["space_tap_freezes_while_muted"] as? Bool == true)
        #expect((summary["muted_shown"] as? String ?? "").hasPrefix("muted"), "\(summary["muted_shown"] ?? "?")")
        #expect(Self.number(summary, "mic_db_muted") ?? 0 <= -100, "the microphone meter while muted: \(summary["mic_db_muted"] ?? "?")")

        // A refused microphone: listening only, said so, the video and the field's voice go on.
        let refused = summary["refused"] as? [String: Any] ?? [:]
        #expect(refused["sending"] as? Bool == false)
        #expect((refused["shown"] as? String ?? "").contains("listening only: the microphone was refused"), "\(refused)")
        #expect(Self.number(refused["received"] as? [String: Any] ?? [:], "packetsReceived") ?? 0 > 0)
        // A viewer: the offer is sendonly, the console listens only.
        let viewer = summary["viewer_voice"] as? [String: Any] ?? [:]
        #expect(viewer["offered"] as? String == "sendonly" && viewer["sending"] as? Bool == false, "\(viewer)")
        #expect((viewer["shown"] as? String ?? "").hasPrefix("listening only"), "\(viewer)")
        #expect(Self.number(viewer["received"] as? [String: Any] ?? [:], "packetsReceived") ?? 0 > 0, "\(viewer)")
        print("console voice: refused microphone shows “\(refused["shown"] ?? "?")”; viewer shows “\(viewer["shown"] ?? "?")”; "
              + "screenshots in \(shots)")
    }
}
