import Foundation
import Signaling
import Testing

@Suite("Codec: round trips and GStreamer's wire format")
struct CodecTests {
    static let meta = JSONValue.object([
        "name": .string("field camera"), "n": .number(3), "on": .bool(true), "tags": .array([.string("a"), .null]),
    ])
    static let sdp = PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "offer", sdp: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n")))
    static let ice = PeerMessage(sessionId: "s1", payload: .ice(SignalingICE(candidate: "candidate:1 1 UDP 2122252543 10.0.0.2 50000 typ host", sdpMLineIndex: 3)))

    static let serverMessages: [ServerMessage] = [
        .welcome(peerId: "p1"),
        .peerStatusChanged(peerId: "p1", roles: [.producer, .listener], meta: meta, room: "lab", role: .publisher),
        .peerStatusChanged(peerId: "p1", roles: [], meta: nil, room: nil, role: nil),
        .list(producers: [ProducerInfo(id: "p1", meta: meta), ProducerInfo(id: "p2")]),
        .list(producers: []),
        .sessionStarted(peerId: "p1", sessionId: "s1"),
        .startSession(peerId: "p2", sessionId: "s1", role: .expert, meta: meta),
        .startSession(peerId: "p2", sessionId: "s1", role: nil, meta: nil),
        .endSession(sessionId: "s1"),
        .peer(sdp),
        .peer(ice),
        .error(details: "room \"lab\" is full", code: .roomFull),
        .error(details: "something", code: nil),
    ] + SignalingErrorCode.allCases.map { .error(details: $0.rawValue, code: $0) }

    static let clientMessages: [ClientMessage] = [
        .setPeerStatus(PeerStatus(roles: [.producer], meta: meta, peerId: "p1", room: "lab", role: .publisher, token: "t")),
        .setPeerStatus(PeerStatus(roles: [])),
        .setPeerStatus(PeerStatus(roles: GstPeerRole.allCases, role: .viewer)),
        .startSession(peerId: "p1"),
        .endSession(sessionId: "s1"),
        .peer(sdp),
        .peer(ice),
        .list,
    ]

    @Test(arguments: serverMessages)
    func serverMessageRoundTrips(_ message: ServerMessage) throws {
        #expect(try SignalingCodec.decodeServer(SignalingCodec.encode(message)) == message)
    }

    @Test(arguments: clientMessages)
    func clientMessageRoundTrips(_ message: ClientMessage) throws {
        #expect(try SignalingCodec.decodeClient(SignalingCodec.encode(message)) == message)
    }

