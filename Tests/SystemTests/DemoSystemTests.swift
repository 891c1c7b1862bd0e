import Foundation
import TestSupport
import Testing

/// `bash scripts/demo`'s orchestration (scripts/lib/demo.py) on the test build: the
/// publisher with its embedded server and console, a headless expert tapping discs;
/// its summary and its PNG of the expert's view.
@Suite("system: the demo", .serialized, .tags(.system))
struct DemoSystemTests {
    @Test("demo: a summary with latency, own-pose frames and tap errors; the expert's view as a PNG")
    func demo() async throws {
        let out = NSTemporaryDirectory() + "posecast-demo-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let run = try await ManagedProcess.run("/usr/bin/python3", [
            AiortcPython.packageRoot.appendingPathComponent("scripts/lib/demo.py").path,
            "--bin", ManagedProcess.binDirectory.path, "--seconds", "12", "--port", "0", "--out", out], timeout: 90)
        print(run.stdout.split(separator: "\n").suffix(7).joined(separator: "\n"))
        #expect(run.status == 0, "demo.py exited \(run.status): \(run.stderrTail)")
        let line = try #require(run.stdout.split(separator: "\n").last.map(String.init))
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "last line: \(line)")
        #expect((summary["frames_with_own_pose_pct"] as? NSNumber)?.doubleValue == 100)
        #expect((summary["taps"] as? NSNumber)?.intValue ?? 0 >= 3)
        #expect((summary["error_cm_max"] as? NSNumber)?.doubleValue ?? .infinity < 2, "tap errors: \(summary)")
        #expect((summary["latency_ms_p50"] as? NSNumber) != nil)
        let png = try #require(summary["snapshot"] as? String)
        let bytes = try #require(FileManager.default.contents(atPath: png), "no PNG at \(png)")
        #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) && bytes.count > 640 * 480 * 3, "\(bytes.count) bytes")
        #expect(run.stdout.contains("open the console in a browser: http://127.0.0.1:"))
    }
}
