import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signaling
import Testing

/// Which web pages may open the signaling WebSocket: the policy on its own, then the real
/// server refusing a page of another origin before the upgrade (400, never a session,
/// never a file), and letting its own pages, non-browser clients and listed origins in.
@Suite("Origin check", .timeLimit(.minutes(1)))
struct OriginPolicyTests {
    @Test("no Origin (no browser), the server's own origin and listed origins pass; other pages, file pages and malformed origins do not")
    func policy() throws {
        let own = OriginPolicy.sameOriginOnly
        #expect(own.allows(origin: nil, host: "127.0.0.1:8443"))
        #expect(own.allows(origin: "ws://127.0.0.1", host: "127.0.0.1:8443"), "swift-nio's client: no web page")
        #expect(own.allows(origin: "http://127.0.0.1:8443", host: "127.0.0.1:8443"))
        #expect(own.allows(origin: "https://Camera.Local:8443", host: "camera.local:8443"))
        #expect(own.allows(origin: "http://example.org", host: "example.org:80"), "default port on either side")
        #expect(own.allows(origin: "http://[::1]:9000", host: "[::1]:9000"))
        #expect(!own.allows(origin: "https://evil.example", host: "127.0.0.1:8443"))
        #expect(!own.allows(origin: "http://127.0.0.1:8444", host: "127.0.0.1:8443"), "another port is another origin")
        #expect(!own.allows(origin: "http://127.0.0.1", host: "127.0.0.1:8443"))
        #expect(!own.allows(origin: "null", host: "127.0.0.1:8443"), "a page opened from a file")
        #expect(!own.allows(origin: "http://127.0.0.1:8443", host: nil), "no Host to compare with")
        for junk in ["", "evil", "javascript:alert(1)", "http://a/b", "http://user@127.0.0.1:8443", "http://127.0.0.1:99999"] {
            #expect(!own.allows(origin: junk, host: "127.0.0.1:8443"), "\(junk)")
        }
        let listed = try OriginPolicy(allowing: ["https://Expert.Example/", "null"])
        #expect(listed.allowed == ["https://expert.example:443", "null"])
        #expect(listed.allows(origin: "https://expert.example:443", host: "10.0.0.2:8443"))
        #expect(listed.allows(origin: "null", host: "10.0.0.2:8443"))
        #expect(!listed.allows(origin: "http://expert.example", host: "10.0.0.2:8443"), "the scheme is part of the origin")
        #expect(try OriginPolicy(allowing: ["*"]).allows(origin: "https://anyone.example", host: "h:1"))
        #expect(throws: OriginPolicyError.invalid("ftp://x")) { try OriginPolicy(allowing: ["ftp://x"]) }
        #expect(throws: OriginPolicyError.invalid("example.org")) { try OriginPolicy(allowing: ["example.org"]) }
    }

    /// A WebSocket upgrade by hand over a plain socket, with `Origin: origin` (nil: none),
    /// as a browser sends it: the status the server answers (101: upgraded) and what followed.
    /// The blocking socket calls run on a thread of their own, not on the async pool the
    /// server's actor needs to answer.
    static func upgrade(port: Int, origin: String?) async throws -> (status: Int, text: String) {
        try await withCheckedThrowingContinuation { done in
            Thread.detachNewThread { done.resume(with: Result { try blockingUpgrade(port: port, origin: origin) }) }
        }
    }

    private static func blockingUpgrade(port: Int, origin: String?) throws -> (status: Int, text: String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED) }
        var request = "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        if let origin { request += "Origin: \(origin)\r\n" }
        request += "\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        // The status line and headers, and for an upgrade the server's welcome frame.
        for _ in 0..<4 {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            text += String(decoding: buffer[0..<n], as: UTF8.self)
            if text.contains("welcome") || (text.contains("\r\n\r\n") && !text.hasPrefix("HTTP/1.1 101")) { break }
        }
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? -1
        return (status, text)
    }

    @Test("a page of another origin is refused before the upgrade, no session (counted, said why), the console's own origin and clients without one get in")
    func server() async throws {
        try await ServerLiveTests.withServer { server in
            let own = "http://127.0.0.1:\(server.port)"
            let evil = try await Self.upgrade(port: server.port, origin: "https://evil.example")
            #expect(evil.status == 400 && !evil.text.contains("welcome") && !evil.text.contains("<title>"),
                    "a foreign page must get neither a session nor a file: \(evil.text.prefix(300))")
            #expect(await server.refusedOrigins() == 1)
            for (origin, what) in [(own, "the console's own origin"), (nil, "a client that is no browser"),
                                   ("ws://127.0.0.1", "swift-nio's client")] as [(String?, String)] {
                let got = try await Self.upgrade(port: server.port, origin: origin)
                #expect(got.status == 101 && got.text.contains("welcome"), "\(what): \(got.text.prefix(300))")
            }
            #expect(try await Self.upgrade(port: server.port, origin: "null").status == 400, "a page from a file")
            #expect(await server.refusedOrigins() == 2)
            // Our own client (which sends `Origin: ws://HOST`) still connects.
            let client = try await ServerLiveTests.connect(server)
            #expect(!client.peerId.isEmpty)
            client.close()
        }
    }

    @Test("--allow-origin: a listed origin and file pages (null) get in; others still do not")
    func allowed() async throws {
        var configuration = SignalingServerConfiguration(port: 0)
        configuration.origins = try OriginPolicy(allowing: ["https://expert.example", "null"])
        let server = try await SignalingServer.start(configuration, logger: testLogger)
        #expect(try await Self.upgrade(port: server.port, origin: "https://expert.example").status == 101)
        #expect(try await Self.upgrade(port: server.port, origin: "null").status == 101)
        #expect(try await Self.upgrade(port: server.port, origin: "https://evil.example").status == 400)
        await server.stop()
    }
}
