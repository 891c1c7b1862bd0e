import Foundation
import Signaling
import TestSupport
import Testing

/// The hub's per-connection message rate limit, with time stepped by hand.
@Suite("Signaling rate limit")
struct RateLimitTests {
    static let list = #"{"type":"list"}"#

    /// Sends `count` `list` messages at `time` and returns how many were refused as rateLimited.
    static func flood(_ hub: inout SignalingHub, _ peer: String, count: Int, at time: Double) -> (listed: Int, limited: Int) {
        var listed = 0, limited = 0
        for _ in 0..<count {
            let out = hub.receive(list, from: peer, at: time)
            #expect(out.count == 1 && out[0].to == peer, "exactly one reply, to the sender")
            switch out.first?.message {
            case .list?: listed += 1
            case .error(_, .rateLimited?, _)?: limited += 1
            default: Issue.record("unexpected reply \(String(describing: out.first))")
            }
        }
        return (listed, limited)
    }

    @Test func burstThenSustainedRate() {
        var hub = SignalingHub(limits: HubLimits(messagesPerSecond: 10, messageBurst: 20), makeID: sequentialIDs())
        let (peer, _) = hub.connect()
        // A full bucket at first: 20 pass, the rest of the burst is refused, each with an error.
        let first = Self.flood(&hub, peer, count: 50, at: 100)
        #expect(first.listed == 20 && first.limited == 30)
        // Half a second later five tokens have come back, not more.
        let later = Self.flood(&hub, peer, count: 10, at: 100.5)
        #expect(later.listed == 5 && later.limited == 5)
        // At exactly the sustained rate (one per 0.1 s) nothing is refused.
        var refused = 0
        for i in 1...100 { refused += Self.flood(&hub, peer, count: 1, at: 100.5 + Double(i) * 0.1).limited }
        #expect(refused == 0)
    }

    @Test func limitIsPerConnectionAndThePeerStaysUsable() {
        var hub = SignalingHub(limits: HubLimits(messagesPerSecond: 1, messageBurst: 3), makeID: sequentialIDs())
        let (a, _) = hub.connect()
        let (b, _) = hub.connect()
        #expect(Self.flood(&hub, a, count: 10, at: 5).limited == 7)
        // Another connection is not affected by a's flood.
        #expect(Self.flood(&hub, b, count: 3, at: 5).limited == 0)
        // a is still connected and served once its bucket refills.
        #expect(Self.flood(&hub, a, count: 1, at: 6.01).listed == 1)
        #expect(hub.peerCount == 2)
    }

    @Test func refusedMessagesAreNotRead() {
        var hub = SignalingHub(limits: HubLimits(messagesPerSecond: 1, messageBurst: 1), makeID: sequentialIDs())
        let (peer, _) = hub.connect()
        let declare = #"{"type":"setPeerStatus","roles":["producer"],"meta":null}"#
        _ = hub.receive(Self.list, from: peer, at: 0)
        let refused = hub.receive(declare, from: peer, at: 0.1)
        #expect(refused.first?.message.errorInfo?.code == .rateLimited)
        // The refused declaration did not happen: a listener sees no producer.
        let (other, _) = hub.connect()
        let listed = hub.receive(Self.list, from: other, at: 0.1)
        guard case .list(let producers)? = listed.first?.message else { Issue.record("no list"); return }
        #expect(producers.isEmpty)
        #expect(refused.first?.message.errorInfo?.details.contains("per second") == true)
    }

    /// A publisher through an SFU sends each session its broadcasts over signaling (several
    /// a second each): with 20 sessions a flat 10 a second would drop most of them.
    @Test func aProducersBudgetGrowsWithItsSessions() throws {
        var h = HubHarness(limits: HubLimits(maxPeersPerRoom: 32, maxSessionsPerProducer: 32, messagesPerSecond: 10, messageBurst: 20))
        let producer = h.connect()
        h.declare(producer, [.producer])
        // Untimed setup (no rate limit): 20 consumers, one session each.
        for _ in 0..<20 {
            let consumer = h.connect()
            h.declare(consumer, [.consumer])
            _ = try h.startSession(consumer: consumer, producer: producer)
        }
        // 20 sessions: a burst of 400, then 200 a second.
        #expect(Self.flood(&h.hub, producer, count: 450, at: 10) == (400, 50))
        #expect(Self.flood(&h.hub, producer, count: 120, at: 10.5) == (100, 20))
        // A consumer's budget is its own, whatever the producer's.
        let lone = h.connect()
        #expect(Self.flood(&h.hub, lone, count: 25, at: 10) == (20, 5))
    }

    @Test func backwardsOrNaNTimeRefillsNothing() {
        var hub = SignalingHub(limits: HubLimits(messagesPerSecond: 100, messageBurst: 2), makeID: sequentialIDs())
        let (peer, _) = hub.connect()
        #expect(Self.flood(&hub, peer, count: 2, at: 50).limited == 0)
        #expect(Self.flood(&hub, peer, count: 1, at: 10).limited == 1)
        #expect(Self.flood(&hub, peer, count: 1, at: .nan).limited == 1)
        #expect(Self.flood(&hub, peer, count: 1, at: 50.02).listed == 1)
    }

    @Test func liveServerRefusesAFloodAndKeepsTheConnection() async throws {
        try await ServerLiveTests.withServer(limits: HubLimits(messagesPerSecond: 5, messageBurst: 10)) { server in
            let client = try await ServerLiveTests.connect(server)
            for _ in 0..<40 { try client.send(.list) }
            var listed = 0, limited = 0
            for _ in 0..<40 {
                switch try await ServerLiveTests.next(client, "a reply to the flood") {
                case .list: listed += 1
                case .error(_, .rateLimited?, _): limited += 1
                case let other: Issue.record("unexpected \(other)")
                }
            }
            // 10 at once plus whatever refilled while they were being sent (5 per second).
            #expect(listed >= 10 && listed <= 15, "listed \(listed)")
            #expect(listed + limited == 40)
            try await Task.sleep(for: .milliseconds(1100))
            try client.send(.list)
            guard case .list = try await ServerLiveTests.next(client, "a list after waiting") else {
                Issue.record("the connection is not usable after the flood"); return
            }
        }
    }
}
