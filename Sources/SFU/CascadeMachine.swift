import Signaling

/// A feed published in the origin's room, as the cascade relays it.
public struct CascadeFeed: Sendable, Equatable {
    /// Its id in the origin's room.
    public var id: UInt64
    public var display: String
    /// Its streams as `add_remote_publisher` takes them (type, mindex, mid, codec).
    public var streams: [JSONValue]

    public init(id: UInt64, display: String, streams: [JSONValue]) {
        self.id = id
        self.display = display
        self.streams = streams
    }

    /// The codec of its video stream (the edge's room is made for it).
    public var videoCodec: String? {
        streams.first { $0["type"]?.stringValue == "video" && $0["disabled"]?.boolValue != true }?["codec"]?.stringValue
    }
}

/// Where an edge takes a relayed feed: `add_remote_publisher`'s answer.
public struct RelayTarget: Sendable, Equatable {
    /// The remote publisher's id in the edge's room (the edge picks it: an id of our own
    /// could name a remote publisher of an earlier try that a late clean-up then removes).
    public var edgeFeed: UInt64
    public var host: String
    public var port: Int
    public var rtcpPort: Int

    public init(edgeFeed: UInt64, host: String, port: Int, rtcpPort: Int) {
        self.edgeFeed = edgeFeed
        self.host = host
        self.port = port
        self.rtcpPort = rtcpPort
    }
}

/// The cascade of one room, as a pure state machine: every feed published in the origin's
/// room relayed to the same room on every edge that is up (Janus's remote publishers).
///
/// A relay is made in two steps, each an effect the runner carries out and answers with
/// an event naming its attempt: `add_remote_publisher` on the edge (where it listens),
/// then `publish_remotely` on the origin (which starts sending there). A failed step is
/// tried again after a wait that doubles with each failure in a row (1 s up to 10 s).
/// A feed that leaves, or an edge or the origin that is lost, ends its relays: what was
/// made is taken down where the server is still there to be told. An answer to an attempt
/// that is no longer the pair's (its feed left while the step ran) takes down what that
/// step made, so nothing made by a late answer stays on a server.
public struct CascadeMachine: Sendable {
    public enum Event: Sendable, Equatable {
        /// Watching the origin's room: the feeds published in it now.
        case originJoined([CascadeFeed])
        /// The connection to the origin is gone, or its room was destroyed.
        case originLost
        /// A feed was published in the origin's room (or published again with other streams).
        case published(CascadeFeed)
        /// A feed left the origin's room.
        case unpublished(UInt64)
        /// An edge is connected and its room holds no relay of ours.
        case edgeReady(Int)
        /// The connection to an edge is gone.
        case edgeLost(Int)
        /// `add_remote_publisher` of `attempt` succeeded.
        case remoteAdded(attempt: Int, target: RelayTarget)
        /// `publish_remotely` of `attempt` succeeded: the origin sends to the edge.
        case relayStarted(attempt: Int)
        /// A step of `attempt` failed.
        case stepFailed(attempt: Int, reason: String)
        /// A wake asked for arrived.
        case tick
    }

    public enum Effect: Sendable, Equatable {
        /// On the edge: its room made for the feed's codec when missing, a remote publisher added.
        case addRemote(edge: Int, feed: CascadeFeed, attempt: Int)
        /// On the origin: the feed forwarded to the edge's remote publisher.
        case publishRemotely(edge: Int, feed: UInt64, remoteId: String, target: RelayTarget, attempt: Int)
        /// On the origin: a forward stopped (a failure here is only logged: the feed may be gone).
        case unpublishRemotely(feed: UInt64, remoteId: String)
        /// On the edge: a remote publisher removed (a failure is only logged).
        case removeRemote(edge: Int, edgeFeed: UInt64)
        /// Send `.tick` at this time (nanoseconds of `MonotonicClock`).
        case wake(at: UInt64)
        case report(Report)
    }

