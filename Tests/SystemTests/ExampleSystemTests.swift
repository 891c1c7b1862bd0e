import Foundation
import Testing
import TestSupport

/// Another package using PoseCast: `Examples/PublishOwnFrames`, built against this
/// package through SwiftPM by the test command (`scripts/test`, into the same build
/// folder), publishes frames it draws itself through `FrameFeed`, each with the pose of
/// a camera circling the origin at 2 m, 1.5 m up. The real `posecast-subscriber` must
/// show them at the feed's rate, every one with a pose, and the pose of the frame on
/// screen must be the example's camera.
@Suite("system: a package of its own publishes its own frames with their poses", .serialized,
       .enabled(if: FileManager.default.isExecutableFile(atPath: ManagedProcess.binDirectory.appendingPathComponent("publish-own-frames").path),
                "Examples/PublishOwnFrames is not built (scripts/test builds it)"), .tags(.system))
struct ExampleSystemTests {
    @Test("publish-own-frames: 30 fps of its own frames reach a subscriber, each with its own camera's pose")
    func ownFramesWithPoses() async throws {
        let example = try ManagedProcess("publish-own-frames", ["0", "30"], name: "publish-own-frames")
        let (listening, _) = try await example.waitForEvent("the example's signaling server", timeout: 30) { $0.is(.listening) }
        let url = try #require(listening.string("url"))
        let subscriber = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url], name: "subscriber")
        let (status, _) = try await subscriber.waitForEvent("8 s of frames", timeout: 30) { $0.is(.status) && $0.int("frames") >= 240 }
        print("example: subscriber status \(status)")
        #expect(status.int("frames_with_pose") == status.int("frames"), "frames without a pose: \(status)")
        #expect(((status["fps"] as? NSNumber)?.doubleValue ?? 0) >= 25, "fps: \(status)")

        // The pose of the frame on screen: the example's camera, 2 m from the axis, 1.5 m up.
        var poses: [[Double]] = []
        for _ in 0..<3 {
            let seen = subscriber.output.count
            subscriber.send("pose")
            let (pose, _) = try await subscriber.waitForEvent("a pose", timeout: 5, after: seen) { $0.is(.pose) }
            poses.append(try #require((pose["position"] as? [NSNumber])?.map(\.doubleValue)))
            try await Task.sleep(for: .milliseconds(500))
        }
        for p in poses {
            #expect(abs(hypot(p[0], p[2]) - 2) < 0.001 && abs(p[1] - 1.5) < 0.001, "not the example's camera: \(p)")
        }
        #expect(Set(poses.map { $0[0] }).count == 3, "the camera did not move between frames: \(poses)")

        subscriber.send("quit")
        #expect(try await subscriber.waitForExit(timeout: 10) == 0)
        example.signal(SIGTERM)
        #expect(try await example.waitForExit(timeout: 10) == 0, "stderr:\n\(example.stderrTail)")
    }
}
