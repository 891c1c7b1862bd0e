import Foundation
import NodeOutput
import Testing
import TestSupport

/// The field's voice through Janus: the publisher's audio goes into its VideoRoom feed
/// beside the video (its SSRC declared, as the video's), and every subscriber of the feed
/// gets it from Janus with the frames.
@Suite("system: the field's voice through Janus", .serialized, .tags(.system))
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
}
