import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import Signaling
import Synchronization

/// Why talking to Janus failed.
public enum JanusError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The connection to Janus is gone or never came (worth trying again as it is);
    /// otherwise Janus refused, or answered what we cannot use.
    public var isConnectionLost: Bool {
        switch self {
        case .connectFailed, .timedOut, .closed: true
        case .refused, .unexpected, .invalidURL: false
        }
    }

    /// Not a `ws://` or `wss://` URL.
    case invalidURL(String)
    /// No WebSocket (refused, unreachable, not Janus's `janus-protocol`).
    case connectFailed(url: String, reason: String)
    /// Janus or its plugin answered `request` with an error.
    case refused(request: String, code: Int, reason: String)
    /// No answer to `request` within the time limit.
    case timedOut(request: String)
    /// An answer without what it must hold.
    case unexpected(request: String, reply: String)
    /// The connection is gone.
    case closed

    /// The VideoRoom plugin's error code for a room that does not exist.
    public static let noSuchRoom = 426

    public var description: String {
        switch self {
        case .invalidURL(let url): "not a ws:// or wss:// Janus URL: \(url)"
        case let .connectFailed(url, reason): "could not reach Janus at \(url): \(reason)"
        case let .refused(request, code, reason): "Janus refused \(request): \(reason) (error \(code))"
        case .timedOut(let request): "Janus did not answer \(request) within \(Int(JanusClient.replyTimeout.components.seconds)) s"
        case let .unexpected(request, reply): "Janus answered \(request) with \(reply)"
        case .closed: "the connection to Janus is closed"
        }
    }
}

/// One Janus session over its WebSocket transport (subprotocol `janus-protocol`).
///
/// A task runs the socket: a writer drains the queue, a reader routes each reply to the
/// transaction waiting for it (`success`/`error`, or an `ack` then the plugin's `event`)
/// and every other message (`webrtcup`, `media`, `hangup`, plugin events without a
/// transaction …) to its handle's `events`. A keepalive goes every 25 s (Janus drops a
/// session after 60 s of silence). `close()` destroys the session and ends the socket.
public final class JanusClient: Sendable {
    public let url: String
    /// The session Janus made for us.
    public let sessionId: UInt64
    /// Everything not waited for, by handle (`sender`), and the socket's end (`.closed`).
    private let core: Core
    private let outgoing: AsyncStream<String>.Continuation
    private let logger: Logger
    static let replyTimeout: Duration = .seconds(10)
    static let keepaliveInterval: Duration = .seconds(25)

    /// What the socket task and every copy of the client share.
    private final class Core: Sendable {
        let state = Mutex(State())
    }

    private struct State {
        var waiting: [String: Waiter] = [:]
        var handles: [UInt64: AsyncStream<JanusReply>.Continuation] = [:]
        var next = 0
        var closed = false
    }

    private struct Waiter {
        /// The plugin's answer comes as an `event` after an `ack` (asynchronous requests).
        var untilEvent: Bool
        var continuation: CheckedContinuation<JanusReply, Never>
    }

    private init(url: String, sessionId: UInt64, core: Core, outgoing: AsyncStream<String>.Continuation, logger: Logger) {
        self.url = url
        self.sessionId = sessionId
        self.core = core
        self.outgoing = outgoing
        self.logger = logger
    }

