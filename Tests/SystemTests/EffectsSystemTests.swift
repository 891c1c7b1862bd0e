import Foundation
import PoseCastKit
import Testing
import TestSupport

/// A number field of a JSON event (NaN when absent).
private func number(_ e: [String: Any], _ key: String) -> Double { (e[key] as? NSNumber)?.doubleValue ?? .nan }

/// The video effects across real processes: the publisher's synthetic camera captures a
/// 1280×720 view and sends 640×480 crops of it, each frame's intrinsics those of its crop.
@Suite("system: video effects (framing and zoom keep annotations exact; effects switched while watching)", .serialized, .tags(.system))
struct EffectsSystemTests {
    /// Taps on the scene's discs land within 1 cm and the pins are found within 2 px of
    /// where each frame's pose projects them: with framing on (the widest 4:3 crop of the
    /// 16:9 capture), with an expert's zoom ×2 on the discs, and while the crop follows a pin.
    @Test("annotations stay exact with framing, expert zoom ×2 and follow")
    func annotationsWithFraming() async throws {
        let features = try await RemoteExpertSuiteTests.sceneFeatures()
        let names = ["disc.red", "disc.yellow", "disc.blue"]
        let targets = try names.map { name in (name, try #require(features[name], "feature \(name)")) }
        let (signaling, url) = try await ManagedProcess.startSignaling()
        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "synthetic", "--pose", "orbit", "--capture-size", "1280x720", "--framing", "face",
            "--signaling", url, "--json"], name: "publisher")
        try await publisher.waitForEvent("publisher registered", timeout: 20) { $0.is(.signalingConnected) }
        try await publisher.waitForEvent("framing on", timeout: 20) { $0.is(.effectChanged) && $0.string("effect") == "framing" }

        let expert = try RemoteExpertSuiteTests.Expert("expert", url: url)
        try await expert.joined()
        var worstCm = 0.0
        /// `tapworld` on a disc: acked, placed within 1 cm, and the mark seen where the frame's pose projects it.
        func tapDisc(_ name: String, _ p: Vector3) async throws -> String {
            let mark = expert.process.output.count
            let (_, visible) = try await expert.annotate(name, at: p)
            let (placement, _) = try await expert.process.waitForEvent("placement of \(name)", timeout: 10, after: mark) { $0.is(.placement) }
            let cm = number(placement, "error_cm")
            worstCm = max(worstCm, cm)
            #expect(cm <= 1.0, "\(name): the tap lands \(cm) cm from the disc (limit 1 cm): \(placement)")
            return try #require(visible.string("annotationId"))
        }

        // Framing on: the frames show the widest 4:3 crop of the capture.
        let frameCamera = try await expert.camera()
        #expect(abs(Double(frameCamera.intrinsics.fx) - 0.5 / tan(Double.pi / 6) * 1280 / 960) < 0.01,
                "the crop's intrinsics: fx \(frameCamera.intrinsics.fx) (the capture's 60° view, 960 of 1280 px shown)")
        var ids: [String] = []
        for (name, p) in targets { ids.append(try await tapDisc(name, p)) }
        var reports = try await expert.checkMarkers(frames: 60)
        for (i, name) in names.enumerated() { RemoteExpertSuiteTests.expectDrawn(reports[ids[i]], "\(name) pin, framing on", frames: 60, maxErrorPx: 2) }

