import Foundation
import NodeOutput
import Testing
import TestSupport

/// Whether an event says a tone of `hz` started where it is heard.
private func toneStarted(_ hz: Int) -> ([String: Any]) -> Bool {
    { $0.is(.tone) && ($0["hertz"] as? NSNumber)?.intValue == hz && ($0["started"] as? Bool) == true }
}

/// Mouth to ear (ms, sorted) of bursts each sent at a whole second of the sender's wall
/// clock, from the listener's `tone` starts: what is left over the second is the way. The
/// first two are left out (they may straddle the stream's start).
private func burstDelays(_ starts: [[String: Any]]) -> [Double] {
    starts.dropFirst(2).compactMap { ($0["atNanos"] as? NSNumber)?.uint64Value }.map { (n: UInt64) -> Double in
        let ms = Double(n % 1_000_000_000) / 1e6
        return ms > 900 ? ms - 1000 : ms
    }.sorted()
}

/// Voice through Janus. The field's: the publisher's audio goes into its VideoRoom feed
/// beside the video (its SSRC declared, as the video's), and every subscriber of the feed
/// gets it from Janus with the frames. The experts': each expert publishes a feed of its
/// own into the voice room, under the name the publisher gave it, and the publisher
/// subscribes to the feeds of its experts only.
@Suite("system: voice through Janus, both ways", .serialized, .tags(.system))
struct SFUVoiceSystemTests {
    @Test("the field's voice through Janus: an expert hears the publisher's 1 kHz bursts, each within ±45 ms of the flash frame captured with it, and is told it listens only")
    func fieldToExpert() async throws {
        guard let net = try SFUNetwork.make(orSkip: "the voice-through-Janus test") else { return }
        defer { net.remove() }
        let stage = try await SFUStage.start(on: net, name: "voice", publisherArguments: [
            "--flash", "--microphone", "bursts=1000", "--speaker", "discard"])
        defer { stage.stop() }
        let expert = try net.process("posecast-subscriber", [
            "--headless", "--json", "--signaling", stage.signaling, "--sfu", stage.sfu, "--room", stage.room, "--role", "expert",
            "--microphone", "none", "--speaker", "discard", "--av-sync", "1000"], name: "expert through Janus")
        let (voice, _) = try await expert.waitForEvent("the expert's voice mode", timeout: 30) {
            $0.is(.voice) && ($0["mode"] as? String)?.hasPrefix("listen only") == true
        }
        #expect((voice["mode"] as? String)?.contains("no microphone") == true, "\(voice)")
        try await waitUntil(40, "15 flash-and-burst pairs at the expert",
                            progress: { "\(expert.events.filter { $0.is(.avSync) }.count)" }) {
            expert.events.filter { $0.is(.avSync) }.count >= 16
        }
        // The first pair may straddle the start of the stream.
        let pairs = expert.events.filter { $0.is(.avSync) }.dropFirst()
        let offsets = pairs.compactMap { ($0["offsetMs"] as? NSNumber)?.doubleValue }.sorted()
        let ears = pairs.compactMap { ($0["audioMs"] as? NSNumber)?.doubleValue }.sorted()
        let p95 = offsets.map(abs).sorted()[Int(Double(offsets.count - 1) * 0.95)]
        print("sfu voice: A/V offset (audio after video) \(offsets.map { String(format: "%.0f", $0) }.joined(separator: ", ")) ms; "
              + "|offset| p95 \(String(format: "%.1f", p95)) ms; mouth-to-ear p50 \(String(format: "%.0f", ears[ears.count / 2])) ms")
        #expect(p95 <= 45, "A/V offsets through Janus: \(offsets)")
        expert.send("quit")
        try await expert.expectCleanExit(timeout: 15)
        stage.publisher.signal(SIGTERM)
        try await stage.publisher.expectCleanExit(timeout: 15)
    }