    /// Connects and creates a session.
    public static func connect(url: String, logger: Logger) async throws(JanusError) -> JanusClient {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme == "ws" || scheme == "wss", components.host?.isEmpty == false else { throw .invalidURL(url) }
        let core = Core()
        let (queue, outgoing) = AsyncStream.makeStream(of: String.self)
        let (opened, open) = AsyncStream.makeStream(of: String?.self)
        Task {
            var headers = HTTPFields()
            headers[HTTPField.Name("Sec-WebSocket-Protocol")!] = "janus-protocol"
            let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20, additionalHeaders: headers)
            do {
                try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { inbound, outbound, _ in
                    open.yield(nil)
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await text in queue {
                                do { try await outbound.write(.text(text)) } catch { return }
                            }
                            try? await outbound.close(.normalClosure, reason: nil)
                        }
                        group.addTask {
                            do {
                                for try await frame in inbound.messages(maxSize: 1 << 20) {
                                    guard case .text(let text) = frame else { continue }
                                    guard let reply = JanusReply(text: text) else {
                                        logger.warning("ignoring an unreadable message from Janus", metadata: ["text": "\(text.prefix(200))"])
                                        continue
                                    }
                                    route(reply, core: core, logger: logger)
                                }
                            } catch {
                                logger.debug("Janus read ended", metadata: ["error": "\(error)"])
                            }
                        }
                        await group.next()
                        group.cancelAll()
                    }
                }
                open.yield("the server closed the connection")
            } catch {
                open.yield("\(error)")
            }
            outgoing.finish()
            finishAll(core)
            open.finish()
        }
        var failure: String? = "the connection ended"
        for await result in opened { failure = result as String?; break }
        if let failure { throw .connectFailed(url: url, reason: failure) }
        let provisional = JanusClient(url: url, sessionId: 0, core: core, outgoing: outgoing, logger: logger)
        let id: UInt64
        do throws(JanusError) {
            let created = try await provisional.call("create", session: nil)
            guard let made = created.data?["id"]?.uint64Value else { throw .unexpected(request: "create", reply: created.verb) }
            id = made
        } catch {
            outgoing.finish()   // no session: the socket goes
            throw error
        }
        let client = JanusClient(url: url, sessionId: id, core: core, outgoing: outgoing, logger: logger)
        client.startKeepalive()
        return client
    }

    /// Attaches a plugin (`janus.plugin.videoroom`): a handle and its event stream.
    public func attach(plugin: String) async throws(JanusError) -> JanusHandle {
        let reply = try await call("attach", session: sessionId, fields: ["plugin": .string(plugin)])
        guard let id = reply.data?["id"]?.uint64Value else { throw .unexpected(request: "attach", reply: reply.verb) }
        let (events, continuation) = AsyncStream.makeStream(of: JanusReply.self)
        let closed = core.state.withLock { s in
            if !s.closed { s.handles[id] = continuation }
            return s.closed
        }
        if closed { continuation.finish() }
        return JanusHandle(client: self, id: id, events: events)
    }

    /// Destroys the session and closes the socket.
    public func close() {
        let first = core.state.withLock { s in defer { s.closed = true }; return !s.closed }
        if first { send(JanusMessage.request("destroy", transaction: newTransaction(), session: sessionId)) }
        outgoing.finish()
    }

    // MARK: - transactions

    func newTransaction() -> String {
        core.state.withLock { s in s.next += 1; return "pc\(s.next)" }
    }

    func send(_ text: String) { outgoing.yield(text) }

    /// A synchronous request: its `success` (or `error`, thrown).
    func call(_ verb: String, session: UInt64?, handle: UInt64? = nil, fields: [String: JSONValue] = [:]) async throws(JanusError) -> JanusReply {
        let transaction = newTransaction()
        let reply = await exchange(JanusMessage.request(verb, transaction: transaction, session: session, handle: handle, fields: fields),
                                   transaction: transaction, untilEvent: false)
        return try Self.check(reply, request: verb)
    }

    /// Sends `text` and waits for the reply to `transaction` (the `event` after an `ack`
    /// when `untilEvent`); a `closed` reply when the socket ends, a `timeout` one after 10 s.
    func exchange(_ text: String, transaction: String, untilEvent: Bool) async -> JanusReply {
        let timeout = Task { [core] in
            try? await Task.sleep(for: Self.replyTimeout)
            let waiter = core.state.withLock { $0.waiting.removeValue(forKey: transaction) }
            waiter?.continuation.resume(returning: JanusReply.local("timeout", transaction: transaction))
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { continuation in
            let closed = core.state.withLock { s in
                if !s.closed { s.waiting[transaction] = Waiter(untilEvent: untilEvent, continuation: continuation) }
                return s.closed
            }
            if closed { continuation.resume(returning: JanusReply.local("closed", transaction: transaction)); return }
            if case .terminated = outgoing.yield(text) {
                let waiter = core.state.withLock { $0.waiting.removeValue(forKey: transaction) }
                waiter?.continuation.resume(returning: JanusReply.local("closed", transaction: transaction))
            }
        }
    }

    static func check(_ reply: JanusReply, request: String) throws(JanusError) -> JanusReply {
        switch reply.verb {
        case "closed": throw .closed
        case "timeout": throw .timedOut(request: request)
        default: break
        }
        if let error = reply.error { throw .refused(request: request, code: error.code, reason: error.reason) }
        return reply
    }

    private static func route(_ reply: JanusReply, core: Core, logger: Logger) {
        if reply.verb == "ack" {
            // An asynchronous request's first answer: keep waiting for its event.
            let done = core.state.withLock { s -> Waiter? in
                guard let t = reply.transaction, let w = s.waiting[t], !w.untilEvent else { return nil }
                return s.waiting.removeValue(forKey: t)
            }
            done?.continuation.resume(returning: reply)
            return
        }
        if let t = reply.transaction, let waiter = core.state.withLock({ $0.waiting.removeValue(forKey: t) }) {
            waiter.continuation.resume(returning: reply)
            return
        }
        if let sender = reply.sender, let handle = core.state.withLock({ $0.handles[sender] }) {
            handle.yield(reply)
            if reply.verb == "detached" { handle.finish() }
            return
        }
        logger.debug("a Janus message for no one", metadata: ["verb": "\(reply.verb)"])
    }

    private static func finishAll(_ core: Core) {
        let (waiting, handles) = core.state.withLock { s in
            s.closed = true
            defer { s.waiting = [:]; s.handles = [:] }
            return (s.waiting, s.handles)
        }
        for (t, w) in waiting { w.continuation.resume(returning: JanusReply.local("closed", transaction: t)) }
        for h in handles.values { h.finish() }
    }

    private func startKeepalive() {
        Task { [weak self] in
            while true {
                try? await Task.sleep(for: Self.keepaliveInterval)
                guard let self else { return }
                if self.core.state.withLock({ $0.closed }) { return }
                let transaction = self.newTransaction()
                let reply = await self.exchange(JanusMessage.request("keepalive", transaction: transaction, session: self.sessionId),
                                                transaction: transaction, untilEvent: false)
                if reply.verb == "closed" { return }
                if let error = reply.error { self.logger.warning("Janus refused a keepalive: \(error.reason)") }
            }
        }
    }
}

