import Foundation
import PoseCastKit
import Signaling
import TestSupport
import Testing

/// The hub fed messages directly, with deterministic ids.
struct HubHarness {
    var hub: SignalingHub

    init(limits: HubLimits = .init(), access: AccessPolicy = .open) {
        hub = SignalingHub(limits: limits, access: access, makeID: sequentialIDs())
    }

    mutating func connect() -> String {
        let (peer, deliveries) = hub.connect()
        #expect(deliveries == [Delivery(to: peer, message: .welcome(peerId: peer))])
        return peer
    }

    mutating func send(_ message: ClientMessage, from peer: String) -> [Delivery] {
        hub.receive(SignalingCodec.encode(message), from: peer)
    }

    @discardableResult
    mutating func declare(_ peer: String, _ roles: [GstPeerRole], room: String? = nil, role: RoomRole? = nil,
                          token: String? = nil, meta: JSONValue? = nil) -> [Delivery] {
        send(.setPeerStatus(PeerStatus(roles: roles, meta: meta, room: room, role: role, token: token)), from: peer)
    }

    /// The ids `list` gives `peer` (which must get exactly the list reply).
    mutating func producers(seenBy peer: String) throws -> [String] {
        let replies = send(.list, from: peer)
        try #require(replies.count == 1 && replies[0].to == peer)
        guard case .list(let producers) = replies[0].message else {
            Issue.record("expected a list, got \(replies[0].message)")
            return []
        }
        return producers.map(\.id)
    }

    /// Starts a session and checks both sides are told; returns its id.
    mutating func startSession(consumer: String, producer: String) throws -> String {
        let replies = send(.startSession(peerId: producer), from: consumer)
        try #require(replies.count == 2, "\(replies)")
        guard case let .sessionStarted(peerId, sessionId) = replies[1].message else {
            Issue.record("expected sessionStarted, got \(replies)")
            return ""
        }
        #expect(replies[1].to == consumer && peerId == producer)
        guard case let .startSession(consumerId, producerSessionId, _, _) = replies[0].message else {
            Issue.record("expected startSession, got \(replies)")
            return ""
        }
        #expect(replies[0].to == producer && consumerId == consumer && producerSessionId == sessionId)
        return sessionId
    }

    /// Checks the session still relays ICE from `from` to `to`.
    mutating func expectRelays(_ sessionId: String, from: String, to: String,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        let ice = PeerMessage(sessionId: sessionId, payload: .ice(SignalingICE(candidate: "candidate:9 1 udp 1 10.0.0.1 9 typ host", sdpMLineIndex: 0)))
        #expect(send(.peer(ice), from: from) == [Delivery(to: to, message: .peer(ice))], sourceLocation: sourceLocation)
    }
}

/// Exactly one delivery: an error with `code` to `peer`.
func expectOneError(_ deliveries: [Delivery], to peer: String, _ code: SignalingErrorCode, mentioning: String? = nil,
                    sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(deliveries.count == 1, "expected exactly one error, got \(deliveries)", sourceLocation: sourceLocation)
    guard let delivery = deliveries.first else { return }
    #expect(delivery.to == peer, "error went to \(delivery.to), not the sender", sourceLocation: sourceLocation)
    let info = delivery.message.errorInfo
    #expect(info?.code == code, "expected \(code), got \(delivery.message)", sourceLocation: sourceLocation)
    if let mentioning {
        #expect(info?.details.contains(mentioning) == true, "details \"\(info?.details ?? "")\" do not mention \(mentioning)",
                sourceLocation: sourceLocation)
    }
}

@Suite("Hub: connection, rooms and listeners")
struct HubRoomTests {
    @Test func welcomeGivesEachPeerItsOwnId() {
        var h = HubHarness()
        let a = h.connect(), b = h.connect()
        #expect(a == "id1" && b == "id2")
        #expect(h.hub.peerCount == 2)
    }