    @Test("both ways through Janus: the field hears the expert's 2 kHz bursts (mouth-to-ear from the wall clock's whole second), the expert sees and hears the field within ±45 ms; a viewer through Janus is never routed nor heard")
    func bothWays() async throws {
        guard let net = try SFUNetwork.make(orSkip: "the voice-both-ways-through-Janus test") else { return }
        defer { net.remove() }
        let stage = try await SFUStage.start(on: net, name: "voice both ways", publisherArguments: [
            "--flash", "--microphone", "bursts=1000", "--speaker", "discard", "--detect-tones", "2000,3000"])
        defer { stage.stop() }
        try await stage.publisher.waitForEvent("the voice room made", timeout: 20) { $0.is(.sfuVoiceRoom) }
        let expert = try net.process("posecast-subscriber", [
            "--headless", "--json", "--signaling", stage.signaling, "--sfu", stage.sfu, "--room", stage.room, "--role", "expert",
            "--microphone", "bursts=2000", "--speaker", "discard", "--av-sync", "1000"], name: "expert through Janus")
        let viewer = try net.process("posecast-subscriber", [
            "--headless", "--json", "--signaling", stage.signaling, "--sfu", stage.sfu, "--room", stage.room, "--role", "viewer",
            "--microphone", "tone=3000", "--speaker", "discard"], name: "viewer through Janus")
        try await expert.waitForEvent("the expert's voice flows through Janus", timeout: 30) {
            $0.is(.sfuVoicePublishing) && $0.string("state") == "talking"
        }
        let (heard, _) = try await stage.publisher.waitForEvent("the publisher subscribed to the expert's voice", timeout: 20) {
            $0.is(.sfuVoiceHeard)
        }
        let tone = toneStarted
        try await waitUntil(30, "12 of the expert's bursts at the field",
                            progress: { "\(stage.publisher.events.filter(tone(2000)).count)" }) {
            stage.publisher.events.filter(tone(2000)).count >= 12 && expert.events.filter { $0.is(.avSync) }.count >= 12
        }
        let ears = burstDelays(stage.publisher.events.filter(tone(2000)))
        let offsets: [Double] = expert.events.filter { $0.is(.avSync) }.dropFirst().compactMap { ($0["offsetMs"] as? NSNumber)?.doubleValue }.sorted()
        let p95: Double = offsets.map { abs($0) }.sorted()[Int(Double(offsets.count - 1) * 0.95)]
        let earList = ears.map { String(format: "%.0f", $0) }.joined(separator: ", ")
        let earMedian = String(format: "%.0f", ears[ears.count / 2])
        print("sfu voice both ways: expert → field mouth-to-ear \(earList) ms (p50 \(earMedian) ms); "
              + "field → expert A/V offset |p95| \(String(format: "%.1f", p95)) ms")
        #expect(ears[ears.count / 2] < 250, "the expert's voice reaches the field late: \(ears)")
        #expect(p95 <= 45, "A/V offsets at the expert: \(offsets)")
        // The viewer listens only: never told a route, never heard (its 3 kHz tone).
        #expect(!viewer.events.contains { $0.is(.sfuVoicePublishing) }, "a viewer was routed: \(viewer.events.filter { $0.is(.sfuVoicePublishing) })")
        #expect(!stage.publisher.events.contains(where: tone(3000)), "the field heard the viewer")
        #expect(stage.publisher.events.filter { $0.is(.sfuVoiceHeard) }.count == 1, "only the expert heard: \(heard)")

        // The expert leaves: its voice ends at the field (its session ended, its feed gone).
        expert.send("quit")
        try await expert.expectCleanExit(timeout: 15)
        try await stage.publisher.waitForEvent("the expert's voice ended", timeout: 15) { $0.is(.sfuVoiceEnded) }
        viewer.send("quit")
        try await viewer.expectCleanExit(timeout: 15)
        stage.publisher.signal(SIGTERM)
        try await stage.publisher.expectCleanExit(timeout: 15)
    }

