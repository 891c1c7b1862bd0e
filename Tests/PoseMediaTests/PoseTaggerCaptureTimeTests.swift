import Foundation
import PoseCastKit
@testable import PoseMedia
import RTCSession
import Synchronization
import Testing

/// The capture time a frame's pose carries when the pose is attached behind a queue (the
/// publisher's `tagqueue`): read from the frame's timestamp, not taken when it arrives.
@Suite("pose tagger capture time")
struct PoseTaggerCaptureTimeTests {
    /// Median of how long before its pose was attached each frame says it was captured,
    /// ms: a live 10 fps source whose frames are held 40 ms (an `identity` sleeping in
    /// the capture thread) before the queue the tagger sits behind.
    static func medianAgeMs(timestampsAreCaptures: Bool) throws -> Double {
        let pipeline = try Pipeline(launch: "videotestsrc is-live=true ! video/x-raw,format=I420,width=64,height=48,framerate=10/1 "
                                    + "! identity sleep-time=40000 ! queue name=q ! fakesink sync=false", name: "tagger-capture-time")
        let ages = Mutex<[Double]>([])
        let intrinsics = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4.0 / 3.0)
        let tagger = PoseTagger(width: 64, height: 48, stampFrameIDs: false,
                                poseSource: { id, t in .missing(frameID: id, captureTimeNanos: t, intrinsics: intrinsics) },
                                timestampsAreCaptures: timestampsAreCaptures) { _, pose in
            let now = WallClock.nowNanos()
            ages.withLock { $0.append(Double(Int64(bitPattern: now &- pose.captureTimeNanos)) / 1e6) }
            return nil
        }
        tagger.install(on: try #require(pipeline.element(named: "q")?.staticPad("src")))
        try pipeline.play()
        let deadline = Date().addingTimeInterval(5)
        while ages.withLock({ $0.count }) < 12, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        pipeline.stop()
        let sorted = ages.withLock { $0 }.dropFirst(2).sorted()
        try #require(sorted.count >= 8, "frames tagged: \(sorted.count)")
        return sorted[sorted.count / 2]
    }

    @Test("frames held 40 ms before the queue carry a capture time about 40 ms before the tagger saw them; on arrival without")
    func heldFrames() throws {
        let fromTimestamps = try Self.medianAgeMs(timestampsAreCaptures: true)
        let onArrival = try Self.medianAgeMs(timestampsAreCaptures: false)
        #expect(fromTimestamps > 35 && fromTimestamps < 90, "by timestamp: \(fromTimestamps) ms")
        #expect(onArrival < 5, "on arrival: \(onArrival) ms")
    }
}
