import PoseCastKit
import PoseMedia
import Publisher
import Subscriber
import RTCSession
import TestSupport
import Testing

@Suite("publisher bad input")
struct PublisherInputTests {
    static let poses: PoseSource = { id, t in PoseGenerator().pose(frameID: id, captureTimeNanos: t) }

    @Test("a missing camera names the device and suggests the test source")
    func missingCamera() {
        var config = PublisherMediaConfig()
        config.source = .v4l2(device: "/dev/video-posecast-absent")
        #expect(throws: RTCError.deviceMissing(path: "/dev/video-posecast-absent",
                                               hint: "no camera there: use `--source test` (videotestsrc) instead")) {
            _ = try PublisherMedia(config: config, poseSource: Self.poses)
        }
    }

    @Test("an out-of-range video size is refused before any pipeline starts")
    func badSize() {
        var config = PublisherMediaConfig()
        config.width = 16
        #expect(throws: RTCError.invalidArgument("video 16x480@30 is out of range")) {
            _ = try PublisherMedia(config: config, poseSource: Self.poses)
        }
    }

    @Test("a pose source that returns NaN sends frames flagged missing, never the bad pose")
    func invalidPoseIsFlagged() async throws {
        let flagged = PoseRejectionCounter()
        var config = PublisherMediaConfig()
        config.width = 320; config.height = 240
        let publisher = try PublisherMedia(config: config, poseSource: { id, t in
            var pose = PoseGenerator().pose(frameID: id, captureTimeNanos: t)
            pose.position.x = .nan
            return pose
        }, onPoseAttached: { pose in if pose.flags.contains(.missing) { flagged.record(.nonFinite(field: "sent")) } })
        try await publisher.start()
        defer { publisher.stop() }
        try await waitUntil(10, "frames tagged") { publisher.stats.framesTagged >= 10 }
        #expect(publisher.stats.poseEncodeErrors >= 10)
        #expect(publisher.stats.lastError == .nonFinite(field: "position.x"))
        #expect(flagged.total >= 10)
    }
}
