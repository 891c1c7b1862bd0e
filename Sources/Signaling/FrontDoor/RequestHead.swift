import Foundation

/// A request head as the front door reads it, strictly (RFC 9112): the request line and
/// the header lines, before any HTTP parser sees them. Pure, so that every refusal reason
/// is tested without sockets. Strictness is the point: a server that only serves files and
/// WebSocket upgrades has no use for lenient parsing, and every byte a lenient parser
/// accepts (NUL in a method, a raw byte in a path, a folded line) is a way to confuse it.
struct RequestHead: Equatable {
    var method: String
    var target: String
    var version: String
    /// Header fields in order, names lower-cased, values without surrounding blanks.
    var fields: [(name: String, value: String)]

    static func == (a: RequestHead, b: RequestHead) -> Bool {
        a.method == b.method && a.target == b.target && a.version == b.version
            && a.fields.map(\.name) == b.fields.map(\.name) && a.fields.map(\.value) == b.fields.map(\.value)
    }

    /// The first field of that (lower-case) name.
    func field(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Whether one of the comma-separated values of the fields named `name` is `token`
    /// (case-insensitive), as `Connection: keep-alive, Upgrade`.
    func lists(_ name: String, token: String) -> Bool {
        fields.contains { field in
            field.name == name && field.value.split(separator: ",").contains {
                $0.trimmingCharacters(in: .whitespaces).lowercased() == token
            }
        }
    }

    /// A WebSocket upgrade as swift-nio's upgrader will treat it: it takes over the
    /// connection only when both `Upgrade: websocket` and `Connection: upgrade` are there.
    var isWebSocketUpgrade: Bool { lists("upgrade", token: "websocket") && lists("connection", token: "upgrade") }

    /// Parses `bytes`, the head without its closing empty line; a refusal says why not.
    static func parse(_ bytes: some Collection<UInt8>) -> Result<RequestHead, FrontDoorRefusal> {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? Array(line.dropLast()) : Array(line)
        }
        // Clients may send empty lines before a request (RFC 9112 2.2); nothing else.
        while lines.first?.isEmpty == true { lines.removeFirst() }
        guard let requestLine = lines.first else { return .failure(.malformed("an empty request")) }
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(.malformed("the request line is not METHOD TARGET VERSION")) }
        guard !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte) else {
            return .failure(.malformed("the method is not a token"))
        }
        guard !parts[1].isEmpty, parts[1].allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return .failure(.malformed("the target has a byte that is not visible ASCII"))
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            if version.hasPrefix("HTTP/"), version.count == 8 { return .failure(.versionNotSupported(version)) }
            return .failure(.malformed("the version is not HTTP/1.x"))
        }
        let target = String(decoding: parts[1], as: UTF8.self)
        if let reason = controlBytesInPath(target) { return .failure(.malformed(reason)) }

        var fields: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let first = line.first else { return .failure(.malformed("an empty line inside the head")) }
            guard first != UInt8(ascii: " "), first != UInt8(ascii: "\t") else {
                return .failure(.malformed("a folded header line (obsolete)"))
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                return .failure(.malformed("a header line without a colon"))
            }
            let name = line[..<colon], value = line[(colon + 1)...]
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else { return .failure(.malformed("a header name that is not a token")) }
            // Field values: visible ASCII, blanks and obs-text (bytes ≥ 0x80); no control bytes.
            guard value.allSatisfy({ $0 == 0x09 || $0 == 0x20 || (0x21...0x7E).contains($0) || $0 >= 0x80 }) else {
                return .failure(.malformed("a control byte in the \(String(decoding: name, as: UTF8.self)) field"))
            }
            fields.append((String(decoding: name, as: UTF8.self).lowercased(),
                           String(decoding: value, as: UTF8.self).trimmingCharacters(in: .whitespaces)))
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        guard method == "GET" || method == "HEAD" else { return .failure(.methodNotAllowed(method)) }
        return .success(RequestHead(method: method, target: target, version: version, fields: fields))
    }

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Why the path, once percent-decoded, would hold a control byte (`/index.html%00.js`
    /// must not reach a file lookup that stops at the NUL); nil when it does not.
    static func controlBytesInPath(_ target: String) -> String? {
        let path = target.prefix { $0 != "?" && $0 != "#" }
        var bytes = Array(path.utf8)[...]
        while let percent = bytes.firstIndex(of: UInt8(ascii: "%")) {
            let digits = bytes[(percent + 1)...].prefix(2)
            guard digits.count == 2, let value = UInt8(String(decoding: digits, as: UTF8.self), radix: 16) else {
                return "a % in the path not followed by two hex digits"
            }
            if value < 0x20 || value == 0x7F { return "an encoded control byte (%\(String(format: "%02X", value))) in the path" }
            bytes = bytes[(percent + 3)...]
        }
        return nil
    }
}
