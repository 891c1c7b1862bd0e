import Foundation
import PoseCastKit
import Synchronization

struct TimeoutError: Error, CustomStringConvertible {
    let what: String
    let seconds: Double
    var description: String { "timed out after \(seconds) s waiting for \(what)" }
}

/// Runs `body`, failing with `TimeoutError` when it takes longer than `seconds`.
func withTimeout<T: Sendable>(_ seconds: Double, _ what: String,
                              _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimeoutError(what: what, seconds: seconds)
        }
        let result = try await group.next()!
        group.cancelAll()
        return result
    }
}

/// Polls `condition` every 50 ms until it holds or `seconds` pass; on a timeout the
/// error says how far things got (`progress`), so a slow machine and a stall differ.
func waitUntil(_ seconds: Double, _ what: String, progress: (@Sendable () -> String)? = nil,
               _ condition: @escaping @Sendable () -> Bool) async throws {
    do {
        try await withTimeout(seconds, what) {
            while !condition() { try await Task.sleep(for: .milliseconds(50)) }
        }
    } catch let error as TimeoutError {
        guard let progress else { throw error }
        throw TimeoutError(what: "\(what) (got: \(progress()))", seconds: seconds)
    }
}

/// Deterministic, varied poses: every field differs frame to frame and uses full
/// float precision, so a bit-for-bit comparison means something.
struct PoseGenerator: Sendable {
    var width = 640, height = 480

    func pose(frameID: UInt32, captureTimeNanos: UInt64) -> FramePose {
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

struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
