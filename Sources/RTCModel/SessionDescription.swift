import Foundation

/// An SDP offer or answer as text.
public struct SessionDescription: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable { case offer, answer, pranswer, rollback }
    public var kind: Kind
    public var sdp: String
    public init(kind: Kind, sdp: String) { self.kind = kind; self.sdp = sdp }

    /// The same description with `a=rtcp-fb:PT <type>` added for every payload type that
    /// already has RTCP feedback (the media codecs, not RTX), after its last such line.
    /// For feedback webrtcbin 1.22 does not offer itself: `goog-remb` (its codec
    /// preferences drop an `rtcp-fb-goog-remb` caps field), which Chromium then answers
    /// and sends.
    public func addingFeedback(_ type: String) -> SessionDescription {
        let lines = sdp.components(separatedBy: "\r\n")
        func payloadType(_ line: String) -> String? {
            guard line.hasPrefix("a=rtcp-fb:") else { return nil }
            return line.dropFirst("a=rtcp-fb:".count).split(separator: " ").first.map(String.init)
        }
        let present = Set(lines.compactMap { line in payloadType(line).map { "\($0) \(line.split(separator: " ").dropFirst().joined(separator: " "))" } })
        var lastIndex: [String: Int] = [:]
        for (i, line) in lines.enumerated() { if let pt = payloadType(line) { lastIndex[pt] = i } }
        var out: [String] = []
        for (i, line) in lines.enumerated() {
            out.append(line)
            if let pt = payloadType(line), lastIndex[pt] == i, !present.contains("\(pt) \(type)") {
                out.append("a=rtcp-fb:\(pt) \(type)")
            }
        }
        return SessionDescription(kind: kind, sdp: out.joined(separator: "\r\n"))
    }
}

extension SessionDescription {
    /// The same description with `a=ssrc:SSRC cname:CNAME` at the end of its first
    /// `media` section (`m=video …`), unless that section names an SSRC already. webrtcbin
    /// 1.22 writes none when its codec preferences carry no `ssrc` (ours do not: the
    /// branch would be pinned to one caps instance); an SFU that routes by SSRC (Janus,
    /// without the mid header extension) needs it.
    public func addingSSRC(_ ssrc: UInt32, cname: String, media: String = "video") -> SessionDescription {
        var lines = sdp.components(separatedBy: "\r\n")
        guard let start = lines.firstIndex(where: { $0.hasPrefix("m=\(media) ") }) else { return self }
        var end = start + 1
        while end < lines.count, !lines[end].hasPrefix("m="), !lines[end].isEmpty { end += 1 }
        if lines[start..<end].contains(where: { $0.hasPrefix("a=ssrc:") }) { return self }
        lines.insert("a=ssrc:\(ssrc) cname:\(cname)", at: end)
        return SessionDescription(kind: kind, sdp: lines.joined(separator: "\r\n"))
    }
}

/// A trickled ICE candidate for the media line `mlineIndex`.
public struct ICECandidate: Sendable, Hashable, Codable {
    public var mlineIndex: UInt32
    public var candidate: String
    public init(mlineIndex: UInt32, candidate: String) { self.mlineIndex = mlineIndex; self.candidate = candidate }
}

extension SessionDescription {
    /// Which end starts the DTLS handshake (`a=setup`, RFC 5763): `active` sends the
    /// ClientHello, `passive` waits for it.
    public enum DTLSRole: String, Sendable { case active, passive }

    /// The same answer with every `a=setup:active` or `a=setup:passive` line saying `role`.
    public func settingDTLSRole(_ role: DTLSRole) -> SessionDescription {
        let lines = sdp.components(separatedBy: "\r\n").map { line in
            line == "a=setup:active" || line == "a=setup:passive" ? "a=setup:\(role.rawValue)" : line
        }
        return SessionDescription(kind: kind, sdp: lines.joined(separator: "\r\n"))
    }
}
