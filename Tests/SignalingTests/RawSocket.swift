import Foundation

/// A TCP connection by hand, as a stranger or a browser would open one: what the server
/// answers to exactly these bytes. Every blocking call runs on a thread of its own, never
/// on the async pool the server's actor needs to answer.
final class RawSocket: @unchecked Sendable {
    private let fd: Int32

    /// Connects to 127.0.0.1:`port`; reads time out after `timeout` seconds.
    init(port: Int, timeout: Int = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED
            close(fd)
            throw POSIXError(code)
        }
    }

    deinit { close(fd) }

    func send(_ text: String) {
        _ = text.withCString { Foundation.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until `done` says the text so far is enough, the peer closes (`closed`), or a
    /// read times out.
    func read(until done: @escaping @Sendable (String) -> Bool = { _ in false }) async -> (text: String, closed: Bool) {
        await withCheckedContinuation { finished in
            Thread.detachNewThread { [self] in
                var text = ""
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = recv(fd, &buffer, buffer.count, 0)
                    if n == 0 { return finished.resume(returning: (text, true)) }
                    if n < 0 { return finished.resume(returning: (text, false)) }
                    text += String(decoding: buffer[0..<n], as: UTF8.self)
                    if done(text) { return finished.resume(returning: (text, false)) }
                }
            }
        }
    }

    /// A WebSocket upgrade of `/` with `Origin: origin` (nil: none), as a browser sends it:
    /// the status the server answers (101: upgraded) and what followed (for an upgrade,
    /// up to the server's `welcome`).
    static func upgrade(port: Int, origin: String?) async throws -> (status: Int, text: String) {
        let socket = try RawSocket(port: port)
        var request = "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        if let origin { request += "Origin: \(origin)\r\n" }
        socket.send(request + "\r\n")
        let (text, _) = await socket.read { text in
            text.contains("welcome") || (text.contains("\r\n\r\n") && !text.hasPrefix("HTTP/1.1 101"))
        }
        return (Int(text.split(separator: " ").dropFirst().first ?? "") ?? -1, text)
    }
}