    @Test func repeatedIdsAreMadeUnique() {
        var hub = SignalingHub(makeID: { "same" })
        let a = hub.connect().peer, b = hub.connect().peer, c = hub.connect().peer
        #expect(Set([a, b, c]).count == 3)
    }

    @Test func producerDeclaresAndListenersOfItsRoomAreTold() throws {
        var h = HubHarness()
        let listener = h.connect(), otherRoomListener = h.connect(), producer = h.connect()
        #expect(h.declare(listener, [.listener]).isEmpty)
        #expect(h.declare(otherRoomListener, [.listener], room: "elsewhere").isEmpty)
        let meta = JSONValue.object(["name": .string("field camera")])
        let told = h.declare(producer, [.producer], meta: meta)
        #expect(told == [Delivery(to: listener, message: .peerStatusChanged(
            peerId: producer, roles: [.producer], meta: meta, room: "default", role: .publisher))])
        #expect(try h.producers(seenBy: listener) == [producer])
        let list = h.send(.list, from: listener)
        #expect(list == [Delivery(to: listener, message: .list(producers: [ProducerInfo(id: producer, meta: meta)]))])
    }

    @Test func consumerDeclarationsAreNotBroadcast() {
        var h = HubHarness()
        let listener = h.connect(), viewer = h.connect()
        h.declare(listener, [.listener])
        #expect(h.declare(viewer, [.consumer], role: .expert).isEmpty)
    }

    @Test func listIsPerRoomAndRoomsAreIsolated() throws {
        var h = HubHarness()
        let producerA = h.connect(), producerB = h.connect(), viewerA = h.connect(), listenerB = h.connect()
        let undeclared = h.connect()
        h.declare(listenerB, [.listener], room: "b")
        #expect(h.declare(producerA, [.producer], room: "a").isEmpty, "b's listener must not hear about a")
        #expect(h.declare(producerB, [.producer], room: "b").map(\.to) == [listenerB])
        h.declare(viewerA, [.consumer], room: "a")
        #expect(try h.producers(seenBy: viewerA) == [producerA])
        #expect(try h.producers(seenBy: listenerB) == [producerB])
        #expect(try h.producers(seenBy: undeclared) == [])
        expectOneError(h.send(.startSession(peerId: producerB), from: viewerA), to: viewerA, .unknownPeer)
    }

    @Test func producerChangingRoomOrStoppingTellsListeners() {
        var h = HubHarness()
        let producer = h.connect(), listenerA = h.connect(), listenerB = h.connect()
        h.declare(listenerA, [.listener], room: "a")
        h.declare(listenerB, [.listener], room: "b")
        h.declare(producer, [.producer], room: "a")
        let moved = h.declare(producer, [.producer], room: "b")
        #expect(moved == [
            Delivery(to: listenerA, message: .peerStatusChanged(peerId: producer, roles: [], meta: nil, room: "a", role: nil)),
            Delivery(to: listenerB, message: .peerStatusChanged(peerId: producer, roles: [.producer], meta: nil, room: "b", role: .publisher)),
        ])
        let stopped = h.declare(producer, [.consumer], room: "b")
        #expect(stopped == [Delivery(to: listenerB, message: .peerStatusChanged(
            peerId: producer, roles: [.consumer], meta: nil, room: "b", role: .viewer))])
    }

    @Test func undeclaredPeerActsAsViewerOfTheDefaultRoom() throws {
        // GStreamer's webrtcsrc never sends setPeerStatus: it lists and starts sessions directly.
        var h = HubHarness()
        let producer = h.connect(), webrtcsrc = h.connect()
        h.declare(producer, [.producer])
        #expect(try h.producers(seenBy: webrtcsrc) == [producer])
        let replies = h.send(.startSession(peerId: producer), from: webrtcsrc)
        guard case let .startSession(consumer, _, role, meta) = replies.first?.message else {
            Issue.record("expected startSession, got \(replies)")
            return
        }
        #expect(consumer == webrtcsrc && role == .viewer && meta == nil)
    }

    @Test func roomFullCountsDeclaredPeersOnly() throws {
        var h = HubHarness(limits: HubLimits(maxPeersPerRoom: 2))
        let a = h.connect(), b = h.connect(), c = h.connect(), undeclared = h.connect()
        #expect(h.declare(a, [.producer], room: "lab").isEmpty)
        #expect(h.declare(b, [.consumer], room: "lab").isEmpty)
        expectOneError(h.declare(c, [.consumer], room: "lab"), to: c, .roomFull, mentioning: "lab")
        #expect(h.declare(c, [.consumer], room: "other").isEmpty, "other rooms are unaffected")
        #expect(h.declare(b, [.consumer], room: "lab", meta: .string("updated")).isEmpty, "re-declaring in place is fine")
        _ = h.hub.disconnect(b)
        #expect(h.declare(c, [.consumer], room: "lab").isEmpty, "a freed place can be taken")
        #expect(try h.producers(seenBy: undeclared) == [])
    }

    @Test func secondPublisherInARoomIsRefused() throws {
        var h = HubHarness()
        let first = h.connect(), second = h.connect(), viewer = h.connect()
        h.declare(first, [.producer], room: "lab")
        expectOneError(h.declare(second, [.producer], room: "lab"), to: second, .roomFull, mentioning: "already has a publisher")
        h.declare(viewer, [.consumer], room: "lab")
        #expect(try h.producers(seenBy: viewer) == [first])
        #expect(h.declare(second, [.producer], room: "lab2").isEmpty)
    }
}