        // An expert's zoom ×2 on the discs' middle, where the frame on screen shows it.
        let camera = try await expert.camera()
        let middle = targets.reduce(Vector3(0, 0, 0)) { $0 + $1.1 } * (1 / Float(targets.count))
        let onScreen = try #require(camera.project(middle)?.point)
        let mark = publisher.output.count
        try await expert.request("zoom \(onScreen.x) \(onScreen.y) 2")
        try await publisher.waitForEvent("zoom ×2 reached", timeout: 15, after: mark) {
            $0.is(.status) && number($0, "zoom") > 1.95 && $0.string("framing_request") == "zoom"
        }
        let zoomed = try await expert.camera()
        #expect(zoomed.intrinsics.fx > frameCamera.intrinsics.fx * 1.9, "zoomed fx \(zoomed.intrinsics.fx)")
        // The zoomed view is fixed in the capture while the camera orbits: a disc near its
        // edge leaves it for part of the check; wherever one is in view, its mark is exact.
        reports = try await expert.checkMarkers(frames: 60)
        for (i, name) in names.enumerated() {
            let report = try #require(reports[ids[i]], "a report on \(name)")
            print("\(name) pin, zoom ×2: in view \(report.int("visible"))/60, found \(report.int("found")), error px max \(number(report, "error_px_max"))")
            #expect(report.int("visible") >= 10, "\(name) in view at ×2 for part of the check: \(report)")
            #expect(report.int("found") >= report.int("visible") - max(1, report.int("visible") / 30), "\(report)")
            #expect(number(report, "error_px_p50") <= 1.5 && number(report, "error_px_max") <= 2, "\(name) at ×2: \(report)")
        }
        // A tap on a disc in the zoomed picture lands within 1 cm too.
        try await expert.run("clear", expecting: "empty list") { $0.is(.annotations) && ($0["ids"] as? [String]) == [] }
        let zoomedPin = try await tapDisc("disc.yellow (zoomed)", targets[1].1)

        // Follow that pin at ×2: the crop keeps its anchor in view as the camera orbits.
        let followMark = publisher.output.count
        try await expert.request("follow \(zoomedPin) 2")
        try await publisher.waitForEvent("following", timeout: 15, after: followMark) {
            $0.is(.status) && $0.string("framing_request") == "follow"
        }
        reports = try await expert.checkMarkers(frames: 60)
        RemoteExpertSuiteTests.expectDrawn(reports[zoomedPin], "disc.yellow pin, followed at ×2", frames: 60, maxErrorPx: 2)
        #expect(reports[zoomedPin]?.int("visible") == 60, "a followed pin stays in view: \(reports[zoomedPin] ?? [:])")
        print("effects: worst tap error \(worstCm) cm")