    /// What the cascade tells its operator.
    public enum Report: Sendable, Equatable {
        case relayStarted(edge: Int, feed: UInt64, target: RelayTarget)
        case relayEnded(edge: Int, feed: UInt64, reason: String)
        case relayFailed(edge: Int, feed: UInt64, reason: String, retryInNanos: UInt64)
    }

    struct Pair: Hashable { var edge: Int; var feed: UInt64 }

    enum Relay: Equatable {
        case adding(attempt: Int)
        case publishing(attempt: Int, target: RelayTarget, remoteId: String)
        case relaying(target: RelayTarget, remoteId: String)
        case waiting(until: UInt64)
    }

    /// A step in flight: enough to take down what it made if its answer comes late.
    struct Attempt { var pair: Pair; var target: RelayTarget?; var remoteId: String? }

    /// The wait before a failed step is tried again.
    public static let stepBackoff = RetryBackoff(initial: .seconds(1), maximum: .seconds(10))

    private(set) var feeds: [UInt64: CascadeFeed] = [:]
    private(set) var originUp = false
    private(set) var readyEdges: Set<Int> = []
    private(set) var relays: [Pair: Relay] = [:]
    private var failures: [Pair: Int] = [:]
    private var attempts: [Int: Attempt] = [:]
    private var nextAttempt = 1
    /// Forwards the origin may still run that could not be stopped while it was lost
    /// (our connection to it dropped, Janus itself maybe not): stopped once it is back.
    private var unstopped: [(feed: UInt64, remoteId: String)] = []
    /// Remote ids name the attempt, so a forward of an earlier attempt never shares one.
    private let remotePrefix: String

    public init(remotePrefix: String = "posecast-cascade") { self.remotePrefix = remotePrefix }

    /// The relays running now, for status lines.
    public var relaying: Int { relays.values.count { if case .relaying = $0 { true } else { false } } }

    public mutating func handle(_ event: Event, now: UInt64) -> [Effect] {
        var effects: [Effect] = []
        switch event {
        case .originJoined(let list):
            originUp = true
            let fresh = Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
            for (id, known) in feeds where fresh[id] != known {
                if fresh[id] == nil {
                    end(feed: id, reason: "left the origin's room", feedStays: false, into: &effects)
                } else {
                    end(feed: id, reason: "published again with other streams", into: &effects)
                }
            }
            for forward in unstopped where fresh[forward.feed] != nil {
                effects.append(.unpublishRemotely(feed: forward.feed, remoteId: forward.remoteId))
            }
            unstopped = []
            feeds = fresh
        case .originLost:
            originUp = false
            for id in Array(feeds.keys) { end(feed: id, reason: "the origin was lost", into: &effects) }
            feeds = [:]
        case .published(let feed):
            if let known = feeds[feed.id], known == feed { break }
            if feeds[feed.id] != nil { end(feed: feed.id, reason: "published again with other streams", into: &effects) }
            feeds[feed.id] = feed
        case .unpublished(let id):
            guard feeds.removeValue(forKey: id) != nil else { break }
            end(feed: id, reason: "left the origin's room", feedStays: false, into: &effects)
        case .edgeReady(let edge):
            readyEdges.insert(edge)
            for pair in failures.keys where pair.edge == edge { failures[pair] = nil }
        case .edgeLost(let edge):
            readyEdges.remove(edge)
            for (pair, relay) in relays where pair.edge == edge {
                relays[pair] = nil
                if case .relaying(_, let remoteId) = relay {
                    if originUp { effects.append(.unpublishRemotely(feed: pair.feed, remoteId: remoteId)) }
                    effects.append(.report(.relayEnded(edge: edge, feed: pair.feed, reason: "the edge was lost")))
                }
            }
        case let .remoteAdded(attempt, target):
            guard var step = attempts[attempt] else { break }
            let remoteId = "\(remotePrefix)-\(attempt)"
            step.target = target
            if relays[step.pair] == .adding(attempt: attempt) {
                step.remoteId = remoteId
                attempts[attempt] = step
                relays[step.pair] = .publishing(attempt: attempt, target: target, remoteId: remoteId)
                effects.append(.publishRemotely(edge: step.pair.edge, feed: step.pair.feed, remoteId: remoteId,
                                                target: target, attempt: attempt))
            } else {
                attempts[attempt] = nil
                effects.append(.removeRemote(edge: step.pair.edge, edgeFeed: target.edgeFeed))
            }
        case .relayStarted(let attempt):
            guard let step = attempts.removeValue(forKey: attempt), let target = step.target,
                  let remoteId = step.remoteId else { break }
            if case .publishing(attempt, _, _) = relays[step.pair] {
                relays[step.pair] = .relaying(target: target, remoteId: remoteId)
                failures[step.pair] = nil
                effects.append(.report(.relayStarted(edge: step.pair.edge, feed: step.pair.feed, target: target)))
            } else {
                if originUp {
                    effects.append(.unpublishRemotely(feed: step.pair.feed, remoteId: remoteId))
                } else {
                    unstopped.append((step.pair.feed, remoteId))
                }
                effects.append(.removeRemote(edge: step.pair.edge, edgeFeed: target.edgeFeed))
            }
        case let .stepFailed(attempt, reason):
            guard let step = attempts.removeValue(forKey: attempt) else { break }
            if let target = step.target { effects.append(.removeRemote(edge: step.pair.edge, edgeFeed: target.edgeFeed)) }
            guard let relay = relays[step.pair], relay.attempt == attempt else { break }
            let count = (failures[step.pair] ?? 0) + 1
            failures[step.pair] = count
            let wait = RetryBackoff.nanos(Self.stepBackoff.delay(afterRefusals: count))
            relays[step.pair] = .waiting(until: now + wait)
            effects.append(.report(.relayFailed(edge: step.pair.edge, feed: step.pair.feed, reason: reason, retryInNanos: wait)))
            effects.append(.wake(at: now + wait))
        case .tick:
            for (pair, relay) in relays {
                if case .waiting(let until) = relay, until <= now { relays[pair] = nil }
            }
        }
        start(into: &effects)
        return effects
    }