@Suite("Hub: sessions")
struct HubSessionTests {
    @Test func fullSessionFlowRelaysSdpAndIceUnchanged() throws {
        var h = HubHarness()
        let producer = h.connect(), expert = h.connect()
        h.declare(producer, [.producer], room: "lab")
        let meta = JSONValue.object(["name": .string("Dr. X")])
        h.declare(expert, [.consumer], room: "lab", role: .expert, meta: meta)

        let started = h.send(.startSession(peerId: producer), from: expert)
        try #require(started.count == 2)
        guard case let .sessionStarted(_, sessionId) = started[1].message else {
            Issue.record("expected sessionStarted, got \(started)")
            return
        }
        #expect(started == [
            Delivery(to: producer, message: .startSession(peerId: expert, sessionId: sessionId, role: .expert, meta: meta)),
            Delivery(to: expert, message: .sessionStarted(peerId: producer, sessionId: sessionId)),
        ])
        #expect(h.hub.sessionCount == 1)

        let offer = PeerMessage(sessionId: sessionId, payload: .sdp(SignalingSDP(type: "offer", sdp: "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\n")))
        #expect(h.send(.peer(offer), from: producer) == [Delivery(to: expert, message: .peer(offer))])
        let answer = PeerMessage(sessionId: sessionId, payload: .sdp(SignalingSDP(type: "answer", sdp: "v=0\r\na=answer\r\n")))
        #expect(h.send(.peer(answer), from: expert) == [Delivery(to: producer, message: .peer(answer))])
        let ice1 = PeerMessage(sessionId: sessionId, payload: .ice(SignalingICE(candidate: "candidate:1 1 UDP 2122252543 192.168.1.2 50000 typ host", sdpMLineIndex: 0)))
        #expect(h.send(.peer(ice1), from: producer) == [Delivery(to: expert, message: .peer(ice1))])
        let ice2 = PeerMessage(sessionId: sessionId, payload: .ice(SignalingICE(candidate: "candidate:2 1 UDP 1 10.0.0.2 9 typ host", sdpMLineIndex: 1)))
        #expect(h.send(.peer(ice2), from: expert) == [Delivery(to: producer, message: .peer(ice2))])

        let ended = h.send(.endSession(sessionId: sessionId), from: expert)
        #expect(Set(ended) == [Delivery(to: producer, message: .endSession(sessionId: sessionId)),
                               Delivery(to: expert, message: .endSession(sessionId: sessionId))])
        #expect(ended.count == 2)
        #expect(h.hub.sessionCount == 0)
        expectOneError(h.send(.peer(ice1), from: producer), to: producer, .unknownSession)
    }

    @Test func producerMayEndTheSessionToo() throws {
        var h = HubHarness()
        let producer = h.connect(), viewer = h.connect()
        h.declare(producer, [.producer])
        let session = try h.startSession(consumer: viewer, producer: producer)
        let ended = h.send(.endSession(sessionId: session), from: producer)
        #expect(ended == [Delivery(to: viewer, message: .endSession(sessionId: session)),
                          Delivery(to: producer, message: .endSession(sessionId: session))])
    }

    @Test func consumerDisconnectEndsItsSessionAndTellsTheProducer() throws {
        var h = HubHarness()
        let producer = h.connect(), viewer = h.connect(), expert = h.connect(), listener = h.connect()
        h.declare(producer, [.producer])
        h.declare(listener, [.listener])
        let gone = try h.startSession(consumer: viewer, producer: producer)
        let kept = try h.startSession(consumer: expert, producer: producer)
        #expect(h.hub.disconnect(viewer) == [Delivery(to: producer, message: .endSession(sessionId: gone))])
        #expect(h.hub.sessionCount == 1 && h.hub.peerCount == 3)
        h.expectRelays(kept, from: expert, to: producer)
        expectOneError(h.send(.endSession(sessionId: gone), from: producer), to: producer, .unknownSession)
        #expect(h.hub.disconnect(viewer).isEmpty, "disconnecting twice does nothing")
        #expect(h.hub.receive(#"{"type":"list"}"#, from: viewer).isEmpty, "a gone peer is ignored")
    }

    @Test func producerDisconnectTellsConsumersAndListeners() throws {
        var h = HubHarness()
        let producer = h.connect(), a = h.connect(), b = h.connect(), listener = h.connect(), otherListener = h.connect()
        h.declare(producer, [.producer], room: "lab")
        h.declare(listener, [.listener], room: "lab")
        h.declare(otherListener, [.listener], room: "elsewhere")
        h.declare(a, [.consumer], room: "lab")
        h.declare(b, [.consumer, .listener], room: "lab")
        let sa = try h.startSession(consumer: a, producer: producer)
        let sb = try h.startSession(consumer: b, producer: producer)
        let left = ServerMessage.peerStatusChanged(peerId: producer, roles: [], meta: nil, room: "lab", role: nil)
        let told = h.hub.disconnect(producer)
        #expect(Set(told) == [
            Delivery(to: a, message: .endSession(sessionId: sa)),
            Delivery(to: b, message: .endSession(sessionId: sb)),
            Delivery(to: listener, message: left),
            Delivery(to: b, message: left),
        ])
        #expect(told.count == 4)
        #expect(h.hub.sessionCount == 0)
        #expect(try h.producers(seenBy: a) == [])
    }

    @Test func sessionsPerProducerAreLimited() throws {
        var h = HubHarness(limits: HubLimits(maxSessionsPerProducer: 2))
        let producer = h.connect(), viewer = h.connect()
        h.declare(producer, [.producer])
        let first = try h.startSession(consumer: viewer, producer: producer)
        _ = try h.startSession(consumer: viewer, producer: producer)
        expectOneError(h.send(.startSession(peerId: producer), from: viewer), to: viewer, .roomFull)
        _ = h.send(.endSession(sessionId: first), from: viewer)
        _ = try h.startSession(consumer: viewer, producer: producer)
    }

    @Test func peersInSessionsCannotChangeRoomOrRole() throws {
        var h = HubHarness()
        let producer = h.connect(), viewer = h.connect()
        h.declare(producer, [.producer], room: "lab")
        h.declare(viewer, [.consumer], room: "lab")
        let session = try h.startSession(consumer: viewer, producer: producer)
        expectOneError(h.declare(viewer, [.consumer], room: "other"), to: viewer, .wrongRole, mentioning: "session")
        expectOneError(h.declare(viewer, [.consumer], room: "lab", role: .expert), to: viewer, .wrongRole)
        expectOneError(h.declare(producer, [.consumer], room: "lab"), to: producer, .wrongRole)
        #expect(h.declare(viewer, [.consumer], room: "lab", meta: .string("new meta")).isEmpty)
        h.expectRelays(session, from: viewer, to: producer)
    }
}

