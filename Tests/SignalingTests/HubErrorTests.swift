import Foundation
import PoseCastKit
import Signaling
import TestSupport
import Testing

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
