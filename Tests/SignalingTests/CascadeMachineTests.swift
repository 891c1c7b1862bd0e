import Foundation
import SFU
import Signaling
import Testing

/// The cascade's decisions on injected time: which relays are made, taken down and tried
/// again (`CascadeMachine`, no Janus).
@Suite("the cascade of Janus servers (pure)")
struct CascadeMachineTests {
    static let second: UInt64 = 1_000_000_000
    static let video: JSONValue = .object(["type": "video", "mindex": .number(0), "mid": "video0", "codec": "h264"])
    static let feed = CascadeFeed(id: 77, display: "posecast-publisher", streams: [video])
    static func target(_ edgeFeed: UInt64, port: Int = 10000) -> RelayTarget {
        RelayTarget(edgeFeed: edgeFeed, host: "10.0.0.3", port: port, rtcpPort: port + 1)
    }

    /// A machine watching the origin with `feeds`, edges 0 and 1 ready.
    static func watching(_ feeds: [CascadeFeed] = [feed]) -> (CascadeMachine, [CascadeMachine.Effect]) {
        var m = CascadeMachine(remotePrefix: "t")
        var effects = m.handle(.edgeReady(0), now: 0)
        effects += m.handle(.edgeReady(1), now: 0)
        effects += m.handle(.originJoined(feeds), now: 0)
        return (m, effects)
    }

    /// The attempt of each `addRemote`, by edge.
    static func adds(_ effects: [CascadeMachine.Effect]) -> [Int: Int] {
        var out: [Int: Int] = [:]
        for case let .addRemote(edge, _, attempt) in effects { out[edge] = attempt }
        return out
    }

    /// Both edges relaying `feed`: the machine and each edge's remote id.
    static func relaying() -> (CascadeMachine, [Int: String]) {
        var (m, effects) = watching()
        var ids: [Int: String] = [:]
        for (edge, attempt) in adds(effects) {
            let next = m.handle(.remoteAdded(attempt: attempt, target: target(UInt64(500 + edge))), now: 0)
            for case let .publishRemotely(_, _, remoteId, _, a) in next {
                ids[edge] = remoteId
                _ = m.handle(.relayStarted(attempt: a), now: 0)
            }
        }
        return (m, ids)
    }

    @Test("a feed is relayed to every ready edge in two steps: the edge's remote publisher, then the origin's forward to it")
    func twoSteps() throws {
        var (m, effects) = Self.watching()
        let attempts = Self.adds(effects)
        #expect(attempts.keys.sorted() == [0, 1])
        let first = try #require(attempts[0])
        effects = m.handle(.remoteAdded(attempt: first, target: Self.target(501)), now: 0)
        #expect(effects == [.publishRemotely(edge: 0, feed: 77, remoteId: "t-\(first)", target: Self.target(501), attempt: first)])
        effects = m.handle(.relayStarted(attempt: first), now: 0)
        #expect(effects == [.report(.relayStarted(edge: 0, feed: 77, target: Self.target(501)))])
        #expect(m.relaying == 1)
        // Nothing new for a feed published again as it was.
        #expect(m.handle(.published(Self.feed), now: 0).isEmpty)
    }

    @Test("a feed that leaves is taken down on every edge; the origin drops its forwards itself")
    func feedLeaves() {
        var (m, _) = Self.relaying()
        #expect(m.relaying == 2)
        let effects = m.handle(.unpublished(77), now: 0)
        #expect(Set(effects.compactMap { if case .removeRemote(let e, let f) = $0 { "\(e):\(f)" } else { nil } }) == ["0:500", "1:501"])
        #expect(!effects.contains { if case .unpublishRemotely = $0 { true } else { false } })
        #expect(effects.filter { if case .report(.relayEnded) = $0 { true } else { false } }.count == 2)
        #expect(m.relaying == 0)
    }