@Suite("Hub: tokens")
struct HubTokenTests {
    static let policy = AccessPolicy(roomTokens: ["lab": "room-secret"], roleTokens: ["lab": [.publisher: "pub-secret"]])

    @Test func roomAndRoleTokens() throws {
        var h = HubHarness(access: Self.policy)
        let viewer = h.connect(), publisher = h.connect(), expert = h.connect()
        expectOneError(h.declare(viewer, [.consumer], room: "lab"), to: viewer, .unauthorized, mentioning: "requires a token")
        expectOneError(h.declare(viewer, [.consumer], room: "lab", token: "guess"), to: viewer, .unauthorized, mentioning: "wrong token")
        #expect(h.declare(viewer, [.consumer], room: "lab", token: "room-secret").isEmpty)
        expectOneError(h.declare(publisher, [.producer], room: "lab", token: "room-secret"), to: publisher, .unauthorized,
                       mentioning: "publisher")
        #expect(h.declare(publisher, [.producer], room: "lab", token: "pub-secret").isEmpty)
        expectOneError(h.declare(expert, [.consumer], room: "lab", role: .expert, token: "pub-secret"), to: expert, .unauthorized)
        #expect(h.declare(expert, [.consumer], room: "lab", role: .expert, token: "room-secret").isEmpty)
        let stranger = h.connect()
        #expect(h.declare(stranger, [.consumer], room: "open-room").isEmpty, "rooms without tokens are open")
        #expect(try h.producers(seenBy: viewer) == [publisher])
    }

