import CameraControl
import Foundation
import Imaging
import PoseCastKit
import PoseMedia
import Publisher
import Subscriber
import RTCSession
import SyntheticCamera
import Synchronization
import TestSupport
import Testing

/// What an expert saw: an expert joins a publisher that has been
/// running on the synthetic camera with continuous autofocus while the camera orbits.
/// The picture must be sharp within 15 frames of the join and stay sharp for a whole
/// turn of the orbit, which takes the camera past the nearer object that fooled the
/// focus search before (it reported `converged` at 12 % of the region's best sharpness
/// and stayed there). Sharpness is judged afterwards, by rendering each checked frame's
/// view again through a sweep of lens positions.
@Suite("focus after an expert joins", .serialized, .tags(.realtime))
struct FocusAfterJoinTests {
    struct Seen: Sendable {
        var frameID: UInt32
        var pose: FramePose
        var state: RoutineState
        var lens: Double?
    }

    static let width = 640, height = 480
    static let area = MeteringArea(mode: .weighted)

    /// Sharpness of the region on `pose`'s view with the lens at `lens`, and the best over
    /// a sweep (coarse, then fine around the best).
    static func sharpness(_ renderer: SyntheticRenderer, pose: FramePose, lens: Double) throws -> (here: Double, best: Double) {
        let camera = try #require(CameraModel(pose: pose))
        func measure(_ p: Double) throws -> Double {
            var state = LensState()
            state.focusDistance = Float(SimulatedCameraBackend.focusDistance(lensPosition: min(max(p, 0), 1)))
            var total = 0.0
            for k in 0..<2 {
                let image = try renderer.render(camera: camera, lens: state, frameIndex: 50_000 + UInt64(k) * 7)
                total += image.withFrameView { RegionMeter.measure($0, area: area) }.sharpness
            }
            return total / 2
        }
        var best = (position: 0.0, sharpness: -1.0)
        for k in 0...40 {
            let p = Double(k) / 40, s = try measure(p)
            if s > best.sharpness { best = (p, s) }
        }
        let centre = best.position
        for k in -25...25 {
            let p = min(max(centre + Double(k) * 0.001, 0), 1), s = try measure(p)
            if s > best.sharpness { best = (p, s) }
        }
        return (try measure(lens), best.sharpness)
    }

    @Test("an expert joins a publisher focused on the orbit: converged within 15 frames at ≥ 95 % of the region's best sharpness, and every refocus over a whole turn too")
    func joinKeepsFocus() async throws {
        var orbit = OrbitTrajectory(intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3))
        orbit.degreesPerSecond = 30
        let provider = TrajectoryPoseProvider(trajectory: orbit, intrinsics: orbit.intrinsics, startNanos: WallClock.nowNanos())
        var config = PublisherMediaConfig()
        config.source = .synthetic
        config.width = Self.width; config.height = Self.height
        let meterBox = Mutex<CameraMeter?>(nil)
        let seen = Mutex<[Seen]>([])
        let publisher = try PublisherMedia(config: config, poseSource: { id, t in provider.pose(frameID: id, captureTimeNanos: t) },
                                           onPoseAttached: { pose in
            guard let status = meterBox.withLock({ $0 })?.status else { return }
            seen.withLock { $0.append(Seen(frameID: pose.frameID, pose: pose, state: status.focus.state, lens: status.lensPosition)) }
        })
        let meter = try #require(publisher.cameraMeter, "the synthetic camera has a simulated lens to meter")
        meterBox.withLock { $0 = meter }
        try await publisher.start()
        defer { publisher.stop() }

        // Focused, and the orbit well before the nearer object (about 130°–150°) comes by:
        // the join, not the scene, must be what the focus has to get through.
        try await waitUntil(30, "converged for 15 frames with the orbit at 20°–90°") {
            let last = seen.withLock { Array($0.suffix(15)) }
            guard last.count == 15, last.allSatisfy({ $0.state == .converged }), let pose = last.last?.pose else { return false }
            let degrees = (atan2(pose.position.x, pose.position.z) * 180 / .pi + 360).truncatingRemainder(dividingBy: 360)
            return (20...90).contains(degrees)
        }
        let joinFrame = try #require(seen.withLock { $0.last?.frameID })
        let subscriber = try SubscriberMedia(config: SubscriberMediaConfig())
        try subscriber.start()
        let peer = try await publisher.addPeer(name: "expert")
        let link = LoopbackLink(publisher: peer, subscriber: subscriber)
        defer { link.cancel(); subscriber.stop(); publisher.removePeer(peer) }
        _ = try await link.negotiate()
        // A whole turn of the orbit (12 s at 30°/s) after the join.
        try await waitUntil(40, "a whole turn after the join") {
            (seen.withLock { $0.last?.frameID } ?? 0) >= joinFrame + 370
        }
        let frames = seen.withLock { $0 }.filter { $0.frameID > joinFrame }
        let renderer = try SyntheticRenderer(scene: .standard, width: Self.width, height: Self.height)

        // 15 frames after the join.
        let early = try #require(frames.first { $0.frameID == joinFrame + 15 })
        let earlyLens = try #require(early.lens)
        let earlySharpness = try Self.sharpness(renderer, pose: early.pose, lens: earlyLens)
        print("focus after join: frame +15 \(early.state) at lens \(earlyLens), \(String(format: "%.3f", earlySharpness.here / earlySharpness.best)) of the best")
        #expect(early.state == .converged)
        #expect(earlySharpness.here >= 0.95 * earlySharpness.best)

        // Every search that ended during the turn ended on the peak.
        var ratios: [(UInt32, Double)] = []
        for (previous, frame) in zip(frames, frames.dropFirst()) where frame.state == .converged && previous.state != .converged {
            let s = try Self.sharpness(renderer, pose: frame.pose, lens: try #require(frame.lens))
            ratios.append((frame.frameID - joinFrame, s.here / s.best))
        }
        let convergedShare = Double(frames.filter { $0.state == .converged }.count) / Double(frames.count)
        print("focus after join: convergences (frames after join, share of best) \(ratios.map { ($0.0, (($0.1 * 1000).rounded() / 1000)) }); converged \(String(format: "%.0f", convergedShare * 100)) % of \(frames.count) frames")
        for (frame, ratio) in ratios { #expect(ratio >= 0.95, "frame +\(frame): converged at \(ratio) of the region's best sharpness") }
        #expect(convergedShare >= 0.75)
    }
}
