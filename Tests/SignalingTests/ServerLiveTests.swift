import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import Signaling
import TestSupport
import Testing

/// The real server on port 0 with real WebSocket clients.
@Suite("Server live on loopback", .timeLimit(.minutes(1)))
struct ServerLiveTests {
    /// Runs `body` against a fresh server and stops it afterwards, whatever happens.
    static func withServer<T: Sendable>(limits: HubLimits = .init(), access: AccessPolicy = .open,
                                        _ body: @escaping @Sendable (SignalingServer) async throws -> T) async throws -> T {
        let server = try await withTimeout(10, "the server to start") {
            try await SignalingServer.start(SignalingServerConfiguration(port: 0, limits: limits, access: access), logger: testLogger)
        }
        let result: Result<T, any Error>
        do {
            result = .success(try await body(server))
        } catch {
            result = .failure(error)
        }
        try await withTimeout(15, "the server to stop") { await server.stop() }
        return try result.get()
    }

    static func connect(_ server: SignalingServer) async throws -> SignalingClient {
        try await withTimeout(10, "a client to connect") { try await SignalingClient.connect(url: server.url, logger: testLogger) }
    }

    /// The client's next message (within 5 s).
    static func next(_ client: SignalingClient, _ what: String = "a message") async throws -> ServerMessage {
        try await withTimeout(5, what) {
            for await message in client.messages { return message }
            throw SignalingClientError.closed
        }
    }

    /// Declares, then waits for the answer to a `list`, so the declaration has certainly been handled.
    static func declare(_ client: SignalingClient, _ status: PeerStatus) async throws -> [ProducerInfo] {
        try client.send(.setPeerStatus(status))
        try client.send(.list)
        let reply = try await next(client, "the list after declaring")
        guard case .list(let producers) = reply else {
            Issue.record("expected list, got \(reply)")
            return []
        }
        return producers
    }

    @Test func startsOnAnyFreePortAndReportsItsURL() async throws {
        try await Self.withServer { server in
            #expect(server.port > 0)
            #expect(server.url == "ws://127.0.0.1:\(server.port)/")
        }
    }

    @Test func publisherAndExpertRelaySdpAndIce() async throws {
        try await Self.withServer { server in
            let publisher = try await Self.connect(server)
            let expert = try await Self.connect(server)
            #expect(publisher.peerId != expert.peerId)
            let meta = JSONValue.object(["name": .string("field camera")])
            let seenByPublisher = try await Self.declare(publisher, PeerStatus(roles: [.producer], meta: meta, room: "lab"))
            #expect(seenByPublisher == [ProducerInfo(id: publisher.peerId, meta: meta)])
            let seenByExpert = try await Self.declare(expert, PeerStatus(roles: [.consumer], room: "lab", role: .expert))
            #expect(seenByExpert.map(\.id) == [publisher.peerId])

            try expert.send(.startSession(peerId: publisher.peerId))
            guard case let .sessionStarted(producerId, sessionId) = try await Self.next(expert, "sessionStarted") else {
                Issue.record("expected sessionStarted")
                return
            }
            #expect(producerId == publisher.peerId)
            let request = try await Self.next(publisher, "startSession")
            #expect(request == .startSession(peerId: expert.peerId, sessionId: sessionId, role: .expert, meta: nil))

            let offer = PeerMessage(sessionId: sessionId, payload: .sdp(SignalingSDP(type: "offer", sdp: "v=0\r\ns=offer\r\n")))
            let answer = PeerMessage(sessionId: sessionId, payload: .sdp(SignalingSDP(type: "answer", sdp: "v=0\r\ns=answer\r\n")))
            let ice1 = PeerMessage(sessionId: sessionId, payload: .ice(SignalingICE(candidate: "candidate:1 1 UDP 1 127.0.0.1 5000 typ host", sdpMLineIndex: 0)))
            let ice2 = PeerMessage(sessionId: sessionId, payload: .ice(SignalingICE(candidate: "candidate:2 1 UDP 1 127.0.0.1 5001 typ host", sdpMLineIndex: 1)))
            try publisher.send(.peer(offer))
            try publisher.send(.peer(ice1))
            #expect(try await Self.next(expert, "the offer") == .peer(offer))
            #expect(try await Self.next(expert, "ICE 1") == .peer(ice1))
            try expert.send(.peer(answer))
            try expert.send(.peer(ice2))
            #expect(try await Self.next(publisher, "the answer") == .peer(answer))
            #expect(try await Self.next(publisher, "ICE 2") == .peer(ice2))

            try expert.send(.endSession(sessionId: sessionId))
            #expect(try await Self.next(publisher, "endSession") == .endSession(sessionId: sessionId))
            #expect(try await Self.next(expert, "endSession") == .endSession(sessionId: sessionId))
            publisher.close()
            expert.close()
        }
    }

