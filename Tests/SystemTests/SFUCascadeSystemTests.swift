import Foundation
import NodeOutput
import Testing
import TestSupport

/// A cascade: the publisher publishes into an origin Janus, `posecast-cascade` relays the
/// room to an edge Janus (Janus's remote publishers), and subscribers take it from either.
/// Both Janus servers share the subscribers' namespace (ports 8188 and 8189).
@Suite("system: a cascade of Janus servers", .serialized, .tags(.system))
struct SFUCascadeSystemTests {
    @Test("publisher → origin Janus → edge Janus (posecast-cascade): a subscriber on each shows every frame with its own pose; the edge killed and started again is relayed to again and its subscriber comes back; the publisher gone ends the relay")
    func originAndEdge() async throws {
        guard let net = try SFUNetwork.make(orSkip: "the cascade test") else { return }
        defer { net.remove() }
        let logs = NSTemporaryDirectory() + net.name + "-cascade"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let publisherLog = logs + "/publisher.jsonl"
        let stage = try await SFUStage.start(on: net, name: "cascade", publisherArguments: ["--frame-log", publisherLog])
        defer { stage.stop() }
        let script = AiortcPython.packageRoot.appendingPathComponent("scripts/sfu").path
        func startEdge(_ run: Int) throws -> ManagedProcess {
            try net.process("/bin/bash", [script, "--port", "8189", "--rtp-ports", "40001-50000", "--debug-level", "3",
                                          "--config-dir", logs + "/edge-\(run)"], name: "edge Janus (\(run))")
        }
        var edge = try startEdge(1)
        let origin = "ws://\(net.address):8188/", edgeURL = "ws://\(net.address):8189/"
        let cascade = try net.process("posecast-cascade", ["--json", "--origin", origin, "--edge", edgeURL, "--room", stage.room],
                                      name: "cascade")
        defer {
            cascade.signal(SIGTERM)
            edge.signal(SIGTERM)
        }
        let (relayed, relayIndex) = try await cascade.waitForEvent("the feed relayed to the edge", timeout: 30) { $0.is(.relayStarted) }
        print("cascade: \(relayed)")

        func subscriber(_ server: String, _ name: String) throws -> ManagedProcess {
            try net.process("posecast-subscriber", [
                "--headless", "--json", "--signaling", stage.signaling, "--sfu", "janus:\(server)", "--room", stage.room,
                "--role", "viewer", "--microphone", "none", "--speaker", "none", "--frame-log", logs + "/\(name).jsonl"], name: name)
        }
        let near = try subscriber(origin, "near"), far = try subscriber(edgeURL, "far")
        func frames(_ name: String, after: UInt64 = 0) -> Int {
            ((try? FrameLogJoin.lines(logs + "/\(name).jsonl")) ?? []).count { ($0["shownNs"] as? NSNumber)?.uint64Value ?? 0 > after }
        }
        try await waitUntil(30, "150 frames on the origin's and the edge's subscriber",
                            progress: { "near \(frames("near")), far \(frames("far"))" }) { frames("near") >= 150 && frames("far") >= 150 }

        // The edge dies and comes back: the cascade relays to it again, its subscriber returns.
        edge.signal(SIGKILL)
        let killed = UInt64(Date().timeIntervalSince1970 * 1e9)
        _ = try await edge.waitForExit(timeout: 10)
        try await Task.sleep(for: .seconds(1))
        edge = try startEdge(2)
        try await cascade.waitForEvent("the edge lost", timeout: 15, after: relayIndex + 1) { $0.is(.cascadeEdgeLost) }
        try await cascade.waitForEvent("the feed relayed to the restarted edge", timeout: 30, after: relayIndex + 1) { $0.is(.relayStarted) }
        let relayedAgain = Double(UInt64(Date().timeIntervalSince1970 * 1e9) - killed) / 1e9
        try await waitUntil(30, "60 frames on the edge's subscriber after the edge's restart",
                            progress: { "\(frames("far", after: killed))" }) { frames("far", after: killed) >= 60 }
        let back = ((try? FrameLogJoin.lines(logs + "/far.jsonl")) ?? []).compactMap { ($0["shownNs"] as? NSNumber)?.uint64Value }
            .first { $0 > killed }.map { Double($0 - killed) / 1e9 }
        #expect((back ?? .infinity) <= 15, "the edge's subscriber came back \(back ?? -1) s after the kill")
        print("cascade: edge killed; relayed again \(String(format: "%.2f", relayedAgain)) s later, its subscriber's video back after \(back.map { String(format: "%.2f", $0) } ?? "?") s")

        for p in [near, far] { p.send("quit") }
        for p in [near, far] { try await p.expectCleanExit(timeout: 15) }
        stage.publisher.signal(SIGTERM)
        try await stage.publisher.expectCleanExit(timeout: 15)
        // (The edge's restart ended the relay once already, "the edge was lost".)
        try await cascade.waitForEvent("the relay ended with the publisher", timeout: 15) {
            $0.is(.relayEnded) && ($0["reason"] as? String)?.contains("left the origin's room") == true
        }
        let failures = cascade.events.filter { $0.is(.relayFailed) }
        #expect(failures.count <= 2, "relays that failed: \(failures)")
        cascade.signal(SIGTERM)
        try await cascade.expectCleanExit(timeout: 15)

        // Both subscribers showed every frame with its own pose: frame id, pose hash and
        // capture time the publisher's (the edge's frames crossed two Janus servers).
        for name in ["near", "far"] {
            let join = try FrameLogJoin(publisherLog: publisherLog, subscriberLog: logs + "/\(name).jsonl")
            print("cascade: \(name): \(join)")
            #expect(join.ids.count >= 200 && join.ids.count == join.shown, "\(name): \(join)")
            #expect(join.notOwn.isEmpty && join.unknown == 0, "\(name): \(join); \(join.notOwn.prefix(3))")
        }
    }
}