    @Test("the browser console through Janus talks to the field: routed by the publisher, its 600 Hz heard at the field, gone within 1.5 s of its mute and back within 1.5 s of its unmute (the direct console's bounds; the times are printed); it hears the field's 1 kHz; it and a GStreamer expert through Janus hear each other")
    func consoleToField() async throws {
        if let why = SFUConsoleDriver.unavailable { print("SKIPPED: the console's voice through Janus: \(why)"); return }
        guard let net = try SFUNetwork.make(orSkip: "the console's voice through Janus") else { return }
        defer { net.remove() }
        let frameLog = NSTemporaryDirectory() + net.name + "-console-voice.jsonl"
        defer { try? FileManager.default.removeItem(atPath: frameLog) }
        let stage = try await SFUStage.start(on: net, name: "console voice", publisherArguments: [
            "--microphone", "bursts=1000", "--speaker", "discard", "--detect-tones", "600", "--frame-log", frameLog])
        defer { stage.stop() }
        // A GStreamer expert through Janus beside it: the two hear each other.
        let expert = try net.process("posecast-subscriber", [
            "--headless", "--json", "--signaling", stage.signaling, "--sfu", stage.sfu, "--room", stage.room, "--role", "expert",
            "--microphone", "bursts=3000", "--speaker", "discard", "--detect-tones", "600"], name: "expert beside the console")
        try await expert.waitForEvent("the expert's voice through Janus", timeout: 30) {
            $0.is(.sfuVoicePublishing) && $0.string("state") == "talking"
        }
        let console = stage.signaling.replacingOccurrences(of: "ws://", with: "http://")
        let janus = String(stage.sfu.dropFirst("janus:".count))
        let (run, summary) = try await AiortcPython.run([
            AiortcPython.script("chromium_console.py"), "--console", console, "--sfu", janus, "--room", stage.room,
            "--frame-log", frameLog, "--audio", "tone=600", "--heard-hz", "1000", "--hear-others", "1", "--timeout", "120"],
                                                        timeout: 140, inside: net.exec)
        print(run.stdout.split(separator: "\n").filter { $0.hasPrefix("{\"step\"") }.joined(separator: "\n"))
        #expect(summary["ok"] as? Bool == true, "console: \(summary["reasons"] ?? "-"); \(run.stderrTail)")
        let heard = summary["heard"] as? [String: Any] ?? [:]
        #expect((heard["peaks_at_heard_hz"] as? NSNumber)?.intValue ?? 0 > 0, "the console did not hear the field's 1 kHz: \(heard)")
        #expect(stage.publisher.events.filter { $0.is(.sfuVoiceHeard) }.count == 2, "the publisher did not subscribe to both voices")
        #expect(summary["others_heard"] != nil, "the console did not receive the other expert's voice")
        #expect(expert.events.contains(where: toneStarted(600)),
                "the GStreamer expert never heard the console's 600 Hz")
        let tone = { (started: Bool) in { (e: [String: Any]) in
            e.is(.tone) && (e["hertz"] as? NSNumber)?.intValue == 600 && (e["started"] as? Bool) == started } }
        let starts = stage.publisher.events.filter(tone(true)).compactMap { ($0["atNanos"] as? NSNumber)?.uint64Value }
        let stops = stage.publisher.events.filter(tone(false)).compactMap { ($0["atNanos"] as? NSNumber)?.uint64Value }
        #expect(!starts.isEmpty, "the field never heard the console's 600 Hz")
        if let muted = (summary["muted_at_ns"] as? NSNumber)?.uint64Value, let unmuted = (summary["unmuted_at_ns"] as? NSNumber)?.uint64Value {
            // The stop the mute made: the first after the key press that no start follows
            // before the unmute (a dropout just before it is not the mute's).
            let stop = stops.first { s in s > muted && s < unmuted && !starts.contains { $0 > s && $0 < unmuted } }
                .map { (Double($0) - Double(muted)) / 1e6 }
            let back = starts.first { $0 > unmuted - 100_000_000 }.map { (Double($0) - Double(unmuted)) / 1e6 }
            print("console voice through Janus: at the field, stopped \(stop.map { String(format: "%.0f", $0) } ?? "never") ms after the mute, "
                  + "back \(back.map { String(format: "%.0f", $0) } ?? "never") ms after the unmute")
            #expect(stop.map { $0 <= 1500 } == true, "the console's tone did not stop at the field within 1.5 s of its mute: \(stop ?? -1)")
            #expect(back.map { $0 <= 1500 } == true, "the console's tone was not back at the field within 1.5 s of its unmute: \(back ?? -1)")
        } else {
            Issue.record("the driver did not mute: \(summary)")
        }
        expert.send("quit")
        try await expert.expectCleanExit(timeout: 15)
        stage.publisher.signal(SIGTERM)
        try await stage.publisher.expectCleanExit(timeout: 15)
    }

    @Test("two experts through Janus hear each other (each subscribes to the other's feed, named by the publisher) and the field hears both")
    func expertsHearEachOther() async throws {
        guard let net = try SFUNetwork.make(orSkip: "the experts-hear-each-other-through-Janus test") else { return }
        defer { net.remove() }
        let stage = try await SFUStage.start(on: net, name: "two experts", publisherArguments: [
            "--microphone", "bursts=1000", "--speaker", "discard", "--detect-tones", "2000,3000"])
        defer { stage.stop() }
        func expert(_ hz: Int, hears: Int) throws -> ManagedProcess {
            try net.process("posecast-subscriber", [
                "--headless", "--json", "--signaling", stage.signaling, "--sfu", stage.sfu, "--room", stage.room, "--role", "expert",
                "--microphone", "bursts=\(hz)", "--speaker", "discard", "--detect-tones", "\(hears)"], name: "expert \(hz) Hz")
        }
        func descriptors(_ process: ManagedProcess) -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.pid)/fd").count) ?? -1
        }
        let fdsBefore = descriptors(stage.publisher)
        let a = try expert(2000, hears: 3000), b = try expert(3000, hears: 2000)
        let tone = toneStarted
        defer {
            // What each expert said of the other talkers, when something went wrong.
            if a.events.filter(tone(3000)).count < 8 || b.events.filter(tone(2000)).count < 8 {
                print("expert 2000 Hz: \(a.stderrTail(3000))\nexpert 3000 Hz: \(b.stderrTail(3000))")
                print("events b: \(b.events.filter { !$0.is(.status) }.suffix(20))")
            }
        }
        try await waitUntil(45, "8 bursts of each expert at the other and at the field", progress: {
            "a hears \(a.events.filter(tone(3000)).count), b hears \(b.events.filter(tone(2000)).count), field \(stage.publisher.events.filter(tone(2000)).count)/\(stage.publisher.events.filter(tone(3000)).count)"
        }) {
            a.events.filter(tone(3000)).count >= 8 && b.events.filter(tone(2000)).count >= 8
                && stage.publisher.events.filter(tone(2000)).count >= 8 && stage.publisher.events.filter(tone(3000)).count >= 8
        }
        let aToB = burstDelays(b.events.filter(tone(2000))), bToA = burstDelays(a.events.filter(tone(3000)))
        print("sfu voice, expert to expert: 2 kHz expert → 3 kHz expert \(aToB.map { String(format: "%.0f", $0) }) ms, "
              + "back \(bToA.map { String(format: "%.0f", $0) }) ms")
        #expect(aToB[aToB.count / 2] < 250 && bToA[bToA.count / 2] < 250, "expert to expert: \(aToB), \(bToA)")
        #expect(stage.publisher.events.filter { $0.is(.sfuVoiceHeard) }.count == 2)
        b.send("quit")
        try await b.expectCleanExit(timeout: 15)
        try await stage.publisher.waitForEvent("the second expert's voice ended", timeout: 15) { $0.is(.sfuVoiceEnded) }
        a.send("quit")
        try await a.expectCleanExit(timeout: 15)
        // Every session's peers and Janus handles gone with it: the publisher's descriptors come back down.
        try await Task.sleep(for: .seconds(3))
        let fdsAfter = descriptors(stage.publisher)
        print("sfu voice, expert to expert: the publisher's descriptors \(fdsBefore) before the experts, \(fdsAfter) after they left")
        #expect(fdsAfter <= fdsBefore + 4, "the publisher kept \(fdsAfter - fdsBefore) descriptors after both experts left")
        stage.publisher.signal(SIGTERM)
        try await stage.publisher.expectCleanExit(timeout: 15)
    }
}
