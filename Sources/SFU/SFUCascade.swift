import Foundation
import Logging
import PoseCastKit
import Signaling
import Synchronization

/// Where a cascade runs: the origin Janus the publisher publishes into, the edges that
/// relay its feeds to their own subscribers, and the room.
public struct SFUCascadeConfig: Sendable {
    /// The origin's WebSocket API (`ws://HOST:8188/`).
    public var origin: String
    /// Each edge's WebSocket API. An edge's remote publishers listen on its URL's host
    /// when that is an IP address (the origin sends there), on all its addresses otherwise.
    public var edges: [String]
    public var room: UInt64
    /// The wait before connecting again to a server that was lost or refused; from the
    /// fifth failure in a row it doubles with each, up to `maxReconnectDelay`.
    public var reconnectDelay: Duration = .seconds(1)
    public var maxReconnectDelay: Duration = .seconds(10)
    /// How often to look whether the origin's room exists yet: Janus tells no one when a
    /// room is made (its publisher makes it when it first publishes).
    public var roomLookInterval: Duration = .seconds(1)

    public init(origin: String, edges: [String], room: UInt64) {
        self.origin = origin
        self.edges = edges
        self.room = room
    }
}

/// What the cascade tells its operator.
public enum SFUCascadeNotice: Sendable, Equatable {
    case waitingForRoom(url: String)
    case watching(url: String, feeds: Int)
    case originLost(url: String, reason: String)
    case edgeReady(edge: Int, url: String, removedStale: Int)
    case edgeLost(edge: Int, url: String, reason: String)
    case relay(CascadeMachine.Report)
    /// Taking down a forward or a remote publisher failed (the server or the feed may be gone).
    case cleanupFailed(what: String, reason: String)
}

/// Runs a `CascadeMachine` for one room against real Janus servers: one task keeps the
/// watch on the origin's room, one keeps each edge's connection; the machine's effects go
/// to the queue of the server they are for, and each queue is carried out in order by its
/// own task, so the two steps of a relay and its clean-up never overtake each other. All
/// of these tasks belong to `run` and end when it is cancelled.
public final class SFUCascade: Sendable {
    public let config: SFUCascadeConfig
    public let notices: AsyncStream<SFUCascadeNotice>
    private let notify: AsyncStream<SFUCascadeNotice>.Continuation
    private let logger: Logger
    private let wakes = WakeTimer()
    /// Failed connections in a row to a server tried again after `reconnectDelay` before the wait doubles.
    static let quickRetries = 5

    private struct State {
        var machine: CascadeMachine
        var origin: JanusHandle?
        var edges: [Int: JanusHandle] = [:]
    }
    private let state: Mutex<State>
    /// Effects for the origin, and for each edge, in the order the machine gave them.
    private let originQueue: (stream: AsyncStream<CascadeMachine.Effect>, continuation: AsyncStream<CascadeMachine.Effect>.Continuation)
    private let edgeQueues: [(stream: AsyncStream<CascadeMachine.Effect>, continuation: AsyncStream<CascadeMachine.Effect>.Continuation)]

    public init(config: SFUCascadeConfig, logger: Logger) {
        self.config = config
        self.logger = logger
        (notices, notify) = AsyncStream.makeStream(of: SFUCascadeNotice.self)
        // A prefix of this process's own: forwards left by an earlier run of the cascade
        // keep their ids, and Janus would refuse a new one under the same id.
        let prefix = "posecast-cascade-\(String(UInt32.random(in: .min ... .max), radix: 16))"
        state = Mutex(State(machine: CascadeMachine(remotePrefix: prefix)))
        originQueue = AsyncStream.makeStream(of: CascadeMachine.Effect.self)
        edgeQueues = config.edges.map { _ in AsyncStream.makeStream(of: CascadeMachine.Effect.self) }
        wakes.arm { [weak self] in self?.feed(.tick) }
    }