    @Test func refusedPeerKeepsItsStatus() throws {
        var h = HubHarness(access: Self.policy)
        let producer = h.connect(), viewer = h.connect()
        h.declare(producer, [.producer], room: "lab", token: "pub-secret")
        h.declare(viewer, [.consumer], room: "lab", token: "room-secret")
        expectOneError(h.declare(viewer, [.consumer], room: "lab", role: .expert, token: "nope"), to: viewer, .unauthorized)
        let replies = h.send(.startSession(peerId: producer), from: viewer)
        guard case let .startSession(_, _, role, _) = replies.first?.message else {
            Issue.record("expected startSession, got \(replies)")
            return
        }
        #expect(role == .viewer, "still in lab as a viewer")
    }

    @Test func requireTokensClosesUnconfiguredRoomsAndTheUndeclared() {
        var policy = AccessPolicy(requireTokens: true)
        policy.setToken("lab-secret", room: "lab")
        var h = HubHarness(access: policy)
        let peer = h.connect()
        expectOneError(h.declare(peer, [.consumer], room: "open?"), to: peer, .unauthorized)
        expectOneError(h.send(.list, from: peer), to: peer, .unauthorized, mentioning: "setPeerStatus")
        expectOneError(h.send(.startSession(peerId: "x"), from: peer), to: peer, .unauthorized)
        #expect(h.declare(peer, [.consumer], room: "lab", token: "lab-secret").isEmpty)
        #expect(h.send(.list, from: peer) == [Delivery(to: peer, message: .list(producers: []))])
    }

    @Test func errorsNeverEchoTheToken() {
        var h = HubHarness(access: Self.policy)
        let peer = h.connect()
        for token in ["room-secret-but-wrong", "pub-secret", "hunter2"] {
            for role in RoomRole.allCases {
                let replies = h.declare(peer, role == .publisher ? [.producer] : [.consumer], room: "lab", role: role, token: token)
                for delivery in replies {
                    #expect(!(delivery.message.errorInfo?.details.contains(token) ?? false), "\(delivery.message)")
                }
            }
        }
        #expect(!Self.policy.description.contains("secret"))
        #expect(!String(reflecting: Self.policy).contains("secret"))
    }
}