    /// What webrtcsink and webrtcsrc send, byte for byte as their serde code writes it.
    @Test(arguments: [
        (#"{"type":"setPeerStatus","roles":["producer"],"meta":{"name":"x"}}"#,
         ClientMessage.setPeerStatus(PeerStatus(roles: [.producer], meta: .object(["name": .string("x")])))),
        (#"{"type":"setPeerStatus","roles":["producer"],"meta":null,"peerId":null}"#,
         .setPeerStatus(PeerStatus(roles: [.producer]))),
        (#"{"type":"setPeerStatus","roles":["listener"],"meta":null}"#, .setPeerStatus(PeerStatus(roles: [.listener]))),
        (#"{"type":"startSession","peerId":"1d2c3b4a-0000-4000-8000-000000000000"}"#,
         .startSession(peerId: "1d2c3b4a-0000-4000-8000-000000000000")),
        (#"{"type":"startSession","peerId":"p","offer":null}"#, .startSession(peerId: "p")),
        (#"{"type":"peer","sessionId":"s","sdp":{"type":"offer","sdp":"v=0\r\no=- 0 0 IN IP4 0.0.0.0\r\n"}}"#,
         .peer(PeerMessage(sessionId: "s", payload: .sdp(SignalingSDP(type: "offer", sdp: "v=0\r\no=- 0 0 IN IP4 0.0.0.0\r\n"))))),
        (#"{"type":"peer","sessionId":"s","sdp":{"type":"answer","sdp":"v=0..."}}"#,
         .peer(PeerMessage(sessionId: "s", payload: .sdp(SignalingSDP(type: "answer", sdp: "v=0..."))))),
        (#"{"type":"peer","sessionId":"s","ice":{"candidate":"candidate:1 1 UDP 2015363327 192.168.1.5 47981 typ host","sdpMLineIndex":0}}"#,
         .peer(PeerMessage(sessionId: "s", payload: .ice(SignalingICE(candidate: "candidate:1 1 UDP 2015363327 192.168.1.5 47981 typ host", sdpMLineIndex: 0))))),
        (#"{"type":"endSession","sessionId":"s"}"#, .endSession(sessionId: "s")),
        (#"{"type":"list"}"#, .list),
    ])
    func decodesWhatGStreamerSends(_ text: String, _ expected: ClientMessage) throws {
        #expect(try SignalingCodec.decodeClient(text) == expected)
    }

    /// The server's messages as JSON objects, to check field names and values.
    static func object(_ message: ServerMessage) throws -> [String: Any] {
        let json = try JSONSerialization.jsonObject(with: Data(SignalingCodec.encode(message).utf8))
        return try #require(json as? [String: Any])
    }

    @Test func encodesWhatGStreamerExpects() throws {
        let welcome = try Self.object(.welcome(peerId: "p1"))
        #expect(welcome["type"] as? String == "welcome" && welcome["peerId"] as? String == "p1" && welcome.count == 2)

        let started = try Self.object(.sessionStarted(peerId: "p1", sessionId: "s1"))
        #expect(started["type"] as? String == "sessionStarted" && started["peerId"] as? String == "p1"
                && started["sessionId"] as? String == "s1")

        let start = try Self.object(.startSession(peerId: "c1", sessionId: "s1", role: nil, meta: nil))
        #expect(Set(start.keys) == ["type", "peerId", "sessionId"] && start["type"] as? String == "startSession")

        let list = try Self.object(.list(producers: [ProducerInfo(id: "p1", meta: .object(["name": .string("x")]))]))
        let producers = try #require(list["producers"] as? [[String: Any]])
        #expect(list["type"] as? String == "list" && producers.count == 1)
        #expect(producers[0]["id"] as? String == "p1" && (producers[0]["meta"] as? [String: Any])?["name"] as? String == "x")

        let status = try Self.object(.peerStatusChanged(peerId: "p1", roles: [.producer], meta: nil, room: nil, role: nil))
        #expect(status["type"] as? String == "peerStatusChanged" && status["peerId"] as? String == "p1"
                && status["roles"] as? [String] == ["producer"])

        let end = try Self.object(.endSession(sessionId: "s1"))
        #expect(end["type"] as? String == "endSession" && end["sessionId"] as? String == "s1")

        let error = try Self.object(.error(details: "nope", code: .malformed))
        #expect(error["type"] as? String == "error" && error["details"] as? String == "nope" && error["code"] as? String == "malformed")

        let offer = try Self.object(.peer(Self.sdp))
        let sdp = try #require(offer["sdp"] as? [String: Any])
        #expect(offer["type"] as? String == "peer" && offer["sessionId"] as? String == "s1" && offer["ice"] == nil)
        #expect(sdp["type"] as? String == "offer" && sdp["sdp"] as? String == "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n")

        let candidate = try Self.object(.peer(Self.ice))
        let ice = try #require(candidate["ice"] as? [String: Any])
        #expect(candidate["sdp"] == nil && ice["candidate"] as? String == "candidate:1 1 UDP 2122252543 10.0.0.2 50000 typ host")
        #expect(ice["sdpMLineIndex"] as? Int == 3)
    }

    @Test func encodedTextIsCompactAndDoesNotEscapeSlashes() {
        #expect(SignalingCodec.encode(.welcome(peerId: "a/b")) == #"{"peerId":"a/b","type":"welcome"}"#)
        #expect(!SignalingCodec.encode(.welcome(peerId: "p")).contains("\n"))
    }
}