    /// Runs until cancelled.
    public func run() async {
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.watchOrigin() }
                group.addTask { await self.carryOut(self.originQueue.stream) }
                for edge in config.edges.indices {
                    group.addTask { await self.keep(edge: edge) }
                    group.addTask { await self.carryOut(self.edgeQueues[edge].stream) }
                }
            }
        } onCancel: {
            originQueue.continuation.finish()
            for q in edgeQueues { q.continuation.finish() }
        }
        wakes.stop()
        notify.finish()
    }

    /// The relays running now.
    public var relaying: Int { state.withLock { $0.machine.relaying } }

    // MARK: - the machine

    private func feed(_ event: CascadeMachine.Event) {
        state.withLock { s in
            let effects = s.machine.handle(event, now: MonotonicClock.nanos())
            // Queued under the lock so that effects of events handled one after the other
            // keep their order in each queue (yielding never blocks).
            for effect in effects {
                switch effect {
                case .addRemote(let edge, _, _), .removeRemote(let edge, _): edgeQueues[edge].continuation.yield(effect)
                case .publishRemotely, .unpublishRemotely: originQueue.continuation.yield(effect)
                case .wake(let at): wakes.schedule(at: at)
                case .report(let report): notify.yield(.relay(report))
                }
            }
        }
    }

    private func carryOut(_ queue: AsyncStream<CascadeMachine.Effect>) async {
        for await effect in queue {
            switch effect {
            case let .addRemote(edge, feed, attempt):
                do throws(JanusError) {
                    let target = try await addRemote(edge: edge, feed: feed)
                    self.feed(.remoteAdded(attempt: attempt, target: target))
                } catch {
                    self.feed(.stepFailed(attempt: attempt, reason: "\(config.edges[edge]): \(error)"))
                }
            case let .publishRemotely(_, feed, remoteId, target, attempt):
                do throws(JanusError) {
                    guard let origin = state.withLock({ $0.origin }) else { throw .closed }
                    try await JanusVideoRoom.publishRemotely(room: config.room, feed: feed, remoteId: remoteId, target: target, on: origin)
                    self.feed(.relayStarted(attempt: attempt))
                } catch {
                    self.feed(.stepFailed(attempt: attempt, reason: "\(config.origin): \(error)"))
                }
            case let .unpublishRemotely(feed, remoteId):
                do throws(JanusError) {
                    guard let origin = state.withLock({ $0.origin }) else { throw .closed }
                    try await JanusVideoRoom.unpublishRemotely(room: config.room, feed: feed, remoteId: remoteId, on: origin)
                } catch {
                    notify.yield(.cleanupFailed(what: "stopping forward \(remoteId) of feed \(feed) on \(config.origin)", reason: "\(error)"))
                }
            case let .removeRemote(edge, edgeFeed):
                do throws(JanusError) {
                    guard let handle = state.withLock({ $0.edges[edge] }) else { throw .closed }
                    try await JanusVideoRoom.removeRemotePublisher(room: config.room, id: edgeFeed, on: handle)
                } catch {
                    notify.yield(.cleanupFailed(what: "removing remote publisher \(edgeFeed) on \(config.edges[edge])", reason: "\(error)"))
                }
            case .wake, .report:
                break
            }
        }
    }

    private func addRemote(edge: Int, feed: CascadeFeed) async throws(JanusError) -> RelayTarget {
        guard let handle = state.withLock({ $0.edges[edge] }) else { throw .closed }
        guard let codec = feed.videoCodec else { throw .unexpected(request: "add_remote_publisher", reply: "a feed without video") }
        try await JanusVideoRoom.ensureRelayRoom(.init(room: config.room, videoCodec: codec), on: handle)
        let host = Self.host(of: config.edges[edge])
        let iface = host.flatMap { IPv4Address.isLiteral($0) ? $0 : nil }
        let added = try await JanusVideoRoom.addRemotePublisher(room: config.room, feed: feed, iface: iface, on: handle)
        guard let address = added.ip ?? host else { throw .invalidURL(config.edges[edge]) }
        return RelayTarget(edgeFeed: added.edgeFeed, host: address, port: added.port, rtcpPort: added.rtcpPort)
    }

    static func host(of url: String) -> String? {
        URLComponents(string: url)?.host.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "[]")) }
    }

    // MARK: - connections

    /// The wait before connecting again after `failures` failed connections in a row (0:
    /// the connection was up and went): `reconnectDelay` for the first tries (a restarting
    /// Janus listens about a second after its start, and its subscribers wait for the
    /// relay), then doubling up to `maxReconnectDelay`.
    private func reconnectDelay(afterFailures failures: Int) -> Duration {
        guard failures >= Self.quickRetries else { return config.reconnectDelay }
        return RetryBackoff(initial: config.reconnectDelay, maximum: config.maxReconnectDelay)
            .delay(afterRefusals: failures - Self.quickRetries + 2)
    }

    /// Watches the origin's room for as long as `run` runs: connect, wait for the room,
    /// join it without publishing, and hand its publishers' comings and goings to the machine.
    private func watchOrigin() async {
        var failures = 0
        while !Task.isCancelled {
            let (reason, watched) = await watchOriginOnce()
            state.withLock { $0.origin = nil }
            if watched { feed(.originLost) }
            guard !Task.isCancelled else { return }
            notify.yield(.originLost(url: config.origin, reason: reason))
            failures = watched ? 0 : failures + 1
            try? await Task.sleep(for: reconnectDelay(afterFailures: failures))
        }
    }

    /// One connection to the origin: why it ended, and whether it got as far as watching.
    private func watchOriginOnce() async -> (String, Bool) {
        let client: JanusClient
        do throws(JanusError) { client = try await JanusClient.connect(url: config.origin, logger: logger) } catch {
            return ("\(error)", false)
        }
        defer { client.close() }
        do throws(JanusError) {
            let handle = try await client.attach(plugin: JanusVideoRoom.plugin)
            var told = false
            while try await JanusVideoRoom.roomCodec(config.room, on: handle) == nil {
                if !told { notify.yield(.waitingForRoom(url: config.origin)); told = true }
                try? await Task.sleep(for: config.roomLookInterval)
                if Task.isCancelled { return ("stopped", false) }
            }
            let (me, feeds) = try await JanusVideoRoom.watch(room: config.room, display: "posecast-cascade", on: handle)
            state.withLock { $0.origin = handle }
            feed(.originJoined(feeds))
            notify.yield(.watching(url: config.origin, feeds: feeds.count))
            for await event in handle.events {
                guard let data = event.pluginData else {
                    if event.verb == "detached" { return ("Janus detached our handle", true) }
                    continue
                }
                if data["videoroom"]?.stringValue == "destroyed" { return ("the room was destroyed", true) }
                for published in JanusVideoRoom.feeds(in: data) where published.id != me { feed(.published(published)) }
                for id in JanusVideoRoom.gone(in: data, except: me) { feed(.unpublished(id)) }
            }
            return (Task.isCancelled ? "stopped" : "the connection to Janus closed", true)
        } catch {
            return ("\(error)", state.withLock { $0.origin != nil })
        }
    }

    /// Keeps one edge connected for as long as `run` runs; each connection starts by
    /// removing the remote publishers its room holds (an earlier run's, or ours from
    /// before a lost connection), so the machine starts it empty.
    private func keep(edge: Int) async {
        let url = config.edges[edge]
        var failures = 0
        while !Task.isCancelled {
            var ready = false
            let reason: String
            do throws(JanusError) {
                let client = try await JanusClient.connect(url: url, logger: logger)
                defer { client.close() }
                let handle = try await client.attach(plugin: JanusVideoRoom.plugin)
                let stale = try await JanusVideoRoom.remotePublishers(room: config.room, on: handle)
                for id in stale { try await JanusVideoRoom.removeRemotePublisher(room: config.room, id: id, on: handle) }
                state.withLock { $0.edges[edge] = handle }
                ready = true
                feed(.edgeReady(edge))
                notify.yield(.edgeReady(edge: edge, url: url, removedStale: stale.count))
                for await _ in handle.events {}
                reason = Task.isCancelled ? "stopped" : "the connection to Janus closed"
            } catch {
                reason = "\(error)"
            }
            state.withLock { $0.edges[edge] = nil }
            if ready { feed(.edgeLost(edge)) }
            guard !Task.isCancelled else { return }
            notify.yield(.edgeLost(edge: edge, url: url, reason: reason))
            failures = ready ? 0 : failures + 1
            try? await Task.sleep(for: reconnectDelay(afterFailures: failures))
        }
    }
}

/// Whether a host is written as an IPv4 address (Janus binds a remote publisher to it).
enum IPv4Address {
    static func isLiteral(_ host: String) -> Bool {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }
}
