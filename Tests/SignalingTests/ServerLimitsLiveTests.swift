import Foundation
import Signaling
import Testing
import TestSupport

/// The server against strangers who hold connections: a cap on open connections, idle
/// sockets and bare WebSockets closed, oversized request heads refused; honest clients
/// get in as soon as there is room.
@Suite("Server live: connection limits", .serialized, .timeLimit(.minutes(1)), .tags(.realtime))
struct ServerLimitsLiveTests {
    @Test("connections beyond the cap wait; idle keep-alive ones are closed after the HTTP idle timeout, and the waiting client gets in")
    func connectionCap() async throws {
        var configuration = SignalingServerConfiguration(port: 0)
        configuration.maxConnections = 8
        configuration.httpIdleTimeout = .seconds(3)
        let server = try await SignalingServer.start(configuration, logger: testLogger)
        defer { Task { await server.stop() } }
        // Each stranger asks for something once, then keeps the connection open and silent.
        var strangers: [RawSocket] = []
        for _ in 0..<8 {
            let stranger = try RawSocket(port: server.port, timeout: 10)
            stranger.send("GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let (answer, _) = await stranger.read { $0.contains("\r\n\r\n") }
            #expect(answer.hasPrefix("HTTP/1.1 404"), "\(answer.prefix(60))")
            strangers.append(stranger)
        }
        // All places taken: a ninth connection is not served while they are open.
        let ninth = try RawSocket(port: server.port, timeout: 1)
        ninth.send("GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let (early, _) = await ninth.read { $0.contains("\r\n\r\n") }
        #expect(early.isEmpty, "served beyond the cap: \(early.prefix(60))")
        // The client waits until the strangers' idle connections are closed, then gets in.
        let clock = ContinuousClock(), start = clock.now
        let client = try await ServerLiveTests.connect(server)
        let waited = clock.now - start
        #expect(!client.peerId.isEmpty)
        #expect(waited < .seconds(8), "the client got in after \(waited)")
        client.close()
        for stranger in strangers {
            let (text, closed) = await stranger.read()
            #expect(closed, "an idle connection was not closed: \(text.prefix(80))")
        }
    }

    @Test("the HTTP idle timeout ends before the upgrade: a declared WebSocket client quiet for longer stays connected")
    func quietWebSocketStays() async throws {
        var configuration = SignalingServerConfiguration(port: 0)
        configuration.httpIdleTimeout = .seconds(1)
        let server = try await SignalingServer.start(configuration, logger: testLogger)
        defer { Task { await server.stop() } }
        let client = try await ServerLiveTests.connect(server)
        _ = try await ServerLiveTests.declare(client, PeerStatus(roles: [.listener], room: "quiet"))
        try await Task.sleep(for: .seconds(3))
        _ = try await ServerLiveTests.declare(client, PeerStatus(roles: [.listener], room: "quiet"))
        client.close()
    }

    @Test("a request head larger than the limit is answered 431 and closed, and the server goes on serving others")
    func oversizedHead() async throws {
        var configuration = SignalingServerConfiguration(port: 0)
        configuration.maxHeaderBytes = 4096
        let server = try await SignalingServer.start(configuration, logger: testLogger)
        defer { Task { await server.stop() } }
        let socket = try RawSocket(port: server.port, timeout: 2)
        socket.send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: \(String(repeating: "a", count: 64 * 1024))\r\n\r\n")
        let (text, closed) = await socket.read()
        #expect(text.hasPrefix("HTTP/1.1 431") && closed, "a 64 KiB head: \(text.prefix(100)), closed \(closed)")
        let client = try await ServerLiveTests.connect(server)
        #expect(!client.peerId.isEmpty)
        client.close()
    }

    @Test("a WebSocket that never declares itself and starts no session is told why and closed after the undeclared timeout")
    func bareWebSocket() async throws {
        try await ServerLiveTests.withServer(limits: HubLimits(undeclaredTimeout: 1)) { server in
            let stranger = try RawSocket(port: server.port, timeout: 10)
            stranger.send("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
            let clock = ContinuousClock(), start = clock.now
            let (text, closed) = await stranger.read()
            let after = clock.now - start
            #expect(text.contains("welcome") && text.contains("idleTimeout") && text.contains("declare"), "\(text.suffix(300))")
            #expect(closed && after < .seconds(6), "closed \(closed) after \(after)")
        }
    }
}
