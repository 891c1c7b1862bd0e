@testable import RTCSession
import Testing

/// The certificate webrtcbin presents (ECDSA P-256) and the fingerprint our SDP carries.
@Suite("DTLS certificate")
struct DTLSCertificateTests {
    /// A throwaway test certificate made with
    /// `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=posecast-test`;
    /// `openssl x509 -noout -fingerprint -sha256` gave `expected`. The key protects nothing.
    static let testPEM = """
        -----BEGIN CERTIFICATE-----
        MIIBhTCCASugAwIBAgIUcaDKNRT7diGY1joSOOyKWVPA448wCgYIKoZIzj0EAwIw
        GDEWMBQGA1UEAwwNcG9zZWNhc3QtdGVzdDAeFw0yNjExMjExMDA2NDFaFw0zNjEx
        MTgxMDA2NDFaMBgxFjAUBgNVBAMMDXBvc2VjYXN0LXRlc3QwWTATBgcqhkjOPQIB
        BggqhkjOPQMBBwNCAAQcVE8980U9x8Sm6id9JvlIAGUAMOUkIw5g1t1KOBf1OHaL
        J+sDWW+sSIP0yb2x8tIwaz4inXAxBzfLGJyACcdTo1MwUTAdBgNVHQ4EFgQUZDr1
        F2PaR3vj0fT0t5d56Q27wkYwHwYDVR0jBBgwFoAUZDr1F2PaR3vj0fT0t5d56Q27
        wkYwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEA0Nqpp/n0/uh4
        ykosE0rbCeM3xamYbYXqXAyGzkFMxqYCICc0igkIZuiOUduZM6dD9uXBGZ+KjH1B
        rKtCuvivmC9L
        -----END CERTIFICATE-----
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSVzsm4IcNZHXR3Ou
        wGlfpeKqlkG6gOyLm7KWzPJy3NyhRANCAAQcVE8980U9x8Sm6id9JvlIAGUAMOUk
        Iw5g1t1KOBf1OHaLJ+sDWW+sSIP0yb2x8tIwaz4inXAxBzfLGJyACcdT
        -----END PRIVATE KEY-----

        """
    static let expected = "B1:BC:A2:4B:68:C8:F0:56:36:BD:F9:FA:90:0A:6B:68:B7:6D:58:1C:25:CF:86:1E:D3:49:09:70:DC:A7:4B:FE"

    @Test("the fingerprint is the SHA-256 of the certificate's DER, not of the key")
    func fingerprintOfKnownCertificate() throws {
        let certificate = try DTLSCertificate(pem: Self.testPEM)
        #expect(certificate.sha256Fingerprint == Self.expected)
        #expect(certificate.sdpFingerprint == "sha-256 " + Self.expected)
    }

    @Test("a PEM without its key, or without a certificate, is refused")
    func refusesIncompletePEM() {
        let certificateOnly = String(Self.testPEM.prefix(while: { $0 != "K" }))   // up to "-----BEGIN PRIVATE "
        #expect(throws: RTCError.self) { try DTLSCertificate(pem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n") }
        #expect(throws: RTCError.self) { try DTLSCertificate(pem: certificateOnly) }
        #expect(throws: RTCError.self) { try DTLSCertificate(pem: "not a certificate") }
    }

    @Test("generated certificates are ECDSA, distinct, and one is shared by the process")
    func generated() throws {
        let a = try DTLSCertificate.generateECDSA(), b = try DTLSCertificate.generateECDSA()
        #expect(a.sha256Fingerprint != b.sha256Fingerprint)
        #expect(a.sha256Fingerprint.split(separator: ":").count == 32)
        #expect(a.pem.contains("-----BEGIN PRIVATE KEY-----"))
        #expect(try DTLSCertificate.shared() == DTLSCertificate.shared())
        #expect(!a.description.contains("PRIVATE"))
    }

    @Test("every a=fingerprint line of an SDP is rewritten, line endings kept")
    func rewritesFingerprints() throws {
        let certificate = try DTLSCertificate(pem: Self.testPEM)
        let sdp = "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=fingerprint:sha-256 00:11\r\nm=application 0 UDP/DTLS/SCTP webrtc-datachannel\r\na=fingerprint:sha-256 00:11\r\n"
        let rewritten = certificate.withFingerprint(in: sdp)
        let fingerprint = "a=fingerprint:sha-256 \(Self.expected)\r\n"
        #expect(rewritten == "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n" + fingerprint
                + "m=application 0 UDP/DTLS/SCTP webrtc-datachannel\r\n" + fingerprint)
    }

    @Test("webrtcbin's offer names the configured certificate")
    func offerCarriesFingerprint() async throws {
        let certificate = try DTLSCertificate(pem: Self.testPEM)
        let pipeline = try Pipeline(name: "fingerprint")
        var configuration = RTCConfiguration()
        configuration.dtlsCertificate = certificate
        let peer = try WebRTCPeer(name: "offerer", pipeline: pipeline, configuration: configuration)
        try pipeline.play()
        defer { peer.close(); pipeline.stop() }
        _ = try peer.createDataChannel("control")
        let offer = try await peer.createOffer()
        let lines = offer.sdp.split(separator: "\r\n").filter { $0.hasPrefix("a=fingerprint:") }
        #expect(!lines.isEmpty)
        #expect(lines.allSatisfy { $0 == "a=fingerprint:sha-256 \(Self.expected)" })
    }
}
