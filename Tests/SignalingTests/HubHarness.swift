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
