import Foundation
import Testing
import TestSupport

/// `--anchors FILE`: an annotation placed in one session comes back in the next, at the
/// same world point; a file that is not a list of annotations is refused and left alone.
@Suite("system: annotations kept across sessions (--anchors)", .serialized, .tags(.system))
struct AnchorSystemTests {
    static func publisher(_ url: String, anchors: String, name: String) throws -> ManagedProcess {
        try ManagedProcess("posecast-publisher", ["--source", "synthetic", "--signaling", url, "--json", "--anchors", anchors,
                                                  "--microphone", "none", "--speaker", "none"], name: name)
    }

    static func expert(_ url: String, name: String) throws -> ManagedProcess {
        try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url, "--microphone", "none", "--speaker", "none"],
                           name: name)
    }

    static func positions(_ event: [String: Any]) -> [[Double]] {
        ((event["positions"] as? [Any]) ?? []).map { (($0 as? [Any]) ?? []).compactMap { ($0 as? NSNumber)?.doubleValue } }
    }

    @Test("a pin placed in one session is listed at the same world point after the publisher restarts; a broken file is refused, untouched")
    func keptAcrossSessions() async throws {
        let dir = NSTemporaryDirectory() + "posecast-anchors-\(UUID().uuidString.prefix(8))/"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "anchors.json"
        let signaling = try ManagedProcess("posecast-signaling", ["--port", "0"], name: "signaling")
        defer { signaling.signal(SIGTERM) }
        let (listening, _) = try await signaling.waitForLine("listening line", timeout: 20) { $0.hasPrefix("listening ") }
        let url = String(listening.dropFirst("listening ".count))

        // Session 1: no file yet; the expert places a pin on the ground.
        let first = try Self.publisher(url, anchors: file, name: "publisher (session 1)")
        let (loaded, _) = try await first.waitForEvent("anchors loaded", timeout: 20) { $0.is(.anchorsLoaded) }
        #expect(loaded.int("count") == 0)
        let expertA = try Self.expert(url, name: "expert (session 1)")
        try await expertA.waitForEvent("posed frames", timeout: 40) { $0.is(.status) && $0.int("frames_with_pose") >= 30 }
        try await expertA.waitForEvent("control channel", timeout: 10) { $0.is(.controlOpen) }
        let mark = expertA.output.count
        expertA.send("tap 0.5 0.8 valve")
        let (listed, _) = try await expertA.waitForEvent("the pin in the list", timeout: 10, after: mark) {
            $0.is(.annotations) && $0.int("count") == 1
        }
        let placed = try #require(Self.positions(listed).first)
        expertA.signal(SIGTERM)
        first.signal(SIGTERM)
        try await first.expectCleanExit(timeout: 15)
        let saved = try String(contentsOfFile: file, encoding: .utf8)
        #expect(saved.contains("valve"), "the file holds the pin: \(saved.prefix(300))")

        // Session 2: the same file; a new expert is given the pin where it was.
        let second = try Self.publisher(url, anchors: file, name: "publisher (session 2)")
        defer { second.signal(SIGTERM) }
        let (reloaded, _) = try await second.waitForEvent("anchors loaded", timeout: 20) { $0.is(.anchorsLoaded) }
        #expect(reloaded.int("count") == 1)
        let expertB = try Self.expert(url, name: "expert (session 2)")
        defer { expertB.signal(SIGTERM) }
        let (again, _) = try await expertB.waitForEvent("the kept pin listed", timeout: 40) { $0.is(.annotations) && $0.int("count") == 1 }
        print("anchors: placed at \(placed), listed in the next session at \(Self.positions(again).first ?? [])")
        #expect(Self.positions(again).first == placed, "the same world point: \(placed) then \(Self.positions(again))")
        // A new pin gets a new id, after the kept one's.
        try await expertB.waitForEvent("posed frames", timeout: 40) { $0.is(.status) && $0.int("frames_with_pose") >= 30 }
        try await expertB.waitForEvent("control channel", timeout: 10) { $0.is(.controlOpen) }
        let markB = expertB.output.count
        expertB.send("tap 0.4 0.8 second")
        let (two, _) = try await expertB.waitForEvent("two pins", timeout: 10, after: markB) { $0.is(.annotations) && $0.int("count") == 2 }
        let ids = (two["ids"] as? [String]) ?? []
        #expect(Set(ids).count == 2, "\(ids)")
        second.signal(SIGTERM)
        try await second.expectCleanExit(timeout: 15)

        // A file that is not a list of annotations: refused at start, left as it was.
        let broken = dir + "broken.json"
        try Data("{\"annotations\": 5}".utf8).write(to: URL(fileURLWithPath: broken))
        let run = try await ManagedProcess.run("posecast-publisher", ["--source", "test", "--anchors", broken, "--signaling", url,
                                                                      "--microphone", "none", "--speaker", "none"], timeout: 30)
        #expect(run.status == 2 && run.stderr.contains("--anchors \(broken)"), "status \(run.status): \(run.stderr.suffix(300))")
        #expect(try String(contentsOfFile: broken, encoding: .utf8) == "{\"annotations\": 5}")
    }
}
