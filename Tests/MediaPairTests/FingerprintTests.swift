import PoseCastKit
import PoseMedia
import Publisher
import Subscriber
import RTCSession
import TestSupport
import Testing

/// The DTLS certificate each peer presents is checked against the fingerprints of its
/// SDP: two real webrtcbins, the answer's fingerprints replaced on
/// the way as a man in the middle would (webrtcbin 1.22 itself connects regardless).
@Suite("DTLS fingerprints", .serialized)
struct FingerprintTests {
    static let forged = """
        a=fingerprint:sha-256 \((0..<32).map { _ in "AB" }.joined(separator: ":"))\r
        a=fingerprint:sha-512 \((0..<64).map { _ in "0F" }.joined(separator: ":"))
        """

    /// A publisher branch and a subscriber, negotiated (the answer altered by `alter`);
    /// `body` gets the publisher's peer, the subscriber's and the control channel as soon
    /// as the answer is applied, before ICE and DTLS.
    static func negotiated(_ alter: (@Sendable (String) -> String)?,
                           _ body: (WebRTCPeer, WebRTCPeer, DataChannel) async throws -> Void) async throws {
        var config = PublisherMediaConfig()
        config.width = 160; config.height = 120
        let publisher = try PublisherMedia(config: config, poseSource: { id, t in PoseGenerator().pose(frameID: id, captureTimeNanos: t) })
        let subscriber = try SubscriberMedia(config: SubscriberMediaConfig()) { _ in }
        try await publisher.start()
        try subscriber.start()
        let peer = try await publisher.addPeer(name: "fp")
        let link = LoopbackLink(publisher: peer, subscriber: subscriber)
        defer { link.cancel(); subscriber.stop(); publisher.removePeer(peer); publisher.stop() }
        let channel = try await link.negotiate(alterAnswer: alter)
        try await body(peer, subscriber.peer, channel)
    }

    /// `negotiated`, then both peers once the control channel is open (DTLS done).
    static func connect(_ alter: (@Sendable (String) -> String)?,
                        _ body: (WebRTCPeer, WebRTCPeer) async throws -> Void) async throws {
        try await negotiated(alter) { peer, subscriber, channel in
            try await waitUntil(15, "the connection (DTLS done)", progress: { "\(peer.connectionState)" }) {
                peer.connectionState == .connected && channel.readyState == .open
            }
            try await body(peer, subscriber)
        }
    }

    @Test("honest peers verify each other's certificate")
    func honest() async throws {
        try await Self.connect(nil) { publisher, subscriber in
            let atPublisher = publisher.verifyRemoteFingerprint()
            let atSubscriber = subscriber.verifyRemoteFingerprint()
            #expect(atPublisher.isVerified, "\(atPublisher)")
            #expect(atSubscriber.isVerified, "\(atSubscriber)")
            #expect(publisher.isVerified && subscriber.isVerified)
        }
    }

    @Test("asked before DTLS is done, the check waits for the decoder to announce the certificate (notify::peer-pem), not for its time limit")
    func waitsForTheCertificate() async throws {
        try await Self.negotiated(nil) { peer, _, _ in
            // Right after the answer ICE has not even started: no certificate yet.
            let early = peer.verifyRemoteFingerprint()
            #expect({ if case .unavailable = early { true } else { false } }(), "asked too late to test the wait: \(early)")
            let clock = ContinuousClock()
            let start = clock.now
            let check = await peer.verifyRemoteFingerprintWhenReady(timeout: .seconds(30))
            let waited = clock.now - start
            #expect(check.isVerified, "\(check)")
            #expect(waited < .seconds(10), "woken by the announcement, not by the 30 s limit: \(waited)")
        }
    }