    /// Starts a relay for every feed and ready edge that has none.
    private mutating func start(into effects: inout [Effect]) {
        guard originUp else { return }
        for feed in feeds.values.sorted(by: { $0.id < $1.id }) where feed.videoCodec != nil {
            for edge in readyEdges.sorted() where relays[Pair(edge: edge, feed: feed.id)] == nil {
                let attempt = nextAttempt
                nextAttempt += 1
                let pair = Pair(edge: edge, feed: feed.id)
                attempts[attempt] = Attempt(pair: pair)
                relays[pair] = .adding(attempt: attempt)
                effects.append(.addRemote(edge: edge, feed: feed, attempt: attempt))
            }
        }
    }

    /// Ends every relay of a feed: a running one is taken down on both sides (the origin's
    /// forward only when the feed stays: Janus drops a leaving publisher's forwards
    /// itself); one in flight is taken down when its step answers (it is no longer the pair's).
    private mutating func end(feed id: UInt64, reason: String, feedStays: Bool = true, into effects: inout [Effect]) {
        for (pair, relay) in relays where pair.feed == id {
            relays[pair] = nil
            failures[pair] = nil
            guard case let .relaying(target, remoteId) = relay else { continue }
            if feedStays {
                if originUp {
                    effects.append(.unpublishRemotely(feed: id, remoteId: remoteId))
                } else {
                    unstopped.append((id, remoteId))
                }
            }
            if readyEdges.contains(pair.edge) { effects.append(.removeRemote(edge: pair.edge, edgeFeed: target.edgeFeed)) }
            effects.append(.report(.relayEnded(edge: pair.edge, feed: id, reason: reason)))
        }
    }
}

extension CascadeMachine.Relay {
    /// The attempt in flight, if any.
    var attempt: Int? {
        switch self {
        case .adding(let a), .publishing(let a, _, _): a
        case .relaying, .waiting: nil
        }
    }
}
