import PoseCastKit
import Publisher
import Testing

/// A `FrameFeed` refuses what it cannot send, saying why: sizes no encoder takes, a
/// frame of the wrong size, a push before a publisher was built from it.
@Suite("frame feed")
struct FrameFeedTests {
    private let pose = FramePose(frameID: 0, captureTimeNanos: 0, position: Vector3(0, 1.5, 2),
                                 orientation: .lookAt(eye: Vector3(0, 1.5, 2), target: Vector3(0, 0, 0)),
                                 intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4.0 / 3.0))

    @Test("odd, empty or huge sizes and rates are refused", arguments: [(641, 480, 30), (640, 0, 30), (16000, 480, 30), (640, 480, 0), (640, 480, 500)])
    func badSizes(_ size: (Int, Int, Int)) {
        #expect(throws: FrameFeedError.self) { _ = try FrameFeed(width: size.0, height: size.1, fps: size.2) }
    }

    @Test("a push before any publisher runs from the feed is refused, and so is a frame of the wrong size")
    func refusedPushes() throws {
        let feed = try FrameFeed(width: 64, height: 48)
        #expect(feed.frameBytes == 64 * 48 * 3 / 2)
        do {
            try feed.push(i420: [UInt8](repeating: 0, count: feed.frameBytes), pose: pose)
            Issue.record("a push with no publisher was taken")
        } catch {
            guard case .notRunning = error else { Issue.record("wrong error: \(error)"); return }
        }
        do {
            try feed.push(i420: [UInt8](repeating: 0, count: 10), pose: pose)
            Issue.record("a 10-byte frame was taken")
        } catch {
            guard case .badFrame(let text) = error else { Issue.record("wrong error: \(error)"); return }
            #expect(text.contains("4608 bytes"), "\(text)")
        }
        #expect(feed.counts.pushed == 0)
    }
}