    @Test func closingClientEndsItsSessionForTheOtherSide() async throws {
        try await Self.withServer { server in
            let publisher = try await Self.connect(server)
            let viewer = try await Self.connect(server)
            _ = try await Self.declare(publisher, PeerStatus(roles: [.producer]))
            try viewer.send(.startSession(peerId: publisher.peerId))
            guard case let .sessionStarted(_, sessionId) = try await Self.next(viewer, "sessionStarted") else {
                Issue.record("expected sessionStarted")
                return
            }
            _ = try await Self.next(publisher, "startSession")
            viewer.close()
            #expect(try await Self.next(publisher, "endSession after the viewer left") == .endSession(sessionId: sessionId))
            try await withTimeout(5, "the viewer's messages to finish") {
                for await _ in viewer.messages {}
            }
            #expect(throws: SignalingClientError.closed) { try viewer.send(.list) }
            publisher.close()
        }
    }

    @Test func listenerSeesProducerComeAndGo() async throws {
        try await Self.withServer { server in
            let listener = try await Self.connect(server)
            _ = try await Self.declare(listener, PeerStatus(roles: [.listener], room: "lab"))
            let publisher = try await Self.connect(server)
            try publisher.send(.setPeerStatus(PeerStatus(roles: [.producer], room: "lab")))
            #expect(try await Self.next(listener, "the producer appearing")
                    == .peerStatusChanged(peerId: publisher.peerId, roles: [.producer], meta: nil, room: "lab", role: .publisher))
            publisher.close()
            #expect(try await Self.next(listener, "the producer leaving")
                    == .peerStatusChanged(peerId: publisher.peerId, roles: [], meta: nil, room: "lab", role: nil))
            listener.close()
        }
    }

    @Test func peerInAnotherRoomDoesNotSeeTheProducer() async throws {
        try await Self.withServer { server in
            let publisher = try await Self.connect(server)
            let outsider = try await Self.connect(server)
            _ = try await Self.declare(outsider, PeerStatus(roles: [.listener, .consumer], room: "other"))
            #expect(try await Self.declare(publisher, PeerStatus(roles: [.producer], room: "lab")).count == 1)
            // Messages on one connection arrive in order: had the outsider been told about
            // the producer, that notice would come before this list reply.
            try outsider.send(.list)
            #expect(try await Self.next(outsider, "the outsider's list") == .list(producers: []))
            try outsider.send(.startSession(peerId: publisher.peerId))
            #expect(try await Self.next(outsider, "the refusal").errorInfo?.code == .unknownPeer)
            publisher.close()
            outsider.close()
        }
    }

    @Test func tokensAreCheckedOverTheWire() async throws {
        let access = AccessPolicy(roomTokens: ["lab": "s3cret"])
        try await Self.withServer(access: access) { server in
            let client = try await Self.connect(server)
            try client.send(.setPeerStatus(PeerStatus(roles: [.consumer], room: "lab", token: "wrong")))
            let refusal = try await Self.next(client, "the refusal")
            #expect(refusal.errorInfo?.code == .unauthorized)
            #expect(refusal.errorInfo?.details.contains("wrong") == true)
            #expect(try await Self.declare(client, PeerStatus(roles: [.consumer], room: "lab", token: "s3cret")) == [])
            client.close()
        }
    }

    /// Garbage, an oversized message and a binary frame from a raw WebSocket client: each
    /// gets an error reply and the connection stays usable.
    @Test func rawClientSendingGarbageGetsErrorsAndStaysConnected() async throws {
        let limits = HubLimits(maxMessageBytes: 4096)
        try await Self.withServer(limits: limits) { server in
            let replies = try await withTimeout(15, "the raw client session") {
                let replies = Locked<[ServerMessage]>([])
                try await WebSocketClient.connect(url: server.url, configuration: .init(maxFrameSize: 1 << 20),
                                                  logger: testLogger) { inbound, outbound, _ in
                    var iterator = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                    func reply() async throws -> ServerMessage {
                        guard case .text(let text)? = try await iterator.next() else { throw SignalingClientError.closed }
                        let message = try SignalingCodec.decodeServer(text)
                        replies.mutate { $0.append(message) }
                        return message
                    }
                    _ = try await reply()  // welcome
                    try await outbound.write(.text("this is not JSON"))
                    _ = try await reply()
                    try await outbound.write(.text(#"{"type":"list","pad":""# + String(repeating: "x", count: 6000) + #""}"#))
                    _ = try await reply()
                    try await outbound.write(.binary(ByteBuffer(string: #"{"type":"list"}"#)))
                    _ = try await reply()
                    try await outbound.write(.text(#"{"type":"nope"}"#))
                    _ = try await reply()
                    // Fragmented text is one message.
                    try await outbound.withTextMessageWriter { write in
                        try await write(#"{"type":"#)
                        try await write(#""list"}"#)
                    }
                    _ = try await reply()
                    try await outbound.close(.normalClosure, reason: nil)
                }
                return replies.value
            }
            try #require(replies.count == 6, "\(replies)")
            if case .welcome = replies[0] {} else { Issue.record("expected welcome, got \(replies[0])") }
            #expect(replies[1].errorInfo?.code == .malformed)
            #expect(replies[2].errorInfo?.code == .tooLarge)
            #expect(replies[3].errorInfo?.code == .malformed)
            #expect(replies[3].errorInfo?.details.contains("text frame") == true)
            #expect(replies[4].errorInfo?.code == .unknownType)
            #expect(replies[5] == .list(producers: []))
        }
    }

    @Test func messageBeyondTheTransportLimitClosesTheConnection() async throws {
        let limits = HubLimits(maxMessageBytes: 4096)
        try await Self.withServer(limits: limits) { server in
            let closedAfterWelcome = try await withTimeout(15, "the server to close the connection") {
                let messages = Locked(0)
                _ = try? await WebSocketClient.connect(url: server.url, logger: testLogger) { inbound, outbound, _ in
                    var iterator = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                    _ = try await iterator.next()
                    messages.mutate { $0 += 1 }
                    try await outbound.write(.text(String(repeating: "x", count: 64 * 1024)))
                    while try await iterator.next() != nil { messages.mutate { $0 += 1 } }
                }
                return messages.value == 1
            }
            #expect(closedAfterWelcome)
            // The server is fine.
            let client = try await Self.connect(server)
            client.close()
        }
    }

    @Test func connectingToAClosedPortFailsFast() async throws {
        let server = try await SignalingServer.start(SignalingServerConfiguration(port: 0), logger: testLogger)
        let url = server.url
        await server.stop()
        let started = ContinuousClock.now
        let error = try await withTimeout(5, "the connection attempt to fail") { () async -> SignalingClientError? in
            do throws(SignalingClientError) {
                _ = try await SignalingClient.connect(url: url, logger: testLogger)
                return nil
            } catch {
                return error
            }
        }
        guard case .connectFailed(let failedURL, _)? = error else {
            Issue.record("expected connectFailed, got \(String(describing: error))")
            return
        }
        #expect(failedURL == url)
        #expect(ContinuousClock.now - started < .seconds(3))
    }

    @Test(arguments: ["http://127.0.0.1:1/", "127.0.0.1:8443", "ws://", "ws://:80/", "wss://host:99999/", ""])
    func invalidURLsAreRefused(_ url: String) async {
        await #expect(throws: SignalingClientError.invalidURL(url)) {
            _ = try await SignalingClient.connect(url: url, logger: testLogger)
        }
    }

    @Test func nonSignalingServerIsNotWelcomed() async throws {
        // A server at a path that does not upgrade: the WebSocket handshake fails.
        try await Self.withServer { server in
            let url = server.url + "not-here"
            await #expect {
                _ = try await withTimeout(12, "the failed connection") {
                    try await SignalingClient.connect(url: url, logger: testLogger)
                }
            } throws: { error in
                guard let error = error as? SignalingClientError, case .connectFailed = error else { return false }
                return true
            }
        }
    }

    @Test func stopClosesEveryClient() async throws {
        let server = try await SignalingServer.start(SignalingServerConfiguration(port: 0), logger: testLogger)
        let a = try await Self.connect(server)
        let b = try await Self.connect(server)
        _ = try await Self.declare(a, PeerStatus(roles: [.producer]))
        let stopped = ContinuousClock.now
        try await withTimeout(10, "stop()") { await server.stop() }
        #expect(ContinuousClock.now - stopped < .seconds(5))
        for client in [a, b] {
            try await withTimeout(5, "a client's messages to finish") {
                for await _ in client.messages {}
            }
            #expect(throws: SignalingClientError.closed) { try client.send(.list) }
        }
        await server.stop()  // a second stop is harmless
    }
}
