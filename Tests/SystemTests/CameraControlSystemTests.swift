import Foundation
import Testing
import TestSupport

/// The expert drives the publisher's (synthetic) camera across processes: focus and
/// metering requests change the streamed scene status as the modes say.
@Suite("system: remote camera control", .serialized, .tags(.system))
struct CameraControlSystemTests {
    @Test("tapToLockFocus meters then locks; a timed exposure lock expires back to continuous metering")
    func focusAndMeter() async throws {
        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "synthetic", "--listen", "127.0.0.1:0", "--json"], name: "publisher")
        let (listening, _) = try await publisher.waitForEvent("embedded signaling", timeout: 20) { $0.is(.listening) }
        let url = try #require(listening.string("url"))
        let expert = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url], name: "expert")
        try await expert.waitForEvent("control channel", timeout: 40) { $0.is(.controlOpen) }
        try await expert.waitForEvent("a scene status", timeout: 10) { $0.is(.sceneStatus) }

        func routineState(_ e: [String: Any], _ routine: String) -> String? {
            ((e["routines"] as? [String: Any])?[routine] as? [String: Any])?["state"] as? String
        }
        // Focus on the ball in the middle of the picture, and hold it.
        let mark = expert.output.count
        expert.send("focus 0.5 0.55 tapToLockFocus")
        try await expert.waitForEvent("ack of focus", timeout: 10, after: mark) { $0.is(.ack) }
        let (locked, lockedAt) = try await expert.waitForEvent("focus locked", timeout: 15, after: mark) {
            $0.is(.sceneStatus) && routineState($0, "focus") == "locked"
        }
        #expect(locked.string("focusMode") == "tapToLockFocus")
        let lens = (locked["values"] as? [String: Any])?["lensPosition"] as? Double
        #expect(lens != nil)
        // It searched first: a status between the request and the lock said "metering" or "converged".
        let between = expert.output[mark..<lockedAt].compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }.filter { $0.is(.sceneStatus) }.compactMap { routineState($0, "focus") }
        #expect(between.contains("metering") || between.contains("converged"), "focus states before the lock: \(between)")

        // Exposure metered on a spot and locked for 1 s, then back to continuous metering.
        let markMeter = expert.output.count
        expert.send("meter 0.3 0.75 1 routines=exposure")
        try await expert.waitForEvent("exposure locked", timeout: 15, after: markMeter) {
            $0.is(.sceneStatus) && routineState($0, "exposure") == "locked"
        }
        let (resumed, _) = try await expert.waitForEvent("exposure lock expired", timeout: 10, after: markMeter) {
            $0.is(.sceneStatus) && routineState($0, "exposure").map { $0 == "metering" || $0 == "converged" } == true
                && $0["lockRemaining"] == nil
        }
        // Focus is still held by its own lock.
        #expect(routineState(resumed, "focus") == "locked")

        // A viewer-free refusal path: a point outside the picture is an error, the session goes on.
        let markBad = expert.output.count
        expert.send(#"focus 0.5 0.5 sideways"#)
        try await expert.waitForEvent("command error", timeout: 10, after: markBad) { $0.is(.commandError) }

        expert.send("quit")
        try await expert.expectCleanExit(timeout: 15)
        publisher.signal(SIGTERM)
        try await publisher.expectCleanExit(timeout: 15)
    }
}
