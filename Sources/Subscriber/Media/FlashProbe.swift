import PoseCastKit
import PoseMedia
import RTCSession

/// Finds the publisher's flash frames (`--flash`: all white) among decoded I420 frames,
/// by the mean of 64 luma samples, and reports each with its pose's capture instant.
enum FlashProbe {
    static func install(on pad: Pad, report: @escaping @Sendable (_ captureNanos: UInt64, _ shownNanos: UInt64) -> Void) {
        pad.watch(.buffers) { item in
            guard let buffer = item.buffer, let bytes = PoseMeta.bytes(of: buffer),
                  let pose = try? PoseWireFormat.decode(bytes) else { return .pass }
            // The luma plane is the first two thirds of an I420 frame: sample its first half evenly.
            let mean = item.withBytes { data -> Int in
                let luma = data.count * 2 / 3, step = max(luma / 2 / 64, 1)
                guard luma > 0 else { return 0 }
                var sum = 0
                for i in 0..<64 { sum += Int(data[min(i * step, luma - 1)]) }
                return sum / 64
            }
            if let mean, mean > 200 { report(pose.captureTimeNanos, WallClock.nowNanos()) }
            return .pass
        }
    }
}
