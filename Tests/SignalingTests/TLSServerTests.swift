import Foundation
import Signaling
import TestSupport
import Testing

/// `wss://`: the server with a certificate and key, clients that trust its CA.
@Suite("Signaling over wss://", .timeLimit(.minutes(1)))
struct TLSServerTests {
    @Test(.enabled(if: SelfSignedCertificate.isAvailable, "needs the openssl command (apt install openssl)"))
    func secureClientsPairOverWSS() async throws {
        let certificate = try SelfSignedCertificate()
        defer { certificate.remove() }
        let (cert, key) = (certificate.certificatePath, certificate.keyPath)
        let server = try await withTimeout(10, "the TLS server to start") {
            try await SignalingServer.start(SignalingServerConfiguration(
                port: 0, tls: SignalingServerTLS(certificateChainPath: cert, privateKeyPath: key)), logger: testLogger)
        }
        #expect(server.url == "wss://127.0.0.1:\(server.port)/")
        let url = "wss://localhost:\(server.port)/"
        let trust = SignalingClientTLS(caCertificatePath: cert)
        let producer = try await withTimeout(10, "wss client") {
            try await SignalingClient.connect(url: url, tls: trust, logger: testLogger)
        }
        let consumer = try await withTimeout(10, "wss client") {
            try await SignalingClient.connect(url: url, tls: trust, logger: testLogger)
        }
        _ = try await ServerLiveTests.declare(producer, PeerStatus(roles: [.producer], meta: nil))
        let producers = try await ServerLiveTests.declare(consumer, PeerStatus(roles: [.consumer], meta: nil))
        #expect(producers.map(\.id) == [producer.peerId])

        // Plain ws:// to a TLS port fails, and so does wss:// without trusting the CA.
        let plain = url.replacingOccurrences(of: "wss://", with: "ws://")
        await #expect(throws: SignalingClientError.self) {
            _ = try await withTimeout(15, "plain client") { try await SignalingClient.connect(url: plain, logger: testLogger) }
        }
        await #expect(throws: SignalingClientError.self) {
            _ = try await withTimeout(15, "untrusting client") { try await SignalingClient.connect(url: url, logger: testLogger) }
        }
        // An IP address cannot be checked against the certificate by SNI: a precise refusal.
        await #expect(throws: SignalingClientError.invalidURL(
            "\(server.url): wss:// needs the host name on the server's certificate, not an IP address")) {
            _ = try await SignalingClient.connect(url: server.url, tls: trust, logger: testLogger)
        }
        producer.close(); consumer.close()
        try await withTimeout(15, "the server to stop") { await server.stop() }
    }

    @Test func missingOrBadCertificateFilesAreNamed() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("posecast-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let junk = dir.appendingPathComponent("junk.pem").path
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: junk))
        for (cert, key) in [("/nonexistent/cert.pem", junk), (junk, junk)] {
            do {
                _ = try await SignalingServer.start(SignalingServerConfiguration(
                    port: 0, tls: SignalingServerTLS(certificateChainPath: cert, privateKeyPath: key)), logger: testLogger)
                Issue.record("started with \(cert)")
            } catch let error as SignalingServerError {
                #expect(error.description.contains(cert), "\(error)")
            }
        }
    }
}
