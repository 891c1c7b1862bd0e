import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signaling
import Testing

/// Which web pages may open the signaling WebSocket: the policy on its own, then the real
/// server refusing a page of another origin before the upgrade (403, never a session,
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

    @Test("a page of another origin is refused before the upgrade, no session (counted, said why), the console's own origin and clients without one get in")
    func server() async throws {
        try await ServerLiveTests.withServer { server in
            let own = "http://127.0.0.1:\(server.port)"
            let evil = try await RawSocket.upgrade(port: server.port, origin: "https://evil.example")
            #expect(evil.status == 403 && !evil.text.contains("welcome") && !evil.text.contains("<title>"),
                    "a foreign page must get neither a session nor a file: \(evil.text.prefix(300))")
            #expect(server.refusedOrigins() == 1)
            for (origin, what) in [(own, "the console's own origin"), (nil, "a client that is no browser"),
                                   ("ws://127.0.0.1", "swift-nio's client")] as [(String?, String)] {
                let got = try await RawSocket.upgrade(port: server.port, origin: origin)
                #expect(got.status == 101 && got.text.contains("welcome"), "\(what): \(got.text.prefix(300))")
            }
            #expect(try await RawSocket.upgrade(port: server.port, origin: "null").status == 403, "a page from a file")
            #expect(server.refusedOrigins() == 2)
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
        #expect(try await RawSocket.upgrade(port: server.port, origin: "https://expert.example").status == 101)
        #expect(try await RawSocket.upgrade(port: server.port, origin: "null").status == 101)
        #expect(try await RawSocket.upgrade(port: server.port, origin: "https://evil.example").status == 403)
        await server.stop()
    }
}
