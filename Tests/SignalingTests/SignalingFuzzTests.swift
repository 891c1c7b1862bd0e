import Foundation
import PoseCastKit
import Signaling
import TestSupport
import Testing

/// The hub fed generated and mutated messages from several peers in several states,
/// interleaved with valid traffic. Uses `receive(_:from:)`, which has no rate limit,
/// so no fuzz case is refused for its timing.
@Suite("signaling fuzz")
struct SignalingFuzzTests {
    /// A room with a producer, two experts each in a session with it, a listener and an
    /// undeclared peer; returns the peers and the two session ids.
    static func populate(_ h: inout HubHarness) throws -> (peers: [String], sessions: [String]) {
        let producer = h.connect(), expert1 = h.connect(), expert2 = h.connect(), listener = h.connect(), undeclared = h.connect()
        h.declare(producer, [.producer], meta: .object(["name": .string("camera")]))
        h.declare(expert1, [.consumer], role: .expert)
        h.declare(expert2, [.consumer], role: .expert)
        h.declare(listener, [.listener])
        let s1 = try h.startSession(consumer: expert1, producer: producer)
        let s2 = try h.startSession(consumer: expert2, producer: producer)
        return ([producer, expert1, expert2, listener, undeclared], [s1, s2])
    }

    /// Valid messages in every shape, as the real encoder writes them, naming the real peers and sessions.
    static func seeds(peers: [String], sessions: [String]) -> [ClientMessage] {
        let producer = peers[0]
        let sdp = "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"
            + "a=extmap:1 urn:x-posecast:rtp-hdrext:pose:1\r\na=rtpmap:96 VP8/90000\r\n"
        return [
            .setPeerStatus(PeerStatus(roles: [.producer], meta: .object(["name": .string("cam"), "n": .number(1)]), room: "default", role: .publisher)),
            .setPeerStatus(PeerStatus(roles: [.consumer], meta: .array([.null, .bool(true)]), room: "default", role: .expert, token: "secret")),
            .setPeerStatus(PeerStatus(roles: [.listener, .consumer], peerId: producer, room: "other")),
            .setPeerStatus(PeerStatus(roles: [])),
            .list,
            .startSession(peerId: producer),
            .endSession(sessionId: sessions[0]),
            .peer(PeerMessage(sessionId: sessions[0], payload: .sdp(SignalingSDP(type: "offer", sdp: sdp)))),
            .peer(PeerMessage(sessionId: sessions[1], payload: .sdp(SignalingSDP(type: "answer", sdp: sdp)))),
            .peer(PeerMessage(sessionId: sessions[1], payload: .ice(SignalingICE(candidate: "candidate:1 1 UDP 2015363327 127.0.0.1 40000 typ host", sdpMLineIndex: 0)))),
        ]
    }

    static let words = ["setPeerStatus", "startSession", "endSession", "peer", "list", "producer", "consumer", "listener",
                        "publisher", "expert", "viewer", "offer", "answer", "welcome", "sessionStarted", "error",
                        "sdp", "ice", "candidate", "sdpMLineIndex", "sessionId", "peerId", "roles", "meta", "room", "role", "token"]

    @Test("every invalid message gets exactly one error, to its sender only; valid traffic still pairs after the run")
    func fuzzHub() throws {
        let count = FuzzRun.caseCount(), seed = FuzzRun.seed
        var h = HubHarness()
        var (peers, sessions) = try Self.populate(&h)
        let valid = Self.seeds(peers: peers, sessions: sessions)
        let fuzzer = JSONTextFuzzer(seeds: valid.map(SignalingCodec.encode), extraWords: Self.words + peers + sessions,
                                    maxLength: h.hub.limits.maxMessageBytes + 1024)
        var tally = FuzzTally(harness: "signaling", seed: seed)
        for index in FuzzRun.indices(count: count) {
            var rng = SplitMix64(seed: FuzzRun.caseSeed(seed, index))
            // Every so often the room is rebuilt (peers leave and come back), so the
            // fuzz meets fresh sessions, undeclared peers and producers again.
            if rng.chance(0.002) {
                for peer in peers { _ = h.hub.disconnect(peer) }
                (peers, sessions) = try Self.populate(&h)
            }
            let sender = rng.pick(peers)
            let text: String, kind: String
            if rng.chance(0.1) {
                // Valid traffic interleaved (it may well be refused in the current state).
                text = SignalingCodec.encode(rng.pick(Self.seeds(peers: peers, sessions: sessions))); kind = "valid"
            } else {
                let fuzzCase = fuzzer.make(&rng); text = fuzzCase.text; kind = fuzzCase.kind.rawValue
            }
            let connected = Set(peers)
            let deliveries = h.hub.receive(text, from: sender)
            let errors = deliveries.compactMap(\.message.errorInfo)
            // What the codec alone says: readable, or the code the error must carry.
            let unreadable: SignalingErrorCode?
            if text.utf8.count > h.hub.limits.maxMessageBytes {
                unreadable = .tooLarge
            } else {
                do throws(SignalingDecodeError) { _ = try SignalingCodec.decodeClient(text); unreadable = nil } catch { unreadable = error.code }
            }
            if !deliveries.allSatisfy({ connected.contains($0.to) }) {
                tally.fail(case: index, "delivery to a peer that is not connected: \(deliveries)", input: text)
            } else if let code = unreadable {
                // Unreadable: exactly one error, to the sender, with the codec's code.
                if deliveries.count == 1, deliveries[0].to == sender, errors.first?.code == code {
                    tally.reject(code.rawValue, kind: kind)
                } else {
                    tally.fail(case: index, "unreadable (\(code)) but got \(deliveries)", input: text)
                }
            } else if !errors.isEmpty {
                // Readable but refused in this state: still exactly one error, to the sender.
                if deliveries.count == 1, deliveries[0].to == sender, let code = errors[0].code {
                    tally.reject(code.rawValue, kind: kind)
                } else {
                    tally.fail(case: index, "a refusal that is not one coded error to the sender: \(deliveries)", input: text)
                }
            } else {
                tally.accept(kind: kind)
            }
            if h.hub.peerCount != peers.count { tally.fail(case: index, "peer count changed to \(h.hub.peerCount)", input: text) }
        }
        print(tally.resultLine())
        #expect(tally.failed == 0, "\(tally.failures.joined(separator: "\n"))")
        #expect(tally.cases == FuzzRun.indices(count: count).count)
        if count >= 1000 { #expect(tally.accepted > 0 && tally.rejected > 0, "the generator reaches both outcomes") }

        // A normal exchange still pairs, in a room of its own, on the same hub.
        let producer = h.connect(), expert = h.connect()
        #expect(h.declare(producer, [.producer], room: "after-fuzz").isEmpty)
        #expect(h.declare(expert, [.consumer], room: "after-fuzz", role: .expert).isEmpty)
        #expect(try h.producers(seenBy: expert) == [producer])
        let session = try h.startSession(consumer: expert, producer: producer)
        h.expectRelays(session, from: producer, to: expert)
        h.expectRelays(session, from: expert, to: producer)
        // And the fuzzed peers are still served.
        for peer in peers { #expect(h.hub.receive(#"{"type":"list"}"#, from: peer).count == 1) }
    }
}