/// One bad message and what the hub must answer.
struct BadInput: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    let code: SignalingErrorCode
    let mentioning: String?
    var testDescription: String { name }

    static let all: [BadInput] = [
        .init(name: "too large", text: String(repeating: "x", count: 64 * 1024 + 1), code: .tooLarge, mentioning: "65537 bytes"),
        .init(name: "too large but valid", text: #"{"type":"list","pad":""# + String(repeating: " ", count: 64 * 1024) + #""}"#,
              code: .tooLarge, mentioning: nil),
        .init(name: "not JSON", text: "hello?", code: .malformed, mentioning: nil),
        .init(name: "empty", text: "", code: .malformed, mentioning: nil),
        .init(name: "truncated", text: #"{"type":"list""#, code: .malformed, mentioning: nil),
        .init(name: "array", text: #"[{"type":"list"}]"#, code: .malformed, mentioning: nil),
        .init(name: "null", text: "null", code: .malformed, mentioning: nil),
        .init(name: "no type", text: #"{"peerId":"id1"}"#, code: .malformed, mentioning: "type"),
        .init(name: "type not a string", text: #"{"type":7}"#, code: .malformed, mentioning: "type"),
        .init(name: "unknown type", text: #"{"type":"joinRoom","room":"x"}"#, code: .unknownType, mentioning: "joinRoom"),
        .init(name: "missing peerId", text: #"{"type":"startSession"}"#, code: .malformed, mentioning: "peerId"),
        .init(name: "peerId wrong type", text: #"{"type":"startSession","peerId":5}"#, code: .malformed, mentioning: "peerId"),
        .init(name: "missing sessionId", text: #"{"type":"endSession"}"#, code: .malformed, mentioning: "sessionId"),
        .init(name: "roles not an array", text: #"{"type":"setPeerStatus","roles":"producer"}"#, code: .malformed, mentioning: "roles"),
        .init(name: "unknown role", text: #"{"type":"setPeerStatus","roles":["boss"]}"#, code: .malformed, mentioning: "roles"),
        .init(name: "unknown room role", text: #"{"type":"setPeerStatus","roles":[],"role":"admin"}"#, code: .malformed, mentioning: "role"),
        .init(name: "empty room", text: #"{"type":"setPeerStatus","roles":[],"room":""}"#, code: .malformed, mentioning: "room"),
        .init(name: "sdp and ice", text: #"{"type":"peer","sessionId":"id5","sdp":{"type":"offer","sdp":"v=0"},"ice":{"candidate":"c","sdpMLineIndex":0}}"#,
              code: .malformed, mentioning: "exactly one"),
        .init(name: "neither sdp nor ice", text: #"{"type":"peer","sessionId":"id5"}"#, code: .malformed, mentioning: "exactly one"),
        .init(name: "sdp without text", text: #"{"type":"peer","sessionId":"id5","sdp":{"type":"offer"}}"#, code: .malformed, mentioning: "sdp"),
        .init(name: "negative mline", text: #"{"type":"peer","sessionId":"id5","ice":{"candidate":"c","sdpMLineIndex":-1}}"#,
              code: .malformed, mentioning: "out of range"),
        .init(name: "deeply nested meta",
              text: #"{"type":"setPeerStatus","roles":[],"meta":"# + String(repeating: "[", count: 20000) + String(repeating: "]", count: 20000) + "}",
              code: .malformed, mentioning: nil),
    ]
}

@Suite("Hub: bad input and refusals")
struct HubErrorTests {
    /// A producer and a consumer in session `id5`, a listener, and a bystander.
    struct Fixture {
        var h = HubHarness()
        let producer: String, consumer: String, listener: String, bystander: String, session: String

        init() throws {
            producer = h.connect(); consumer = h.connect(); listener = h.connect(); bystander = h.connect()
            h.declare(producer, [.producer])
            h.declare(listener, [.listener])
            session = try h.startSession(consumer: consumer, producer: producer)
            #expect(session == "id5")
        }
    }

    @Test(arguments: BadInput.all)
    func badInputGetsOneErrorAndTheHubCarriesOn(_ input: BadInput) throws {
        var f = try Fixture()
        let (producer, consumer, session) = (f.producer, f.consumer, f.session)
        for sender in [consumer, producer] {
            expectOneError(f.h.hub.receive(input.text, from: sender), to: sender, input.code, mentioning: input.mentioning)
        }
        f.h.expectRelays(session, from: consumer, to: producer)
        f.h.expectRelays(session, from: producer, to: consumer)
        #expect(try f.h.producers(seenBy: consumer) == [producer])
    }

    @Test func messageExactlyAtTheLimitIsAccepted() throws {
        var f = try Fixture()
        let (producer, consumer, session) = (f.producer, f.consumer, f.session)
        let empty = SignalingCodec.encode(ClientMessage.peer(PeerMessage(sessionId: session, payload: .sdp(SignalingSDP(type: "offer", sdp: "")))))
        let sdp = String(repeating: "a", count: f.h.hub.limits.maxMessageBytes - empty.utf8.count)
        let offer = PeerMessage(sessionId: session, payload: .sdp(SignalingSDP(type: "offer", sdp: sdp)))
        #expect(SignalingCodec.encode(ClientMessage.peer(offer)).utf8.count == f.h.hub.limits.maxMessageBytes)
        #expect(f.h.send(.peer(offer), from: producer) == [Delivery(to: consumer, message: .peer(offer))])
        let tooBig = PeerMessage(sessionId: session, payload: .sdp(SignalingSDP(type: "offer", sdp: sdp + "a")))
        expectOneError(f.h.send(.peer(tooBig), from: producer), to: producer, .tooLarge)
    }

    @Test func thirdPeerCannotInjectIntoAnotherSession() throws {
        var f = try Fixture()
        let (producer, consumer, listener, bystander, session) = (f.producer, f.consumer, f.listener, f.bystander, f.session)
        let ice = PeerMessage(sessionId: session, payload: .ice(SignalingICE(candidate: "candidate:evil", sdpMLineIndex: 0)))
        let sdp = PeerMessage(sessionId: session, payload: .sdp(SignalingSDP(type: "offer", sdp: "v=0 evil")))
        for intruder in [bystander, listener] {
            expectOneError(f.h.send(.peer(ice), from: intruder), to: intruder, .unknownSession, mentioning: session)
            expectOneError(f.h.send(.peer(sdp), from: intruder), to: intruder, .unknownSession)
            expectOneError(f.h.send(.endSession(sessionId: session), from: intruder), to: intruder, .unknownSession)
        }
        expectOneError(f.h.send(.endSession(sessionId: "nope"), from: consumer), to: consumer, .unknownSession)
        let unknownIce = PeerMessage(sessionId: "nope", payload: .ice(SignalingICE(candidate: "c", sdpMLineIndex: 0)))
        expectOneError(f.h.send(.peer(unknownIce), from: producer), to: producer, .unknownSession)
        #expect(f.h.hub.sessionCount == 1)
        f.h.expectRelays(session, from: consumer, to: producer)
    }

    @Test func startSessionWithTheWrongPeer() throws {
        var f = try Fixture()
        let (producer, consumer, listener, bystander) = (f.producer, f.consumer, f.listener, f.bystander)
        let otherRoomProducer = f.h.connect()
        f.h.declare(otherRoomProducer, [.producer], room: "elsewhere")
        expectOneError(f.h.send(.startSession(peerId: "no-such-peer"), from: bystander), to: bystander, .unknownPeer, mentioning: "no-such-peer")
        expectOneError(f.h.send(.startSession(peerId: consumer), from: bystander), to: bystander, .unknownPeer)
        expectOneError(f.h.send(.startSession(peerId: listener), from: bystander), to: bystander, .unknownPeer)
        expectOneError(f.h.send(.startSession(peerId: bystander), from: bystander), to: bystander, .unknownPeer)
        expectOneError(f.h.send(.startSession(peerId: otherRoomProducer), from: bystander), to: bystander, .unknownPeer)
        expectOneError(f.h.send(.startSession(peerId: String(repeating: "z", count: 5000)), from: bystander), to: bystander, .unknownPeer)
        _ = try f.h.startSession(consumer: bystander, producer: producer)
    }

    @Test func wrongRoles() throws {
        var f = try Fixture()
        let (producer, consumer, bystander, session) = (f.producer, f.consumer, f.bystander, f.session)
        expectOneError(f.h.send(.startSession(peerId: producer), from: producer), to: producer, .wrongRole, mentioning: "producer")
        expectOneError(f.h.declare(bystander, [.producer], role: .viewer), to: bystander, .wrongRole)
        expectOneError(f.h.declare(bystander, [.producer, .consumer], role: .expert), to: bystander, .wrongRole)
        expectOneError(f.h.declare(bystander, [.consumer], role: .publisher), to: bystander, .wrongRole, mentioning: "publisher")
        expectOneError(f.h.declare(bystander, [], role: .publisher), to: bystander, .wrongRole)
        #expect(try f.h.producers(seenBy: bystander) == [producer], "the refused peer did not become a producer")
        f.h.expectRelays(session, from: consumer, to: producer)
    }

    @Test func longClientTextIsQuotedShortInErrors() throws {
        var f = try Fixture()
        let bystander = f.bystander
        let replies = f.h.hub.receive(#"{"type":"\#(String(repeating: "q", count: 10000))"}"#, from: bystander)
        expectOneError(replies, to: bystander, .unknownType)
        #expect((replies.first?.message.errorInfo?.details.count ?? 0) <= 301)
    }

    /// Random mutations of valid messages: never a trap, errors only ever to the sender,
    /// and whatever happens the hub still relays in an unrelated session.
    @Test func fuzzedInputNeverBreaksTheHub() throws {
        var f = try Fixture()
        let (producer, consumer, session) = (f.producer, f.consumer, f.session)
        let fuzzer = f.h.connect()
        let seeds = [
            #"{"type":"setPeerStatus","roles":["listener"],"meta":{"a":[1,2,{"b":null}]},"room":"r"}"#,
            #"{"type":"startSession","peerId":"id1"}"#,
            #"{"type":"peer","sessionId":"id5","sdp":{"type":"offer","sdp":"v=0"}}"#,
            #"{"type":"peer","sessionId":"id5","ice":{"candidate":"c","sdpMLineIndex":0}}"#,
            #"{"type":"endSession","sessionId":"id5"}"#,
            #"{"type":"list"}"#,
        ]
        let alphabet = Array(#"{}[]":,0123456789-.eEtrufalsn\ "#) + ["é", "\u{0}", "\u{FFFF}", "😀"]
        var generator = SplitMix64(seed: 42)
        for round in 0..<3000 {
            var chars = Array(seeds[Int(generator.next() % UInt64(seeds.count))])
            for _ in 0..<(1 + generator.next() % 4) {
                let at = Int(generator.next() % UInt64(chars.count + 1))
                switch generator.next() % 3 {
                case 0 where at < chars.count: chars.remove(at: at)
                case 1: chars.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: at)
                default: if at < chars.count { chars[at] = alphabet[Int(generator.next() % UInt64(alphabet.count))] }
                }
            }
            let replies = f.h.hub.receive(String(chars), from: fuzzer)
            for delivery in replies where delivery.message.errorInfo != nil {
                #expect(delivery.to == fuzzer, "round \(round): error to someone else")
            }
            #expect(!replies.contains { $0.to == producer || $0.to == consumer } || replies.allSatisfy { $0.message.errorInfo == nil },
                    "round \(round)")
        }
        f.h.expectRelays(session, from: consumer, to: producer)
    }
}
