/// Checks a remote ICE candidate before webrtcbin sees it: webrtcbin drops a candidate it
/// cannot parse, or one for an m-line it does not have, with nothing but a GStreamer
/// warning, so a peer's bad candidates would vanish unseen. Pure; the grammar is
/// RFC 8839 §5.1 (`candidate:` foundation component transport priority address port
/// `typ` type, then name/value pairs such as `raddr`/`rport`, `tcptype`, `generation`).
public enum ICECandidateCheck {
    /// What kind of refusal, for counting (one log line per kind, `RefusalLog`).
    public enum Kind: String, Sendable, Hashable {
        /// Not a candidate line by the grammar.
        case malformed
        /// For an m-line the session does not have.
        case unknownMLine
    }

    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public var kind: Kind
        public var details: String
        public var description: String { details }
    }

    /// The longest candidate line taken (a real one is under 200 characters).
    public static let maxLength = 512

    /// Why `candidate` cannot be added to a session whose description has `mediaCount`
    /// m-lines (nil: not known yet, the index is not checked); nil when it can. An empty
    /// candidate (end of candidates) is fine.
    public static func refusal(_ candidate: ICECandidate, mediaCount: Int?) -> Refusal? {
        if let mediaCount, Int(candidate.mlineIndex) >= mediaCount {
            return Refusal(kind: .unknownMLine,
                           details: "ICE candidate for m-line \(candidate.mlineIndex), but the session has \(mediaCount)")
        }
        var text = Substring(candidate.candidate)
        if text.isEmpty { return nil }
        guard text.utf8.count <= maxLength else {
            return malformed("ICE candidate of \(text.utf8.count) bytes (at most \(maxLength))")
        }
        if text.hasPrefix("a=") { text = text.dropFirst(2) }
        guard text.hasPrefix("candidate:") else { return malformed("ICE candidate must start with 'candidate:' (got \(quoted(text)))") }
        let fields = text.dropFirst("candidate:".count).split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count >= 8 else { return malformed("ICE candidate with \(fields.count) fields, at least 8 needed: \(quoted(text))") }
        let foundation = fields[0], component = fields[1], transport = fields[2], priority = fields[3]
        let address = fields[4], port = fields[5], typ = fields[6], type = fields[7]
        guard (1...32).contains(foundation.count), foundation.allSatisfy(isICEChar) else {
            return malformed("ICE candidate foundation \(quoted(foundation)) is not 1–32 letters, digits, + or /")
        }
        guard let c = number(component, digits: 3), (1...256).contains(c) else {
            return malformed("ICE candidate component \(quoted(component)) is not 1…256")
        }
        guard ["udp", "tcp"].contains(transport.lowercased()) else {
            return malformed("ICE candidate transport \(quoted(transport)) is neither UDP nor TCP")
        }
        guard let p = number(priority, digits: 10), p <= UInt64(UInt32.max), p > 0 else {
            return malformed("ICE candidate priority \(quoted(priority)) is not 1…\(UInt32.max)")
        }
        guard isAddress(address) else { return malformed("ICE candidate address \(quoted(address)) is no IP address or host name") }
        guard isPort(port) else { return malformed("ICE candidate port \(quoted(port)) is not 0…65535") }
        guard typ == "typ", ["host", "srflx", "prflx", "relay"].contains(type) else {
            return malformed("ICE candidate type \(quoted(typ)) \(quoted(type)) is not 'typ host|srflx|prflx|relay'")
        }
        let rest = fields.dropFirst(8)
        guard rest.count % 2 == 0 else { return malformed("ICE candidate extension \(quoted(rest.last ?? "")) has no value") }
        var pairs = rest.makeIterator()
        while let name = pairs.next(), let value = pairs.next() {
            guard !name.isEmpty, !value.isEmpty else { return malformed("ICE candidate with an empty field: \(quoted(text))") }
            if name == "raddr", !isAddress(value) { return malformed("ICE candidate raddr \(quoted(value)) is no address") }
            if name == "rport", !isPort(value) { return malformed("ICE candidate rport \(quoted(value)) is not 0…65535") }
        }
        return nil
    }

    /// The m-lines of an SDP text.
    public static func mediaCount(ofSDP sdp: String) -> Int {
        sdp.split(whereSeparator: \.isNewline).count { $0.hasPrefix("m=") }
    }

    private static func malformed(_ details: String) -> Refusal { Refusal(kind: .malformed, details: details) }

    private static func isICEChar(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c.isNumber || c == "+" || c == "/")
    }

    private static func number(_ text: Substring, digits: Int) -> UInt64? {
        guard (1...digits).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(text)
    }

    private static func isPort(_ text: Substring) -> Bool { number(text, digits: 5).map { $0 <= 65535 } ?? false }

    /// An IPv4 or IPv6 address, or a host name (browsers send `UUID.local` mDNS names).
    private static func isAddress(_ text: Substring) -> Bool {
        guard (1...253).contains(text.count) else { return false }
        if text.contains(":") {
            return text.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." } && text.count >= 2
        }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        return labels.allSatisfy { label in
            (1...63).contains(label.count) && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
                && label.first != "-" && label.last != "-"
        }
    }

    private static func quoted(_ text: Substring) -> String {
        "\"" + (text.count > 60 ? text.prefix(60) + "…" : text) + "\""
    }
}
