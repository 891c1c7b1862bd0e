import Foundation
import Logging
import Signaling
import Synchronization
import TestSupport
import Testing

/// A room crowded by strangers, across real processes: 30 idle listeners (raw signaling
/// clients) in a 16-peer room whose publisher and experts need tokens. The restarted
/// publisher and an expert with a token still get in, a squatter claiming the publisher
/// role is refused, and a viewer refused for the full room gets in by itself once the
/// idle listeners are dropped. Every wait has a time limit.
@Suite("system: rooms crowded by idle listeners", .serialized, .tags(.system))
struct RoomSystemTests {
    static let listenerTimeout = 20.0

    @Test("30 idle listeners keep out neither the restarted publisher nor an expert with a token; the squatter is refused; the refused viewer gets in")
    func crowdedRoom() async throws {
        let signaling = try ManagedProcess("posecast-signaling", [
            "--port", "0", "--token", "site/publisher=pub-token", "--token", "site/expert=expert-token",
            "--listener-timeout", "\(Self.listenerTimeout)"], name: "signaling")
        let (line, _) = try await signaling.waitForLine("listening line", timeout: 20) { $0.hasPrefix("listening ") }
        let url = String(line.dropFirst("listening ".count))
        func publisher() throws -> ManagedProcess {
            try ManagedProcess("posecast-publisher", ["--source", "test", "--signaling", url, "--room", "site",
                                                      "--token", "pub-token", "--json"], name: "publisher")
        }
        func subscriber(_ name: String, _ extra: [String]) throws -> ManagedProcess {
            try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url, "--room", "site"] + extra,
                               name: name)
        }
        let first = try publisher()
        try await first.waitForEvent("publisher registered", timeout: 20) { $0.is(.signalingConnected) }

        // 30 strangers declare themselves listeners and then do nothing: 11 get the open places.
        var crowd: [RawPeer] = []
        for _ in 0..<30 { crowd.append(try await RawPeer(url)) }
        var admitted: [RawPeer] = [], refused: [RawPeer] = []
        for peer in crowd {
            switch try await peer.declare(PeerStatus(roles: [.listener], room: "site")) {
            case nil: admitted.append(peer)
            case .roomFull?: refused.append(peer)
            case let other?: Issue.record("a listener was refused \(other)")
            }
        }
        #expect(admitted.count == 11 && refused.count == 19, "\(admitted.count) admitted, \(refused.count) refused")

        // The publisher restarted while its old connection still holds the room: the new one is
        // told the room is busy and keeps asking; once the old one is gone it takes the
        // publisher's place, which the crowd cannot take.
        let restarted = try publisher()
        try await restarted.waitForEvent("the new publisher told the room is busy", timeout: 20) {
            $0.is(.roomBusy) && ($0.string("details") ?? "").contains("already has a publisher")
        }
        first.signal(SIGKILL)
        _ = try await first.waitForExit(timeout: 10)
        #expect(restarted.isRunning, "a busy room never ends the publisher")

        // A squatter claiming the publisher role without its token is refused, with or without another token.
        let squatter = try await RawPeer(url)
        #expect(try await squatter.declare(PeerStatus(roles: [.producer], room: "site")) == .unauthorized)
        #expect(try await squatter.declare(PeerStatus(roles: [.producer], room: "site", token: "expert-token")) == .unauthorized)

        // The expert with a token gets in and sees the restarted publisher's video; the viewer is told the room is busy.
        let expert = try subscriber("expert", ["--token", "expert-token"])
        let viewer = try subscriber("viewer", ["--role", "viewer"])
        try await Fault.expectPosedFrames(expert)
        try await viewer.waitForEvent("the viewer told the room is busy", timeout: 10) {
            $0.is(.roomBusy) && ($0.string("details") ?? "").contains("full")
        }
        #expect(!admitted.contains { $0.isClosed }, "the crowd was still there while the expert joined")
        let probe = try await RawPeer(url)
        #expect(try await probe.declare(PeerStatus(roles: [.listener], room: "site")) == .roomFull, "the room was still full")

        // The idle listeners are dropped after the timeout, each told why; the viewer then gets in by itself.
        try await waitUntil(Self.listenerTimeout + 10, "the idle listeners dropped",
                            progress: { "\(admitted.filter(\.isClosed).count) of \(admitted.count) closed" }) {
            admitted.allSatisfy(\.isClosed)
        }
        #expect(admitted.allSatisfy { $0.errors.contains(.idleTimeout) })
        // Refused peers that never ask again hold a bare connection: dropped after the
        // undeclared timeout (10 s after their refusal), each told why.
        try await waitUntil(15, "the refused peers dropped", progress: { "\(refused.filter(\.isClosed).count) of \(refused.count) closed" }) {
            refused.allSatisfy(\.isClosed)
        }
        #expect(refused.allSatisfy { $0.errors.contains(.idleTimeout) })
        try await Fault.expectPosedFrames(viewer)
        // Once per refusal, backing off: 1 s, 2 s, 4 s, then 8 s apart.
        let waits = viewer.events.filter { $0.is(.roomBusy) }.map { $0.int("retryInMs") }
        #expect(waits.first == 1000 && zip(waits, waits.dropFirst()).allSatisfy { $0 <= $1 } && waits.allSatisfy { $0 <= 8000 },
                "\(waits)")
        #expect(restarted.isRunning && expert.isRunning)
        print("crowded room: \(admitted.count) listeners admitted, \(refused.count) refused; restarted publisher roomBusy "
              + "\(restarted.events.filter { $0.is(.roomBusy) }.count)×; viewer refused \(waits.count)× (waits \(waits) ms); "
              + "server refusals logged: \(signaling.stderrTail.components(separatedBy: "refused a signaling message").count - 1) lines in the tail")
        #expect(signaling.stderrTail.contains("refused a signaling message"), "the server logs its refusals: \(signaling.stderrTail)")

        for peer in crowd + [squatter, probe] { peer.close() }
        try await Fault.stop([viewer, expert, restarted, signaling])
    }
}