        try await expert.quit()
        publisher.signal(SIGTERM)
        try await publisher.expectCleanExit(timeout: 15)
        signaling.signal(SIGTERM)
        _ = try await signaling.waitForExit(timeout: 10)
    }

    /// Every effect switched on and off from the publisher's stdin while a subscriber
    /// watches: no frame lost (the subscriber's frame ids run without a gap through every
    /// switch), every frame with its own pose (the frame log's pose hash equals the
    /// publisher's for the same frame id), no effect refused.
    @Test("switching effects while a subscriber watches loses no frame and keeps every frame's own pose")
    func switchingEffects() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("posecast-effects-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let pubLog = dir.appendingPathComponent("publisher.jsonl").path, subLog = dir.appendingPathComponent("subscriber.jsonl").path
        let photo = try #require(Self.photo("astronaut"), "the test photos (scripts/effects-setup)")
        let (signaling, url) = try await ManagedProcess.startSignaling()
        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "synthetic", "--pose", "orbit", "--capture-size", "1280x720", "--signaling", url, "--json",
            "--frame-log", pubLog], name: "publisher")
        try await publisher.waitForEvent("publisher registered", timeout: 20) { $0.is(.signalingConnected) }
        let subscriber = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url, "--frame-log", subLog],
                                            name: "subscriber")
        try await subscriber.waitForEvent("30 frames with pose", timeout: 40) { $0.is(.status) && $0.int("frames_with_pose") >= 30 }

        let commands = ["background blur", "background blur=20,depth=3", "background image=\(photo)", "background image=\(photo),depth=2.5",
                        "framing face", "zoom 0.5 0.5 2", "zoom 0.3 0.6 3", "zoom off", "framing person", "background blur=6",
                        "framing off", "background off"]
        let start = publisher.output.count
        for command in commands {
            let mark = publisher.output.count
            publisher.send(command)
            let (reply, _) = try await publisher.waitForEvent("the publisher's answer to `\(command)`", timeout: 15, after: mark) {
                $0.is(.effectChanged) || $0.is(.effectError) || $0.is(.commandError)
            }
            #expect(reply.is(.effectChanged), "`\(command)`: \(reply)")
            try await Task.sleep(for: .milliseconds(800))
        }
        try await Task.sleep(for: .seconds(1))
        let (status, _) = try await publisher.waitForEvent("a status after the switches", timeout: 5, after: publisher.output.count) { $0.is(.status) }
        #expect(status.int("frames_dropped_before_encoding") == 0, "\(status)")
        let errors = publisher.output[start...].filter { $0.contains("\"effect_error\"") || $0.contains("\"effectError\"") }
        #expect(errors.isEmpty, "effect errors: \(errors.prefix(3))")
        try await Self.stop(subscriber: subscriber, publisher: publisher, signaling: signaling)

        // The subscriber's frames joined with the publisher's by id (the pose each was encoded with).
        let join = try FrameLogJoin(publisherLog: pubLog, subscriberLog: subLog)
        #expect(join.ids.count == join.shown, "every frame shown has a frame id (its own pose)")
        #expect(join.ids.count > 300, "frames shown: \(join.ids.count)")
        #expect(join.gaps.isEmpty, "frame ids run without a gap: \(join.gaps.prefix(5))")
        #expect(join.notOwn.isEmpty, "every frame carries the pose it was sent with: \(join.notOwn.prefix(3))")
        print("effects switching: \(join)")
    }

    /// Effects asked for without their models: each is refused naming the missing file and
    /// the command that installs it, and the publisher streams on without them.
    @Test("a missing model is named with its install command, and the video goes on")
    func missingModels() async throws {
        let (signaling, url) = try await ManagedProcess.startSignaling()
        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "synthetic", "--pose", "orbit", "--signaling", url, "--json", "--effects-dir", "/nonexistent/effects",
            "--background", "blur", "--framing", "face"], name: "publisher")
        var refused: [String: String] = [:]
        for effect in ["background", "framing"] {
            let (e, _) = try await publisher.waitForEvent("\(effect) refused", timeout: 20) { $0.is(.effectError) && $0.string("effect") == effect }
            refused[effect] = e.string("message")
        }
        for (effect, message) in refused {
            #expect(message.contains("/nonexistent/effects/libLiteRt.so") && message.contains("bash scripts/effects-setup"),
                    "\(effect): \(message)")
        }
        let subscriber = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url], name: "subscriber")
        let (status, _) = try await subscriber.waitForEvent("frames with pose", timeout: 40) {
            $0.is(.status) && $0.int("frames_with_pose") >= 60
        }
        #expect(status.int("frames_with_pose") == status.int("frames"), "\(status)")
        let (pub, _) = try await publisher.waitForEvent("the publisher's status", timeout: 5, after: publisher.output.count) { $0.is(.status) }
        #expect(pub.string("background") == "off" && pub.string("framing") == "off", "\(pub)")
        try await Self.stop(subscriber: subscriber, publisher: publisher, signaling: signaling)
    }

    @Test("bad pictures are named: a corrupt one as the camera stops the publisher at start (exit 2); a truncated one as the background is an effect error, and the video goes on")
    func badPictures() async throws {
        let dir = NSTemporaryDirectory() + "posecast-bad-pictures-\(getpid())/"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: URL(fileURLWithPath: dir + "corrupt.png"))
        // A real PNG's first 40 bytes: its header states a size, its pixels are gone.
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
                 + [0, 0, 2, 0x80, 0, 0, 1, 0xE0, 8, 2, 0, 0, 0, 0xD5, 0x4F, 0x2E, 0x2A, 0, 0, 0, 0]).write(to: URL(fileURLWithPath: dir + "truncated.png"))
        let (signaling, url) = try await ManagedProcess.startSignaling()
        let camera = try ManagedProcess("posecast-publisher", [
            "--source", "image:\(dir)corrupt.png", "--signaling", url, "--microphone", "none", "--speaker", "none"], name: "publisher (corrupt camera)")
        let status = try await camera.waitForExit(timeout: 20)
        #expect(status == 2, "exit \(status): \(camera.stderrTail)")
        #expect(camera.stderrTail.contains("\(dir)corrupt.png"), "the file is not named: \(camera.stderrTail)")
        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "synthetic", "--pose", "orbit", "--signaling", url, "--json", "--background", "image=\(dir)truncated.png"], name: "publisher")
        let (refused, _) = try await publisher.waitForEvent("background refused", timeout: 20) {
            $0.is(.effectError) && $0.string("effect") == "background"
        }
        #expect(refused.string("message")?.contains("\(dir)truncated.png") == true, "\(refused)")
        let subscriber = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url], name: "subscriber")
        let (shown, _) = try await subscriber.waitForEvent("frames with pose", timeout: 40) { $0.is(.status) && $0.int("frames_with_pose") >= 60 }
        #expect(shown.int("frames_with_pose") == shown.int("frames"), "\(shown)")
        try await Self.stop(subscriber: subscriber, publisher: publisher, signaling: signaling)
    }

    @Test("a recorded video as the camera: played at its rate and looped (a 1 s file gives 6 s of frames, each with its pose); a file that is no video is named at start (exit 2)")
    func videoSource() async throws {
        let dir = NSTemporaryDirectory() + "posecast-video-source-\(getpid())/"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A 1 s moving ball, H.264 in MP4 (gst-launch's -e finishes the file at the end).
        let maker = Process()
        maker.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        maker.arguments = ["-q", "-e", "videotestsrc", "pattern=ball", "num-buffers=30", "!", "video/x-raw,width=320,height=240,framerate=30/1",
                           "!", "x264enc", "!", "mp4mux", "!", "filesink", "location=\(dir)ball.mp4"]
        try maker.run()
        maker.waitUntilExit()
        #expect(maker.terminationStatus == 0, "gst-launch-1.0 could not write the test video")
        try Data(repeating: 7, count: 2048).write(to: URL(fileURLWithPath: dir + "noise.mp4"))
        let (signaling, url) = try await ManagedProcess.startSignaling()
        let refused = try ManagedProcess("posecast-publisher", [
            "--source", "video:\(dir)noise.mp4", "--signaling", url, "--microphone", "none", "--speaker", "none"], name: "publisher (noise video)")
        let status = try await refused.waitForExit(timeout: 20)
        #expect(status == 2 && refused.stderrTail.contains("\(dir)noise.mp4"), "exit \(status): \(refused.stderrTail)")
        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "video:\(dir)ball.mp4", "--pose", "orbit", "--signaling", url, "--json", "--microphone", "none", "--speaker", "none"],
                                         name: "publisher")
        let subscriber = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url], name: "subscriber")
        let (first, _) = try await subscriber.waitForEvent("frames", timeout: 40) { $0.is(.status) && $0.int("frames") >= 30 }
        let started = Date()
        let (later, _) = try await subscriber.waitForEvent("6 s of frames", timeout: 20) {
            $0.is(.status) && $0.int("frames") >= first.int("frames") + 180
        }
        let seconds = Date().timeIntervalSince(started)
        print("video source: \(later.int("frames") - first.int("frames")) frames in \(String(format: "%.1f", seconds)) s from a 1 s file; \(later)")
        #expect(seconds < 8.5, "fewer than 180 frames in 8.5 s: the file did not loop at its rate")
        #expect(later.int("frames_with_pose") == later.int("frames"), "\(later)")
        try await Self.stop(subscriber: subscriber, publisher: publisher, signaling: signaling)
    }

    /// Stops the processes, the publisher cleanly (exit 0).
    static func stop(subscriber: ManagedProcess, publisher: ManagedProcess, signaling: ManagedProcess) async throws {
        subscriber.signal(SIGTERM)
        _ = try await subscriber.waitForExit(timeout: 15)
        publisher.signal(SIGTERM)
        try await publisher.expectCleanExit(timeout: 15)
        signaling.signal(SIGTERM)
        _ = try await signaling.waitForExit(timeout: 10)
    }

    /// A photo installed by scripts/effects-setup, or nil.
    static func photo(_ name: String) -> String? {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            dir = dir.deletingLastPathComponent()
            let path = dir.appendingPathComponent("effects/photos/\(name).png").path
            if FileManager.default.fileExists(atPath: path) { return path }
        }
        let local = FileManager.default.currentDirectoryPath + "/.build/effects/photos/\(name).png"
        return FileManager.default.fileExists(atPath: local) ? local : nil
    }
}
