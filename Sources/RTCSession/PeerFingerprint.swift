internal import CGStreamer
import CGstShim

/// One `a=fingerprint` of an SDP: the hash function's name as SDP writes it (lower case,
/// "sha-256") and the digest as `AB:CD:…` (upper case).
public struct SDPFingerprint: Sendable, Hashable, CustomStringConvertible {
    public let algorithm: String
    public let value: String
    public var description: String { "\(algorithm) \(value)" }

    public init(algorithm: String, value: String) { self.algorithm = algorithm.lowercased(); self.value = value.uppercased() }

    /// Every `a=fingerprint` line of `sdp`, session- or media-level, in order.
    public static func all(in sdp: String) -> [SDPFingerprint] {
        sdp.split(whereSeparator: \.isNewline).compactMap { raw in
            let line = trimmed(raw)
            guard line.hasPrefix("a=fingerprint:") else { return nil }
            let parts = line.dropFirst("a=fingerprint:".count).split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 2 else { return nil }
            return SDPFingerprint(algorithm: parts[0].lowercased(), value: parts[1].uppercased())
        }
    }

    /// The `algorithm` digest of the first certificate in `pem` as SDP writes it, or nil
    /// when the PEM holds no certificate or the hash function is not one SDP peers use
    /// (sha-1, sha-256, sha-384, sha-512).
    public static func digest(ofCertificatePEM pem: String, algorithm: String) -> String? {
        let checksums: [String: GChecksumType] = ["sha-1": G_CHECKSUM_SHA1, "sha-256": G_CHECKSUM_SHA256,
                                                  "sha-384": G_CHECKSUM_SHA384, "sha-512": G_CHECKSUM_SHA512]
        guard let type = checksums[algorithm.lowercased()] else { return nil }
        let lines = pem.split(whereSeparator: \.isNewline).map(trimmed)
        guard let begin = lines.firstIndex(of: "-----BEGIN CERTIFICATE-----"),
              let end = lines[begin...].firstIndex(of: "-----END CERTIFICATE-----") else { return nil }
        var length: gsize = 0
        guard let der = g_base64_decode(lines[(begin + 1)..<end].joined(), &length), length > 0 else { return nil }
        defer { g_free(der) }
        guard let hex = g_compute_checksum_for_data(type, der, length) else { return nil }
        defer { g_free(hex) }
        let digits = Array(String(cString: hex).uppercased())
        return stride(from: 0, to: digits.count, by: 2).map { String(digits[$0..<$0 + 2]) }.joined(separator: ":")
    }
}

/// What checking the peer's DTLS certificate against its SDP came to.
public enum FingerprintCheck: Sendable, Equatable, CustomStringConvertible {
    /// Every certificate the peer presented matches an `a=fingerprint` of its SDP.
    case verified(SDPFingerprint)
    /// The peer presented a certificate its SDP does not name (or named none we can check).
    case mismatch(String)
    /// Nothing to check yet: no remote description, or no certificate received.
    case unavailable(String)

    public var isVerified: Bool { if case .verified = self { true } else { false } }

    public var description: String {
        switch self {
        case .verified(let f): "verified (\(f.algorithm))"
        case .mismatch(let why): "mismatch: \(why)"
        case .unavailable(let why): "unavailable: \(why)"
        }
    }

    /// Checks each certificate in `peerPEMs` against the fingerprints of `remoteSDP`; a
    /// certificate passes when any fingerprint whose hash function we know matches it
    /// (RFC 8122: the peer may list several).
    public static func check(remoteSDP: String?, peerPEMs: [String]) -> FingerprintCheck {
        guard let remoteSDP else { return .unavailable("no remote description") }
        let named = SDPFingerprint.all(in: remoteSDP)
        guard !named.isEmpty else { return .mismatch("the remote description has no a=fingerprint") }
        guard !peerPEMs.isEmpty else { return .unavailable("no certificate received in the DTLS handshake") }
        var matched: SDPFingerprint?
        for pem in peerPEMs {
            var computed: [String] = []
            var hit: SDPFingerprint?
            for fingerprint in named {
                guard let digest = SDPFingerprint.digest(ofCertificatePEM: pem, algorithm: fingerprint.algorithm) else { continue }
                computed.append("\(fingerprint.algorithm) \(digest)")
                if digest == fingerprint.value { hit = fingerprint; break }
            }
            guard let hit else {
                if computed.isEmpty {
                    return .mismatch("no a=fingerprint uses a hash function we know (\(named.map(\.algorithm).joined(separator: ", ")))")
                }
                return .mismatch("the certificate presented in the DTLS handshake is \(computed.joined(separator: " / ")), "
                                 + "the SDP names \(named.map(\.description).joined(separator: " / "))")
            }
            matched = matched ?? hit
        }
        return .verified(matched!)
    }
}

extension WebRTCPeer {
    /// The certificates the peer presented in the DTLS handshake, PEM, one per DTLS
    /// transport that finished its handshake (read from webrtcbin's dtlssrtpdec elements).
    package func peerCertificatePEMs() -> [String] {
        var pems: [String] = []
        Element.forEachDescendant(of: webrtc.raw) { element in
            guard Element.factoryName(of: element) == "dtlssrtpdec",
                  let text = pcg_object_get_string(UnsafeMutableRawPointer(element), "peer-pem") else { return }
            defer { g_free(text) }
            let pem = String(cString: text)
            if !pem.isEmpty, !pems.contains(pem) { pems.append(pem) }
        }
        return pems
    }

    /// Checks the certificate the peer presented against the fingerprints of its SDP
    /// (the remote description); on success the peer counts as verified (`isVerified`).
    /// Call once the connection is up (DTLS done); reads element properties, so not from
    /// a streaming thread.
    public func verifyRemoteFingerprint() -> FingerprintCheck {
        let result = FingerprintCheck.check(remoteSDP: remoteDescriptionSDP, peerPEMs: peerCertificatePEMs())
        if result.isVerified { markVerified() }
        return result
    }

    /// `verifyRemoteFingerprint` once the connection is up; while the certificate is not
    /// yet readable (`unavailable`), waits for a DTLS decoder to announce it
    /// (`notify::peer-pem`), at most `timeout`. Never blocks a thread, never polls.
    public func verifyRemoteFingerprintWhenReady(timeout: Duration = .milliseconds(500)) async -> FingerprintCheck {
        let first = verifyRemoteFingerprint()
        guard case .unavailable = first else { return first }
        let announced = OnceResult<Bool>()
        // Each decoder is held (a reference of ours) until its handler is disconnected.
        var watched: [(decoder: UnsafeMutableRawPointer, handler: UInt)] = []
        Element.forEachDescendant(of: webrtc.raw) { element in
            guard Element.factoryName(of: element) == "dtlssrtpdec" else { return }
            let decoder = UnsafeMutableRawPointer(element)
            gst_object_ref(decoder)
            watched.append((decoder, Signal.connect(decoder, "notify::peer-pem") { (_: UnsafeMutableRawPointer?) in announced.finish(true) }))
        }
        defer {
            for (decoder, handler) in watched {
                Signal.disconnect(decoder, handler)
                gst_object_unref(decoder)
            }
        }
        // A certificate that came between the first check and the connections announces nothing.
        let second = verifyRemoteFingerprint()
        guard case .unavailable = second, !watched.isEmpty else { return second }
        _ = await announced.value(orAfter: timeout, false)
        return verifyRemoteFingerprint()
    }
}

/// `text` without leading and trailing blanks (RTCSession does without Foundation).
private func trimmed(_ text: Substring) -> String {
    String(text.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
}
