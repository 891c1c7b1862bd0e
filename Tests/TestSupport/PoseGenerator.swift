import Foundation
import PoseCastKit
import Synchronization

/// Deterministic, varied poses: every field differs frame to frame and uses full
/// float precision, so a bit-for-bit comparison means something.
public struct PoseGenerator: Sendable {
    public var width = 640, height = 480
    public init(width: Int = 640, height: Int = 480) { self.width = width; self.height = height }

    public func pose(frameID: UInt32, captureTimeNanos: UInt64) -> FramePose {
        var rng = SplitMix64(seed: UInt64(frameID) &* 0x9E37_79B9 &+ 17)
        func unit() -> Float { Float(rng.next() >> 40) / Float(1 << 24) }
        let q = (unit() - 0.5, unit() - 0.5, unit() - 0.5, unit() + 0.1)
        let n = (q.0 * q.0 + q.1 * q.1 + q.2 * q.2 + q.3 * q.3).squareRoot()
        let appCount = frameID % 3 == 0 ? Int(rng.next() % UInt64(PoseWireFormat.maxApplicationBytes + 1)) : 0
        return FramePose(
            flags: frameID % 7 == 0 ? .late : [],
            frameID: frameID, captureTimeNanos: captureTimeNanos,
            position: Vector3((unit() - 0.5) * 20, unit() * 3, (unit() - 0.5) * 20),
            orientation: Quaternion(x: q.0 / n, y: q.1 / n, z: q.2 / n, w: q.3 / n),
            intrinsics: CameraIntrinsics(fx: 0.5 + unit(), fy: 0.6 + unit(), cx: 0.4 + unit() * 0.2, cy: 0.4 + unit() * 0.2),
            applicationData: (0..<appCount).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
    }
}
