import Foundation
import Signaling
import Testing
import TestSupport

/// The real server's front door against strangers, over raw sockets: idle and slowloris
/// connections answered 408 at the header deadline, a crowd from one address beyond its
/// share answered 503, a request flood 429, and through all of it an honest WebSocket
/// client keeps its session and a newcomer still gets in.
@Suite("Server live: front door", .serialized, .timeLimit(.minutes(1)), .tags(.realtime))
struct FrontDoorLiveTests {
    static func server(_ adjust: (inout SignalingServerConfiguration) -> Void) async throws -> SignalingServer {
        var configuration = SignalingServerConfiguration(port: 0)
        adjust(&configuration)
        return try await SignalingServer.start(configuration, logger: testLogger)
    }

    @Test("a silent connection and a slowloris one (a header line every 0.4 s) are answered 408 and closed at the 1.5 s deadline; an honest client meanwhile gets in")
    func headerDeadline() async throws {
        let server = try await Self.server { $0.frontDoor.headerTimeout = .milliseconds(1500) }
        defer { Task { await server.stop() } }
        let clock = ContinuousClock(), start = clock.now
        let silent = try RawSocket(port: server.port, timeout: 5)
        let slow = try RawSocket(port: server.port, timeout: 5)
        slow.send("GET / HTTP/1.1\r\n")
        let dripping = Task {
            for line in 0..<20 {
                try await Task.sleep(for: .milliseconds(400))
                slow.send("X-Line-\(line): a\r\n")
            }
        }
        let client = try await ServerLiveTests.connect(server)
        #expect(!client.peerId.isEmpty)
        for (name, socket) in [("silent", silent), ("slowloris", slow)] {
            let (text, closed) = await socket.read()
            let after = clock.now - start
            #expect(text.hasPrefix("HTTP/1.1 408 ") && closed, "\(name): \(text.prefix(60)), closed \(closed)")
            #expect(after >= .milliseconds(1400) && after < .seconds(3), "\(name) answered after \(after)")
        }
        dripping.cancel()
        // The honest client's WebSocket was not subject to the deadline.
        _ = try await ServerLiveTests.declare(client, PeerStatus(roles: [.listener], room: "door"))
        client.close()
        #expect(server.frontDoorRefusals()[408] == 2)
    }

    @Test("one address beyond its share of connections gets 503 at once; its connections count back down as they close")
    func perAddressShare() async throws {
        let server = try await Self.server { $0.frontDoor.maxConnectionsPerAddress = 6 }
        defer { Task { await server.stop() } }
        var held: [RawSocket] = []
        for _ in 0..<6 { held.append(try RawSocket(port: server.port, timeout: 5)) }
        let extra = try RawSocket(port: server.port, timeout: 5)
        let (text, closed) = await extra.read()
        #expect(text.hasPrefix("HTTP/1.1 503 ") && text.contains("Retry-After") && closed, "\(text.prefix(80))")
        #expect(server.connections(from: "127.0.0.1") == 6)
        held.removeAll()
        try await Self.waitUntil { server.connections(from: "127.0.0.1") == 0 }
        let client = try await ServerLiveTests.connect(server)
        #expect(!client.peerId.isEmpty)
        client.close()
    }

    @Test("requests beyond the rate get 429 and a close; the budget comes back with time")
    func requestRate() async throws {
        let server = try await Self.server { $0.frontDoor.requestsPerSecond = 5; $0.frontDoor.requestBurst = 10 }
        defer { Task { await server.stop() } }
        var statuses: [Int] = []
        for _ in 0..<14 {
            let socket = try RawSocket(port: server.port, timeout: 5)
            socket.send("GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            let (text, _) = await socket.read()
            statuses.append(Int(text.split(separator: " ").dropFirst().first ?? "") ?? -1)
        }
        #expect(statuses.prefix(10).allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(statuses.suffix(3).allSatisfy { $0 == 429 }, "\(statuses)")
        try await Task.sleep(for: .milliseconds(600))
        let socket = try RawSocket(port: server.port, timeout: 5)
        socket.send("GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        #expect(await socket.read().text.hasPrefix("HTTP/1.1 200 "))
    }

    @Test("keep-alive: a second request on the same connection is served, and pipelined heads are each answered")
    func keepAlive() async throws {
        let server = try await Self.server { _ in }
        defer { Task { await server.stop() } }
        let socket = try RawSocket(port: server.port, timeout: 5)
        socket.send("GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /console.css HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let (both, _) = await socket.read { $0.components(separatedBy: "HTTP/1.1 200 ").count == 3 }
        #expect(both.components(separatedBy: "HTTP/1.1 200 ").count == 3, "\(both.count) bytes")
        socket.send("GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let (third, _) = await socket.read { $0.contains("404") }
        #expect(third.contains("HTTP/1.1 404 "))
    }

    static func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<100 where !condition() { try await Task.sleep(for: .milliseconds(50)) }
        #expect(condition())
    }
}