    @Test("answers that come after their feed left take down what their step made")
    func lateAnswers() throws {
        var (m, effects) = Self.watching()
        let attempts = Self.adds(effects)
        let a0 = try #require(attempts[0]), a1 = try #require(attempts[1])
        effects = m.handle(.remoteAdded(attempt: a1, target: Self.target(601)), now: 0)
        #expect(effects.count == 1)
        _ = m.handle(.unpublished(77), now: 0)
        // Edge 0's remote publisher was being added: removed when it comes.
        #expect(m.handle(.remoteAdded(attempt: a0, target: Self.target(600)), now: 0) == [.removeRemote(edge: 0, edgeFeed: 600)])
        // Edge 1's forward was being started: stopped and its remote publisher removed.
        #expect(m.handle(.relayStarted(attempt: a1), now: 0)
                == [.unpublishRemotely(feed: 77, remoteId: "t-\(a1)"), .removeRemote(edge: 1, edgeFeed: 601)])
        #expect(m.relaying == 0)
    }

    @Test("a failed step is tried again after 1 s, then 2, 4, 8 and at most 10 s; a relay that starts resets the wait")
    func retries() throws {
        var (m, effects) = Self.watching([Self.feed])
        _ = m.handle(.edgeLost(1), now: 0)
        var attempt = try #require(Self.adds(effects)[0])
        var now: UInt64 = 0
        for expected: UInt64 in [1, 2, 4, 8, 10, 10] {
            effects = m.handle(.stepFailed(attempt: attempt, reason: "refused"), now: now)
            #expect(effects.contains(.wake(at: now + expected * Self.second)))
            #expect(effects.contains(.report(.relayFailed(edge: 0, feed: 77, reason: "refused", retryInNanos: expected * Self.second))))
            #expect(m.handle(.tick, now: now + expected * Self.second - 1).isEmpty)
            now += expected * Self.second
            attempt = try #require(Self.adds(m.handle(.tick, now: now))[0])
        }
        // A failure after the remote publisher was added removes it.
        effects = m.handle(.remoteAdded(attempt: attempt, target: Self.target(700)), now: now)
        effects = m.handle(.stepFailed(attempt: attempt, reason: "no forward"), now: now)
        #expect(effects.first == .removeRemote(edge: 0, edgeFeed: 700))
        now += 10 * Self.second
        attempt = try #require(Self.adds(m.handle(.tick, now: now))[0])
        _ = m.handle(.remoteAdded(attempt: attempt, target: Self.target(701)), now: now)
        _ = m.handle(.relayStarted(attempt: attempt), now: now)
        #expect(m.relaying == 1)
        // The next failure waits 1 s again.
        _ = m.handle(.edgeLost(0), now: now)
        attempt = try #require(Self.adds(m.handle(.edgeReady(0), now: now))[0])
        #expect(m.handle(.stepFailed(attempt: attempt, reason: "refused"), now: now).contains(.wake(at: now + Self.second)))
    }

    @Test("a lost edge stops the origin's forwards to it and is relayed to again once it is back")
    func edgeLostAndBack() {
        var (m, ids) = Self.relaying()
        let effects = m.handle(.edgeLost(1), now: 0)
        #expect(effects.contains(.unpublishRemotely(feed: 77, remoteId: ids[1]!)))
        #expect(!effects.contains { if case .removeRemote = $0 { true } else { false } })
        #expect(m.relaying == 1)
        #expect(Self.adds(m.handle(.edgeReady(1), now: 0)).keys.sorted() == [1])
    }

    @Test("a lost origin ends every relay; once it is back the forwards it may still run are stopped and the relays made again")
    func originLostAndBack() {
        var (m, ids) = Self.relaying()
        var effects = m.handle(.originLost, now: 0)
        #expect(Set(effects.compactMap { if case .removeRemote(let e, _) = $0 { e } else { nil } }) == [0, 1])
        #expect(!effects.contains { if case .unpublishRemotely = $0 { true } else { false } })
        #expect(Self.adds(m.handle(.edgeReady(0), now: 0)).isEmpty, "nothing is relayed while the origin is lost")
        effects = m.handle(.originJoined([Self.feed]), now: 0)
        #expect(effects.contains(.unpublishRemotely(feed: 77, remoteId: ids[0]!)))
        #expect(effects.contains(.unpublishRemotely(feed: 77, remoteId: ids[1]!)))
        #expect(Self.adds(effects).keys.sorted() == [0, 1])
        // A feed gone while the origin was lost: nothing to stop.
        var (other, _) = Self.relaying()
        _ = other.handle(.originLost, now: 0)
        #expect(!other.handle(.originJoined([]), now: 0).contains { if case .unpublishRemotely = $0 { true } else { false } })
    }

    @Test("a feed published again with other streams is relayed anew; a feed without video is not relayed")
    func republishedAndAudioOnly() {
        var (m, ids) = Self.relaying()
        let audio: JSONValue = .object(["type": "audio", "mindex": .number(1), "mid": "audio1", "codec": "opus"])
        var changed = Self.feed
        changed.streams.append(audio)
        let effects = m.handle(.published(changed), now: 0)
        #expect(effects.contains(.unpublishRemotely(feed: 77, remoteId: ids[0]!)))
        #expect(effects.contains(.removeRemote(edge: 0, edgeFeed: 500)))
        #expect(Self.adds(effects).keys.sorted() == [0, 1])
        let voiceOnly = CascadeFeed(id: 90, display: "voice", streams: [audio])
        #expect(Self.adds(m.handle(.published(voiceOnly), now: 0)).isEmpty)
        #expect(voiceOnly.videoCodec == nil && Self.feed.videoCodec == "h264")
    }

    @Test("the feeds of Janus's publishers list keep only the stream fields add_remote_publisher takes")
    func feedsOfAList() throws {
        let reply = try #require(JanusReply(text: #"""
            {"janus":"event","plugindata":{"plugin":"janus.plugin.videoroom","data":{"videoroom":"event","room":4,
             "publishers":[{"id":61,"display":"cam","streams":[{"type":"video","mindex":0,"mid":"video0","codec":"h264",
             "h264_profile":"42e01e","talking":false},{"type":"data","mindex":1,"mid":"1"}]},{"display":"no id"}]}}}
            """#))
        let feeds = JanusVideoRoom.feeds(in: reply.pluginData)
        #expect(feeds.count == 1 && feeds[0].id == 61 && feeds[0].display == "cam")
        #expect(feeds[0].streams.first == Self.video)
        #expect(feeds[0].streams.count == 2 && feeds[0].videoCodec == "h264")
    }
}
