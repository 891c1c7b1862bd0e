import Foundation
import NodeOutput
import Testing
import TestSupport

/// A cascade: the publisher publishes into an origin Janus, `posecast-cascade` relays the
/// room to an edge Janus (Janus's remote publishers), and subscribers take it from either.
/// The three Janus servers share the subscribers' namespace (ports 8188, 8189 and 8190).
@Suite("system: a cascade of Janus servers", .serialized, .tags(.system))
struct SFUCascadeSystemTests {
    @Test("publisher → origin Janus → 2 edge Janus (posecast-cascade): subscribers on the origin, on edge 1, and on either edge show every frame with their own pose; edge 1 killed: the subscriber that may use either moves to edge 2, and edge 1 started again is relayed to again and its subscriber comes back; the publisher gone ends the relays")
    func originAndEdges() async throws {
        guard let net = try SFUNetwork.make(orSkip: "the cascade test") else { return }
        defer { net.remove() }
        let logs = NSTemporaryDirectory() + net.name + "-cascade"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let publisherLog = logs + "/publisher.jsonl"
        let stage = try await SFUStage.start(on: net, name: "cascade", publisherArguments: ["--frame-log", publisherLog])
        defer { stage.stop() }
        let script = AiortcPython.packageRoot.appendingPathComponent("scripts/sfu").path
        func startEdge(_ k: Int, run: Int) throws -> ManagedProcess {
            try net.process("/bin/bash", [script, "--port", "\(8188 + k)", "--rtp-ports", "\(40001 + (k - 1) * 5000)-\(40000 + k * 5000)",
                                          "--debug-level", "3", "--config-dir", logs + "/edge\(k)-\(run)"], name: "edge \(k) Janus (\(run))")
        }
        var edge1 = try startEdge(1, run: 1)
        let edge2 = try startEdge(2, run: 1)
        let origin = "ws://\(net.address):8188/", edge1URL = "ws://\(net.address):8189/", edge2URL = "ws://\(net.address):8190/"
        let cascade = try net.process("posecast-cascade", ["--json", "--origin", origin, "--edge", edge1URL, "--edge", edge2URL,
                                                           "--room", stage.room], name: "cascade")
        defer {
            cascade.signal(SIGTERM)
            edge1.signal(SIGTERM)
            edge2.signal(SIGTERM)
        }
        try await waitUntil(30, "the feed relayed to both edges") { cascade.events.filter { $0.is(.relayStarted) }.count >= 2 }
        let relays = cascade.events.count

        func subscriber(_ servers: String, _ name: String) throws -> ManagedProcess {
            try net.process("posecast-subscriber", [
                "--headless", "--json", "--signaling", stage.signaling, "--sfu", "janus:\(servers)", "--room", stage.room,
                "--role", "viewer", "--microphone", "none", "--speaker", "none", "--frame-log", logs + "/\(name).jsonl"], name: name)
        }
        let near = try subscriber(origin, "near"), far = try subscriber(edge1URL, "far"), either = try subscriber("\(edge1URL),\(edge2URL)", "either")
        func shown(_ name: String) -> [UInt64] {
            ((try? FrameLogJoin.lines(logs + "/\(name).jsonl")) ?? []).compactMap { ($0["shownNs"] as? NSNumber)?.uint64Value }
        }
        func frames(_ name: String, after: UInt64 = 0) -> Int { shown(name).count { $0 > after } }
        try await waitUntil(40, "150 frames on each subscriber", progress: { "near \(frames("near")), far \(frames("far")), either \(frames("either"))" }) {
            ["near", "far", "either"].allSatisfy { frames($0) >= 150 }
        }
        func server(_ p: ManagedProcess) -> String? { p.events.last { $0.is(.sfuSubscribed) }?["server"] as? String }
        let eitherWasOn = server(either)

        // Edge 1 dies. A subscriber that may use either edge moves to the other at its next
        // try; edge 1 is started again only then, so the move cannot be a return to it.
        edge1.signal(SIGKILL)
        let killed = UInt64(Date().timeIntervalSince1970 * 1e9)
        _ = try await edge1.waitForExit(timeout: 10)
        if eitherWasOn == edge1URL {
            try await waitUntil(15, "the subscriber of either edge showing frames from edge 2") {
                server(either) == edge2URL && frames("either", after: killed) >= 30
            }
            let moved = Double((shown("either").first { $0 > killed } ?? killed) - killed) / 1e9
            print("cascade: edge 1 killed; the subscriber of either edge moved to edge 2, video back after \(String(format: "%.2f", moved)) s")
            #expect(moved <= 5, "moved to edge 2 after \(moved) s")
        } else {
            print("cascade: the subscriber of either edge was on \(eitherWasOn ?? "?"), not edge 1: nothing to move this run")
            try await Task.sleep(for: .seconds(1))
        }
        edge1 = try startEdge(1, run: 2)
        try await cascade.waitForEvent("edge 1 lost", timeout: 15, after: relays) { $0.is(.cascadeEdgeLost) }
        try await cascade.waitForEvent("the feed relayed to the restarted edge", timeout: 30, after: relays) { $0.is(.relayStarted) }
        let restarted = UInt64(Date().timeIntervalSince1970 * 1e9)
        try await waitUntil(30, "60 frames on edge 1's subscriber after its restart", progress: { "\(frames("far", after: killed))" }) {
            frames("far", after: killed) >= 60
        }
        let back = shown("far").first { $0 > killed }.map { Double($0 - killed) / 1e9 }
        #expect((back ?? .infinity) <= 20, "edge 1's subscriber came back \(back ?? -1) s after the kill")
        print("cascade: edge 1 killed; relayed again \(String(format: "%.2f", Double(restarted - killed) / 1e9)) s later, its subscriber's video back after \(back.map { String(format: "%.2f", $0) } ?? "?") s")
        #expect(frames("near", after: killed) >= 60, "the origin's subscriber went on")

        for p in [near, far, either] { p.send("quit") }
        for p in [near, far, either] { try await p.expectCleanExit(timeout: 15) }
        stage.publisher.signal(SIGTERM)
        try await stage.publisher.expectCleanExit(timeout: 15)
        // (Edge 1's restart ended its relay once already, "the edge was lost".)
        try await waitUntil(15, "both relays ended with the publisher") {
            cascade.events.filter { $0.is(.relayEnded) && ($0["reason"] as? String)?.contains("left the origin's room") == true }.count >= 2
        }
        let failures = cascade.events.filter { $0.is(.relayFailed) }
        #expect(failures.count <= 2, "relays that failed: \(failures)")
        cascade.signal(SIGTERM)
        try await cascade.expectCleanExit(timeout: 15)

        // Every subscriber showed every frame with its own pose: frame id, pose hash and
        // capture time the publisher's (the edges' frames crossed two Janus servers).
        for name in ["near", "far", "either"] {
            let join = try FrameLogJoin(publisherLog: publisherLog, subscriberLog: logs + "/\(name).jsonl")
            print("cascade: \(name): \(join)")
            #expect(join.ids.count >= 200 && join.ids.count == join.shown, "\(name): \(join)")
            #expect(join.notOwn.isEmpty && join.unknown == 0, "\(name): \(join); \(join.notOwn.prefix(3))")
        }
    }
}