/// A plugin handle: plugin requests, JSEP, trickle, and the handle's own events.
public final class JanusHandle: Sendable {
    public let id: UInt64
    /// Events about this handle that no request waited for; finishes with the session.
    public let events: AsyncStream<JanusReply>
    private let client: JanusClient

    init(client: JanusClient, id: UInt64, events: AsyncStream<JanusReply>) {
        self.client = client
        self.id = id
        self.events = events
    }

    /// A synchronous plugin request (`create`, `exists`, `listparticipants` …): the plugin's data.
    public func request(_ body: [String: JSONValue]) async throws(JanusError) -> JSONValue {
        let name = body["request"]?.stringValue ?? "message"
        let transaction = client.newTransaction()
        let reply = try JanusClient.check(await client.exchange(
            JanusMessage.message(transaction: transaction, session: client.sessionId, handle: id, body: body),
            transaction: transaction, untilEvent: false), request: name)
        guard let data = reply.pluginData else { throw .unexpected(request: name, reply: reply.verb) }
        return data
    }

    /// An asynchronous plugin request (`join`, `publish`, `start` …), with a JSEP when
    /// negotiating: the plugin's event that answers it.
    public func message(_ body: [String: JSONValue], jsep: (type: String, sdp: String)? = nil) async throws(JanusError) -> JanusReply {
        let name = body["request"]?.stringValue ?? "message"
        let transaction = client.newTransaction()
        let reply = try JanusClient.check(await client.exchange(
            JanusMessage.message(transaction: transaction, session: client.sessionId, handle: id, body: body, jsep: jsep),
            transaction: transaction, untilEvent: true), request: name)
        guard reply.verb == "event" else { throw .unexpected(request: name, reply: reply.verb) }
        return reply
    }

    /// A local ICE candidate, or (nil) the end of gathering.
    public func trickle(_ candidate: (line: String, mlineIndex: UInt32)?) {
        client.send(JanusMessage.trickle(transaction: client.newTransaction(), session: client.sessionId, handle: id, candidate: candidate))
    }

    /// Leaves the plugin (the session stays).
    public func detach() {
        client.send(JanusMessage.request("detach", transaction: client.newTransaction(), session: client.sessionId, handle: id))
    }
}

extension JanusReply {
    /// A reply made here: the socket closed (`closed`) or no answer came (`timeout`).
    static func local(_ verb: String, transaction: String) -> JanusReply {
        var r = JanusReply(text: "{\"janus\":\"\(verb)\"}")!
        r.transaction = transaction
        return r
    }
}