    @Test("an answer whose fingerprints were replaced fails at the publisher, naming both sides; the subscriber's check is untouched")
    func forgedAnswer() async throws {
        try await Self.connect({ sdp in
            let lineEnd = sdp.contains("\r\n") ? "\r\n" : "\n"
            var lines = sdp.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
                .filter { !$0.hasPrefix("a=fingerprint:") }
            let at = lines.firstIndex { $0.hasPrefix("m=") } ?? lines.count
            lines.insert(contentsOf: Self.forged.split(whereSeparator: \.isNewline).map { String($0).replacingOccurrences(of: "\r", with: "") }, at: at)
            return lines.joined(separator: lineEnd)
        }) { publisher, subscriber in
            let atPublisher = publisher.verifyRemoteFingerprint()
            guard case .mismatch(let why) = atPublisher else { Issue.record("\(atPublisher)"); return }
            #expect(why.contains("sha-256 AB:AB") && why.contains("the certificate presented in the DTLS handshake is sha-256 "), "\(why)")
            #expect(!publisher.isVerified)
            #expect(subscriber.verifyRemoteFingerprint().isVerified)
        }
    }
}

@Suite("DTLS fingerprints: parsing and hashing")
struct FingerprintParsingTests {
    @Test("a=fingerprint lines are read at any level, in any case; our certificate's digest is its SDP fingerprint")
    func parseAndHash() throws {
        let certificate = try DTLSCertificate.generateECDSA()
        let sdp = "v=0\r\na=fingerprint:SHA-256 ab:cd\r\nm=video 9 X 96\r\na=fingerprint:sha-384 EF:01\r\n"
        #expect(SDPFingerprint.all(in: sdp) == [SDPFingerprint(algorithm: "sha-256", value: "AB:CD"),
                                                SDPFingerprint(algorithm: "sha-384", value: "EF:01")])
        #expect(SDPFingerprint.digest(ofCertificatePEM: certificate.pem, algorithm: "sha-256") == certificate.sha256Fingerprint)
        #expect(SDPFingerprint.digest(ofCertificatePEM: certificate.pem, algorithm: "sha-512")?.count == 64 * 3 - 1)
        #expect(SDPFingerprint.digest(ofCertificatePEM: certificate.pem, algorithm: "md5") == nil)
        #expect(SDPFingerprint.digest(ofCertificatePEM: "no certificate", algorithm: "sha-256") == nil)
    }

    @Test("the check: any listed fingerprint may match; none, an unknown hash, no SDP or no certificate are each told apart")
    func check() throws {
        let certificate = try DTLSCertificate.generateECDSA()
        let other = try DTLSCertificate.generateECDSA()
        let good = "a=fingerprint:\(certificate.sdpFingerprint)"
        let bad = "a=fingerprint:\(other.sdpFingerprint)"
        #expect(FingerprintCheck.check(remoteSDP: "v=0\n\(bad)\n\(good)\n", peerPEMs: [certificate.pem]).isVerified)
        guard case .mismatch(let why) = FingerprintCheck.check(remoteSDP: "v=0\n\(bad)\n", peerPEMs: [certificate.pem]) else {
            Issue.record("forged fingerprint accepted"); return
        }
        #expect(why.contains(certificate.sha256Fingerprint) && why.contains(other.sha256Fingerprint))
        #expect(FingerprintCheck.check(remoteSDP: "v=0\na=fingerprint:md5 AA:BB\n", peerPEMs: [certificate.pem])
                == .mismatch("no a=fingerprint uses a hash function we know (md5)"))
        #expect(FingerprintCheck.check(remoteSDP: "v=0\n", peerPEMs: [certificate.pem])
                == .mismatch("the remote description has no a=fingerprint"))
        #expect(FingerprintCheck.check(remoteSDP: nil, peerPEMs: [certificate.pem]) == .unavailable("no remote description"))
        #expect(FingerprintCheck.check(remoteSDP: "v=0\n\(good)\n", peerPEMs: [])
                == .unavailable("no certificate received in the DTLS handshake"))
        // Two transports: both must match.
        #expect(!FingerprintCheck.check(remoteSDP: "v=0\n\(good)\n", peerPEMs: [certificate.pem, other.pem]).isVerified)
    }
}
