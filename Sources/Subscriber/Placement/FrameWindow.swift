import PoseCastKit
import PoseMedia

/// Running figures of what a subscriber decoded: totals, the last second's rate and
/// capture → decoded latency (the capture time travels in the pose; same host clock
/// on loopback), and the frame on screen.
public struct FrameWindow: Sendable {
    public private(set) var framesDecoded = 0
    public private(set) var framesWithPose = 0
    /// The newest decoded frame: the one on screen.
    public private(set) var lastFrame: DecodedFrame?
    /// The newest decoded frame that carried a pose.
    public private(set) var lastPosedFrame: DecodedFrame?
    private var secondStart: UInt64 = 0
    private var secondCount = 0
    private var secondLatencies: [Double] = []
    public private(set) var fps: Double = 0
    public private(set) var latencyMsP50: Double?

    public init() {}

    public mutating func record(_ frame: DecodedFrame) {
        framesDecoded += 1
        lastFrame = frame
        if let pose = frame.pose {
            framesWithPose += 1
            lastPosedFrame = frame
            if frame.decodedAtNanos >= pose.captureTimeNanos {
                secondLatencies.append(Double(frame.decodedAtNanos - pose.captureTimeNanos) / 1e6)
            }
        }
        secondCount += 1
    }

    /// Closes the current one-second window (call once a second).
    public mutating func tick(now: UInt64) {
        if secondStart != 0, now > secondStart {
            fps = Double(secondCount) / (Double(now - secondStart) / 1e9)
        }
        let sorted = secondLatencies.sorted()
        latencyMsP50 = sorted.isEmpty ? nil : sorted[sorted.count / 2]
        secondStart = now
        secondCount = 0
        secondLatencies.removeAll(keepingCapacity: true)
    }

    public var posePercent: Double { framesDecoded == 0 ? 0 : Double(framesWithPose) * 100 / Double(framesDecoded) }
}
