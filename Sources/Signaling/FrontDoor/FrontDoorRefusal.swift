/// Why the front door turned a connection or request away, and how it says so: a complete
/// HTTP/1.1 response with `Connection: close`, then the connection is closed. Every refusal
/// is answered; a client is never left to guess from silence.
enum FrontDoorRefusal: Error, Equatable, Sendable {
    case malformed(String)
    case versionNotSupported(String)
    case methodNotAllowed(String)
    case headTooLarge(limit: Int)
    case headTimedOut(seconds: Double)
    case foreignOrigin(String)
    case tooManyRequests
    case tooManyConnections(limit: Int)

    var status: Int {
        switch self {
        case .malformed: 400
        case .foreignOrigin: 403
        case .methodNotAllowed: 405
        case .headTimedOut: 408
        case .tooManyRequests: 429
        case .headTooLarge: 431
        case .tooManyConnections: 503
        case .versionNotSupported: 505
        }
    }

    var reasonPhrase: String {
        switch self {
        case .malformed: "Bad Request"
        case .foreignOrigin: "Forbidden"
        case .methodNotAllowed: "Method Not Allowed"
        case .headTimedOut: "Request Timeout"
        case .tooManyRequests: "Too Many Requests"
        case .headTooLarge: "Request Header Fields Too Large"
        case .tooManyConnections: "Service Unavailable"
        case .versionNotSupported: "HTTP Version Not Supported"
        }
    }

    /// The plain-text body: what was wrong, in words.
    var explanation: String {
        switch self {
        case .malformed(let why): "malformed request: \(why)"
        case .versionNotSupported(let version): "\(version) is not supported; use HTTP/1.1"
        case .methodNotAllowed(let method): "\(method) is not allowed here; this server serves GET and HEAD"
        case .headTooLarge(let limit): "the request head is larger than \(limit) bytes"
        case .headTimedOut(let seconds): "the request head did not arrive within \(seconds) s"
        case .foreignOrigin(let origin): "pages from \(origin) may not open a WebSocket here (the server's --allow-origin)"
        case .tooManyRequests: "too many requests from this address; wait a second"
        case .tooManyConnections(let limit): "this address already holds \(limit) connections"
        }
    }

    /// The bytes on the wire.
    var response: String {
        let body = explanation + "\n"
        var head = "HTTP/1.1 \(status) \(reasonPhrase)\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n"
        if case .tooManyRequests = self { head += "Retry-After: 1\r\n" }
        if case .tooManyConnections = self { head += "Retry-After: 5\r\n" }
        return head + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
    }
}
