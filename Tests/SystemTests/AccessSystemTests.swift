import Foundation
import TestSupport
import Testing

/// Access control across real processes: signaling over wss:// with room and role
/// tokens; an expert may steer, a viewer's requests are refused by the publisher, a
/// wrong token and a plain ws:// client get nowhere. Every wait has a time limit.
@Suite("system: access control over wss://", .serialized, .tags(.system))
struct AccessSystemTests {
    @Test("wss:// with tokens: expert steers, viewer is refused, wrong token and plain ws:// get nowhere",
          .enabled(if: SelfSignedCertificate.isAvailable, "needs the openssl command (apt install openssl)"))
    func tokensRolesAndTLS() async throws {
        let certificate = try SelfSignedCertificate()
        defer { certificate.remove() }
        let (cert, key) = (certificate.certificatePath, certificate.keyPath)
        let signaling = try ManagedProcess("posecast-signaling", [
            "--port", "0", "--tls-cert", cert, "--tls-key", key,
            "--token", "lab=expert-secret", "--token", "lab/publisher=pub-secret", "--token", "lab/viewer=view-secret",
            "--require-tokens"], name: "signaling")
        let (listening, _) = try await signaling.waitForLine("listening line", timeout: 20) { $0.hasPrefix("listening ") }
        let printed = String(listening.dropFirst("listening ".count))
        #expect(printed.hasPrefix("wss://127.0.0.1:"))
        // Connect by the name on the certificate.
        let url = printed.replacingOccurrences(of: "127.0.0.1", with: "localhost")

        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "test", "--signaling", url, "--signaling-ca", cert, "--room", "lab", "--token", "pub-secret", "--json"],
            name: "publisher")
        try await publisher.waitForEvent("publisher registered over wss://", timeout: 20) { $0.is(.signalingConnected) }

        func subscriber(_ name: String, _ extra: [String]) throws -> ManagedProcess {
            try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url, "--signaling-ca", cert,
                                                       "--room", "lab"] + extra, name: name)
        }
        func posedFrames(_ p: ManagedProcess, after: Int = 0) async throws {
            try await p.waitForEvent("20 posed frames", timeout: 40, after: after) {
                $0.is(.status) && $0.int("frames_with_pose") >= 20
            }
        }

        let expert = try subscriber("expert", ["--token", "expert-secret"])
        let viewer = try subscriber("viewer", ["--role", "viewer", "--token", "view-secret"])
        // The viewer's token does not open the expert role, nor the publisher's.
        let impostor = try subscriber("impostor", ["--token", "view-secret"])
        try await posedFrames(expert)
        try await posedFrames(viewer)
        try await impostor.waitForEvent("refusal of the wrong token", timeout: 20) {
            $0.is(.serverError) && $0.string("code") == "unauthorized"
        }
        #expect(!impostor.output.contains { $0.contains("\"event\":\"connected\"") }, "the impostor never got a session")
        let refusalText = impostor.events.first { $0.is(.serverError) }?.string("details") ?? ""
        #expect(!refusalText.contains("secret"), "errors never repeat a token: \(refusalText)")

        // The expert may annotate.
        try await expert.waitForEvent("control channel", timeout: 15) { $0.is(.controlOpen) }
        let markExpert = expert.output.count
        expert.send("tap 0.5 0.5 valve")
        let (_, ackIndex) = try await expert.waitForEvent("ack of the expert's tap", timeout: 10, after: markExpert) {
            $0.is(.ack) && $0.string("annotationId") != nil
        }
        // The viewer sees the list but may not steer: each request gets notAllowed, and it keeps receiving.
        try await viewer.waitForEvent("control channel", timeout: 15) { $0.is(.controlOpen) }
        try await viewer.waitForEvent("the expert's annotation in the viewer's list", timeout: 10) {
            $0.is(.annotations) && $0.int("count") == 1
        }
        for command in ["tap 0.4 0.4 graffiti", "clear", "focus 0.5 0.5 tapToLockFocus"] {
            let mark = viewer.output.count
            viewer.send(command)
            let (refusal, _) = try await viewer.waitForEvent("refusal of \(command)", timeout: 10, after: mark) {
                $0.is(.error)
            }
            #expect(refusal.string("code") == "notAllowed", "\(command): \(refusal)")
        }
        try await posedFrames(viewer, after: viewer.output.count)
        // The refused clear did not happen: no list without the expert's annotation was ever sent.
        let listsSinceTap = expert.output[ackIndex...].filter { $0.contains("\"event\":\"annotations\"") }
        #expect(!listsSinceTap.isEmpty && !listsSinceTap.contains { $0.contains("\"count\":0") }, "\(listsSinceTap)")
        try await publisher.waitForEvent("publisher refused the viewer", timeout: 10) {
            $0.is(.control) && ($0.string("reply") ?? "").contains("notAllowed")
        }

        // Plain ws:// to the TLS port: the client keeps failing to connect, precisely, and never crashes.
        let plainURL = url.replacingOccurrences(of: "wss://", with: "ws://")
        let plain = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", plainURL, "--room", "lab",
                                                               "--token", "expert-secret"], name: "plain ws")
        try await plain.waitForEvent("plain ws:// refused", timeout: 30) { $0.is(.signalingLost) }
        #expect(plain.isRunning)

        for p in [plain, impostor, viewer, expert, publisher, signaling] { p.signal(SIGTERM) }
        for p in [plain, impostor, viewer, expert, publisher, signaling] { _ = try await p.waitForExit(timeout: 15) }
    }
}
