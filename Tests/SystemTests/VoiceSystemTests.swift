import Foundation
import Testing
import TestSupport

/// A number field of a JSON event (NaN when absent).
private func number(_ e: [String: Any], _ key: String) -> Double { (e[key] as? NSNumber)?.doubleValue ?? .nan }

/// Two-way voice across real processes. No sound card here: every voice is a
/// test tone (`--microphone tone=HZ`, or `bursts=HZ` at each whole second with the
/// synthetic camera's flash frame), and every speaker plays in real time into nothing
/// (`--speaker discard`); each side's tone detector says when a tone starts and stops
/// where it is heard.
@Suite("system: two-way voice (lip sync, the expert's voice, mute, two experts, a viewer)", .serialized, .tags(.system))
struct VoiceSystemTests {
    static func tone(_ hz: Int, started: Bool) -> ([String: Any]) -> Bool {
        { $0.is(.tone) && Int(number($0, "hertz")) == hz && ($0["started"] as? Bool) == started }
    }

    /// The field's flash frame and 1 kHz burst, captured at the same instant once a second,
    /// reach the expert within ±45 ms of each other (the median, and nine pairs of ten); the expert's 2 kHz tone reaches the
    /// field; muting the expert stops it at the field within 200 ms, unmuting brings it back.
    @Test("lip sync within ±45 ms, the expert heard by the field, mute within 200 ms")
    func lipSyncAndMute() async throws {
        let (signaling, url) = try await ManagedProcess.startSignaling()
        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "synthetic", "--flash", "--microphone", "bursts=1000", "--speaker", "discard", "--detect-tones", "2000",
            // 1 Mbit/s, not 2: decoding 2 Mbit/s beside the publisher on two cores leaves voice little (a test of sync, not of bitrate).
            "--bitrate", "1000", "--signaling", url, "--json"], name: "publisher")
        try await publisher.waitForEvent("publisher registered", timeout: 20) { $0.is(.signalingConnected) }
        let (voice, _) = try await publisher.waitForEvent("voice at start", timeout: 5) { $0.is(.voice) }
        #expect(voice.string("mode") == "two-way", "\(voice)")
        let expert = try ManagedProcess("posecast-subscriber", [
            "--headless", "--json", "--signaling", url, "--microphone", "tone=2000", "--speaker", "discard", "--av-sync", "1000"],
                                        name: "expert")
        let (mode, _) = try await expert.waitForEvent("the expert's voice", timeout: 30) { $0.is(.voice) }
        #expect(mode.string("mode") == "two-way", "\(mode)")

        // Lip sync: 3 pairs to settle (the playout follows the pipeline's latency), then 10.
        var offsets: [Double] = [], audio: [Double] = [], video: [Double] = []
        var mark = 0
        for i in 0..<13 {
            let (pair, index) = try await expert.waitForEvent("A/V pair \(i + 1)", timeout: 10, after: mark) { $0.is(.avSync) }
            mark = index + 1
            guard i >= 3 else { continue }
            offsets.append(number(pair, "offsetMs")); audio.append(number(pair, "audioMs")); video.append(number(pair, "videoMs"))
        }
        let inOrder = offsets
        offsets.sort()
        let p50 = offsets[offsets.count / 2], worst = offsets.map(abs).max()!
        print("lip sync: offset (audio after video) p50 \(p50) ms, worst |offset| \(worst) ms, in order \(inOrder); "
              + "audio capture→played \(audio.sorted()[audio.count / 2]) ms, video capture→shown \(video.sorted()[video.count / 2]) ms")
        // Within ±45 ms (broadcast practice): the median, and nine pairs of ten. On these
        // two shared cores a pair now and then falls in a moment when the
        // machine stalls: the video and the voice are both late, and the burst's first
        // samples are lost (its onset found 50 ms into it). The release benchmark
        // (scripts/bench-av) had no such pair in 40.
        // A call with voice keeps its video rate: webrtcbin's transport-wide feedback (it
        // reads only the one-byte header form, so every packet with the pose looked lost)
        // once put it on the 150 kbit/s floor within 8 s; our receiver's reports stand instead.
        let rates = publisher.events.filter { $0.is(.congestion) }.compactMap { ($0["encoderKbps"] as? NSNumber)?.intValue }
        print("lip sync: the publisher's encoder rate over the call \(rates) kbit/s")
        #expect((rates.last ?? 0) >= 600, "the video rate fell in a call with voice: \(rates); the last congestion event: \(publisher.events.last { $0.is(.congestion) } ?? [:])")
        #expect(abs(p50) <= 45, "the median A/V offset \(p50) ms")
        #expect(offsets.filter { abs($0) <= 45 }.count >= 9, "nine A/V pairs of ten within ±45 ms: \(inOrder)")

        // The field hears the expert.
        do {
            try await publisher.waitForEvent("the expert's 2 kHz at the field", timeout: 10, after: 0, Self.tone(2000, started: true))
        } catch {
            let status = publisher.events.last { $0.is(.status) } ?? [:]
            let sent: [String: Any] = expert.events.last { $0.is(.status) } ?? [:]
            let problems: [String] = publisher.events.filter { $0.is(.error) || $0.is(.pipelineError) || $0.is(.pipelineWarning) }.map { "\($0)" }
            let levels = "voice levels \(status["voice_experts_db"] ?? "-"), speaker \(status["voice_speaker_db"] ?? "-") dBFS"
            let sending = "the expert sent \(sent["voice_sent_packets"] ?? "-") packets, mic \(sent["voice_mic_db"] ?? "-") dBFS"
            Issue.record("the field never heard the expert: \(levels); \(sending); publisher problems: \(problems.joined(separator: "; "))")
            throw error
        }
        // Muted: the tone stops where the field hears it, within 200 ms of the command.
        let publisherMark = publisher.output.count, expertMark = expert.output.count
        expert.send("mute")
        let (muted, _) = try await expert.waitForEvent("muted", timeout: 5, after: expertMark) { $0.is(.muted) }
        let (stopped, _) = try await publisher.waitForEvent("the 2 kHz tone stopping at the field", timeout: 5, after: publisherMark,
                                                            Self.tone(2000, started: false))
        let stopMs = (number(stopped, "atNanos") - number(muted, "atNanos")) / 1e6
        print("mute: the expert's tone stopped at the field \(stopMs) ms after the mute command")
        #expect(stopMs <= 200, "the tone stops within 200 ms of mute: \(stopMs) ms")
        // Everyone is told.
        try await expert.waitForEvent("the conversation shows us muted", timeout: 5, after: expertMark) { e in
            e.is(.voices) && ((e["participants"] as? [[String: Any]]) ?? []).contains { ($0["muted"] as? Bool) == true && $0["role"] as? String == "expert" }
        }
        // Muted, the expert sends silence as Opus DTX: a comfort-noise packet every 400 ms
        // or so, not 100 a second.
        let quietMark = expert.output.count
        let (first, firstIndex) = try await expert.waitForEvent("a status while muted", timeout: 5, after: quietMark) {
            $0.is(.status) && $0["voice_sent_packets"] != nil
        }
        let firstAt = Date()
        try await Task.sleep(for: .seconds(2))
        let (later, _) = try await expert.waitForEvent("a status 2 s later", timeout: 5, after: max(firstIndex + 1, expert.output.count)) {
            $0.is(.status) && $0["voice_sent_packets"] != nil
        }
        let mutedRate = (number(later, "voice_sent_packets") - number(first, "voice_sent_packets")) / Date().timeIntervalSince(firstAt)
        print("muted: the expert sent \(String(format: "%.1f", mutedRate)) voice packets a second")
        #expect(mutedRate <= 15, "muted, the expert still sends \(mutedRate) voice packets a second (no DTX)")
        // And back, as fast.
        let again = publisher.output.count, expertAgain = expert.output.count
        expert.send("unmute")
        let (unmuted, _) = try await expert.waitForEvent("unmuted", timeout: 5, after: expertAgain) {
            $0.is(.muted) && $0["who"] as? String == "self" && $0["muted"] as? Bool == false
        }
        let (back, _) = try await publisher.waitForEvent("the 2 kHz tone back", timeout: 5, after: again, Self.tone(2000, started: true))
        let backMs = (number(back, "atNanos") - number(unmuted, "atNanos")) / 1e6
        print("unmute: the expert's tone back at the field \(backMs) ms after the unmute command")
        #expect(backMs <= 200, "the tone is back within 200 ms of unmute: \(backMs) ms")

        expert.send("quit")
        try await expert.expectCleanExit(timeout: 15)
        publisher.signal(SIGTERM)
        try await publisher.expectCleanExit(timeout: 15)
        signaling.signal(SIGTERM)
        _ = try await signaling.waitForExit(timeout: 10)
    }

    /// Two experts and a viewer: the field hears both experts (2 and 3 kHz), each expert
    /// hears the field (1 kHz) and the other expert, and the viewer hears all three but is
    /// not heard (a room where viewers only listen, the default): its 5.4 kHz never reaches
    /// anyone. Its tone is far from the others on purpose: Opus's coding noise beside a
    /// 3 kHz tone reached −28 dBFS at 2.6 kHz in a CI run (and 4 kHz, 1 + 3 kHz, in another),
    /// above the detector's −30; at 5.4 kHz it stays below −50 (measured through opusenc). Then a second round of two experts leaves no socket or thread behind.
    @Test("two experts hear the field and each other, the field hears both, a viewer only listens; nothing leaks")
    func twoExpertsAndAViewer() async throws {
        let (signaling, url) = try await ManagedProcess.startSignaling()
        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "synthetic", "--microphone", "bursts=1000", "--speaker", "discard", "--detect-tones", "2000,3000,5400",
            "--signaling", url, "--json"], name: "publisher")
        try await publisher.waitForEvent("publisher registered", timeout: 20) { $0.is(.signalingConnected) }
        func subscriber(_ name: String, tone: Int, hears: [Int], role: String = "expert") throws -> ManagedProcess {
            try ManagedProcess("posecast-subscriber", [
                "--headless", "--json", "--signaling", url, "--role", role, "--microphone", "tone=\(tone)", "--speaker", "discard",
                "--detect-tones", hears.map(String.init).joined(separator: ",")], name: name)
        }
        let a = try subscriber("expert A", tone: 2000, hears: [1000, 3000, 5400])
        let b = try subscriber("expert B", tone: 3000, hears: [1000, 2000, 5400])
        let viewer = try subscriber("viewer", tone: 5400, hears: [1000, 2000, 3000], role: "viewer")
        let (viewerMode, _) = try await viewer.waitForEvent("the viewer's voice", timeout: 40) { $0.is(.voice) }
        #expect(viewerMode.string("mode")?.hasPrefix("listen only") == true, "a viewer listens only: \(viewerMode)")

        try await publisher.waitForEvent("expert A at the field", timeout: 30, Self.tone(2000, started: true))
        try await publisher.waitForEvent("expert B at the field", timeout: 30, Self.tone(3000, started: true))
        try await a.waitForEvent("the field at expert A", timeout: 30, Self.tone(1000, started: true))
        try await a.waitForEvent("expert B at expert A", timeout: 30, Self.tone(3000, started: true))
        try await b.waitForEvent("the field at expert B", timeout: 30, Self.tone(1000, started: true))
        try await b.waitForEvent("expert A at expert B", timeout: 30, Self.tone(2000, started: true))
        try await viewer.waitForEvent("the field at the viewer", timeout: 30, Self.tone(1000, started: true))
        try await viewer.waitForEvent("expert A at the viewer", timeout: 30, Self.tone(2000, started: true))
        try await viewer.waitForEvent("expert B at the viewer", timeout: 30, Self.tone(3000, started: true))
        // Everyone has been hearing everyone for a while: the viewer's voice reached no one.
        try await Task.sleep(for: .seconds(3))
        for (process, name) in [(publisher, "the field"), (a, "expert A"), (b, "expert B")] {
            #expect(!process.events.contains(where: Self.tone(5400, started: true)), "the viewer's 5.4 kHz reached \(name)")
        }
        let voices = try #require(a.events.last { $0.is(.voices) }, "a voices list at expert A")
        let participants = (voices["participants"] as? [[String: Any]]) ?? []
        #expect(participants.count == 4, "the field, two experts and the viewer: \(participants)")
        #expect(participants.first { $0["role"] as? String == "viewer" }?["mayTalk"] as? Bool == false, "\(participants)")
        print("two experts: every voice heard where it should be; the viewer's nowhere")

        for p in [a, b, viewer] { p.send("quit") }
        for p in [a, b, viewer] { try await p.expectCleanExit(timeout: 15) }

        // Sessions with voice leave nothing behind: a second round of two experts ends
        // with the publisher's sockets and threads where the first round left them.
        func idle(after mark: Int, _ what: String) async throws -> [String: Any] {
            try await publisher.waitForEvent(what, timeout: 30, after: mark) { $0.is(.status) && $0.int("sessions") == 0 }.event
        }
        let base = try await idle(after: publisher.output.count, "no session after the first round")
        let mark = publisher.output.count
        let a2 = try subscriber("expert A again", tone: 2000, hears: [1000])
        let b2 = try subscriber("expert B again", tone: 3000, hears: [1000])
        try await publisher.waitForEvent("expert A again at the field", timeout: 30, after: mark, Self.tone(2000, started: true))
        try await publisher.waitForEvent("expert B again at the field", timeout: 30, after: mark, Self.tone(3000, started: true))
        for p in [a2, b2] { p.send("quit") }
        for p in [a2, b2] { try await p.expectCleanExit(timeout: 15) }
        let (left, _) = try await publisher.waitForEvent("resources back after the second round", timeout: 30, after: mark) {
            $0.is(.status) && $0.int("sessions") == 0
                && $0.int("open_fds") <= base.int("open_fds") && $0.int("threads") <= base.int("threads") + Fault.idleThreadSlack
        }
        print("voice sessions: publisher open_fds/threads \(base.int("open_fds"))/\(base.int("threads")) after the first round, "
              + "\(left.int("open_fds"))/\(left.int("threads")) after the second")
        publisher.signal(SIGTERM)
        try await publisher.expectCleanExit(timeout: 15)
        signaling.signal(SIGTERM)
        _ = try await signaling.waitForExit(timeout: 10)
    }
}
