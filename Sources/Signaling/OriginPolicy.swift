/// Which web pages may open a signaling WebSocket, by the `Origin` a browser sends with
/// every WebSocket upgrade. Without a check, any page a person on the same network opens
/// could connect to the server as an expert and take the camera (cross-site WebSocket
/// hijacking): a WebSocket is not bound by the same-origin policy.
///
/// Allowed: a request with no `Origin`, or a `ws://`/`wss://` one (clients that are no
/// browsers: aiortc sends none, swift-nio's WebSocket client sends `ws://HOST`; a web page
/// cannot choose its `Origin`, and anything that is no browser can send any header, so
/// the check protects against pages only); a page from the server itself (the console it serves: the
/// origin's host and port are the request's `Host`); and the origins listed
/// (`--allow-origin`, `scheme://host[:port]`, or `null` for pages opened from files, or
/// `*` for any page). Everything else is refused before the upgrade by the server's front
/// door (`FrontDoorHandler`: 403, the connection closed).
public struct OriginPolicy: Sendable, Equatable, CustomStringConvertible {
    /// Normalised `scheme://host:port` origins, `null`, or `*`.
    public private(set) var allowed: [String]

    public init(allowing origins: [String] = []) throws(OriginPolicyError) {
        allowed = []
        for origin in origins {
            let trimmed = origin.trimmingBlanks
            if trimmed == "*" || trimmed.lowercased() == "null" { allowed.append(trimmed.lowercased()); continue }
            guard let parsed = Origin(trimmed) else { throw .invalid(origin) }
            allowed.append(parsed.normalised)
        }
    }

    public static let sameOriginOnly = try! OriginPolicy()

    /// Whether a WebSocket upgrade with this `Origin` (nil: none) and `Host` may go on.
    public func allows(origin: String?, host: String?) -> Bool {
        guard let origin = origin?.trimmingBlanks else { return true }
        if allowed.contains("*") { return true }
        if origin.lowercased() == "null" { return allowed.contains("null") }
        guard let parsed = Origin(origin) else { return false }
        if parsed.scheme == "ws" || parsed.scheme == "wss" { return true }
        if allowed.contains(parsed.normalised) { return true }
        // The server's own pages: the same host and port as the request was sent to.
        guard let host, let (hostName, hostPort) = Origin.hostAndPort(host, defaultPort: parsed.port) else { return false }
        return hostName == parsed.host && hostPort == parsed.port
    }

    public var description: String {
        allowed.isEmpty ? "the server's own pages and non-browser clients" : "the server's own pages, non-browser clients and \(allowed.joined(separator: ", "))"
    }
}

public enum OriginPolicyError: Error, CustomStringConvertible, Equatable {
    case invalid(String)
    public var description: String {
        switch self {
        case .invalid(let origin): "not an origin: \"\(origin)\" (expected scheme://host[:port], null or *)"
        }
    }
}

/// A web origin: scheme, lower-case host and port (the scheme's default when none).
struct Origin: Equatable {
    let scheme: String
    let host: String
    let port: Int

    init?(_ text: String) {
        guard let range = text.range(of: "://") else { return nil }
        let scheme = text[..<range.lowerBound].lowercased()
        let defaultPort: Int
        switch scheme {
        case "http", "ws": defaultPort = 80
        case "https", "wss": defaultPort = 443
        default: return nil
        }
        var rest = text[range.upperBound...]
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), !rest.contains("@"), !rest.contains("?"), !rest.contains("#"),
              let (host, port) = Self.hostAndPort(String(rest), defaultPort: defaultPort) else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    var normalised: String { "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`, lower-cased; nil when malformed.
    static func hostAndPort(_ text: String, defaultPort: Int) -> (String, Int)? {
        let text = text.lowercased()
        guard !text.isEmpty else { return nil }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let after = text[text.index(after: close)...]
            if after.isEmpty { return host.isEmpty ? nil : (host, defaultPort) }
            guard after.hasPrefix(":"), let port = Int(after.dropFirst()), (1...65535).contains(port), !host.isEmpty else { return nil }
            return (host, port)
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        switch parts.count {
        case 1: return (String(parts[0]), defaultPort)
        case 2:
            guard !parts[0].isEmpty, let port = Int(parts[1]), (1...65535).contains(port) else { return nil }
            return (String(parts[0]), port)
        default: return nil
        }
    }
}

private extension String {
    var trimmingBlanks: String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