/// A raw signaling client: declares what the test tells it and then does nothing,
/// keeping every message it gets.
final class RawPeer: Sendable {
    /// What the peer received, and whether the server closed its connection.
    private final class Inbox: Sendable {
        let state = Mutex<(messages: [ServerMessage], ended: Bool)>(([], false))
    }

    private let client: SignalingClient
    private let inbox = Inbox()
    private let reader: Task<Void, Never>

    init(_ url: String) async throws {
        let logger = { var logger = Logger(label: "raw-peer"); logger.logLevel = .critical; return logger }()
        let client = try await withTimeout(10, "a raw client to connect") {
            try await SignalingClient.connect(url: url, logger: logger)
        }
        let inbox = self.inbox
        self.client = client
        reader = Task {
            for await message in client.messages { inbox.state.withLock { $0.messages.append(message) } }
            inbox.state.withLock { $0.ended = true }
        }
    }

    deinit { reader.cancel() }

    var messages: [ServerMessage] { inbox.state.withLock { $0.messages } }
    var isClosed: Bool { inbox.state.withLock { $0.ended } }
    var errors: [SignalingErrorCode] {
        messages.compactMap { if case .error(_, let code, _) = $0 { code } else { nil } }
    }

    /// Declares `status`, then lists: the list's answer comes after any refusal of the
    /// declaration. Returns the refusal's code, or nil when accepted.
    func declare(_ status: PeerStatus) async throws -> SignalingErrorCode? {
        let before = messages.count
        try client.send(.setPeerStatus(status))
        try client.send(.list)
        let answers = try await waitFor(5, "the answers to a declaration") { () -> [ServerMessage]? in
            let new = Array(messages.dropFirst(before))
            return new.contains { if case .list = $0 { true } else { false } } ? new : nil
        }
        for case .error(_, let code?, _) in answers { return code }
        return nil
    }

    func close() { client.close() }
}
