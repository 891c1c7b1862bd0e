import Foundation
import PoseCastKit
import Signaling
import TestSupport
import Testing

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
