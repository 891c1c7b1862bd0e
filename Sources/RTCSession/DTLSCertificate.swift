internal import CGStreamer
import CGstShim
import Synchronization
internal import CDTLS
#if canImport(Glibc)
import Glibc
#endif

/// The certificate (and private key) a peer presents in the DTLS handshake; the SDP
/// carries its SHA-256 fingerprint.
///
/// GStreamer 1.22 generates RSA-2048 when given none, and a peer that offers only
/// ECDSA cipher suites (aiortc does) then fails the handshake with "no shared cipher".
/// PoseCast presents ECDSA P-256 instead, as browsers do: one certificate per process,
/// like GStreamer's own generated one, made on first use.
///
/// webrtcbin 1.22 computes the SDP fingerprint by base64-decoding every line of the
/// `pem` it is given, the private key's too, so with a certificate of our own its
/// `a=fingerprint` is wrong: `WebRTCPeer` writes `sdpFingerprint` into each offer and
/// answer it creates instead.
public struct DTLSCertificate: Sendable, Hashable, CustomStringConvertible {
    /// Certificate and private key in PEM, for the dtls elements' `pem` property.
    package let pem: String
    /// SHA-256 of the certificate's DER, as SDP writes it: `AB:CD:…`.
    public let sha256Fingerprint: String

    /// The value of an `a=fingerprint` attribute for this certificate.
    public var sdpFingerprint: String { "sha-256 \(sha256Fingerprint)" }

    /// Wraps a certificate followed by its private key, both PEM.
    public init(pem: String) throws(RTCError) {
        // `isNewline` also matches "\r\n", which Swift reads as one Character.
        let lines = pem.split(whereSeparator: \.isNewline).map(String.init)
        guard let begin = lines.firstIndex(of: "-----BEGIN CERTIFICATE-----"),
              let end = lines[begin...].firstIndex(of: "-----END CERTIFICATE-----"),
              lines[end...].contains(where: { $0.hasPrefix("-----BEGIN") && $0.hasSuffix("PRIVATE KEY-----") }) else {
            throw .invalidArgument("a DTLS certificate must be a PEM certificate followed by its private key")
        }
        let body = lines[(begin + 1)..<end].joined()
        var length: gsize = 0
        guard let der = g_base64_decode(body, &length), length > 0 else {
            throw .invalidArgument("the PEM certificate's base64 body does not decode")
        }
        defer { g_free(der) }
        guard let hex = g_compute_checksum_for_data(G_CHECKSUM_SHA256, der, length) else {
            throw .invalidArgument("could not hash the certificate")
        }
        defer { g_free(hex) }
        let digits = Array(String(cString: hex).uppercased())
        self.pem = pem
        sha256Fingerprint = stride(from: 0, to: digits.count, by: 2).map { String(digits[$0..<$0 + 2]) }.joined(separator: ":")
    }

    /// `sdp` with every `a=fingerprint` line naming this certificate.
    package func withFingerprint(in sdp: String) -> String {
        // SDP lines end in "\r\n" (one Character to Swift); accept a bare "\n" too.
        let lineEnd = sdp.contains("\r\n") ? "\r\n" : "\n"
        return sdp.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map { line in
            line.hasPrefix("a=fingerprint:") ? "a=fingerprint:\(sdpFingerprint)" : String(line)
        }.joined(separator: lineEnd)
    }

    /// A new self-signed ECDSA P-256 certificate.
    public static func generateECDSA(commonName: String = "posecast") throws(RTCError) -> DTLSCertificate {
        var error: UnsafeMutablePointer<CChar>?
        guard let text = pcdtls_ecdsa_certificate_pem(commonName, &error) else {
            let reason = error.map { String(cString: $0) } ?? "unknown OpenSSL failure"
            free(error)
            throw .initialisation("DTLS certificate: \(reason)")
        }
        defer { free(text) }
        return try DTLSCertificate(pem: String(cString: text))
    }

    private static let processCertificate = Mutex<DTLSCertificate?>(nil)

    /// The process's certificate, generated on the first call.
    public static func shared() throws(RTCError) -> DTLSCertificate {
        try processCertificate.withLock { (stored: inout DTLSCertificate?) throws(RTCError) -> DTLSCertificate in
            if let stored { return stored }
            let made = try generateECDSA()
            stored = made
            return made
        }
    }

    /// Never the key.
    public var description: String { "DTLS certificate (\(pem.utf8.count) bytes of PEM, not shown)" }
}
