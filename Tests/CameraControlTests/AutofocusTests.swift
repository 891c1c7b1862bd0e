@testable import CameraControl
import PoseCastKit
import SyntheticCamera
import TestSupport
import Testing

/// Contrast autofocus on the simulated camera, closed loop: the renderer draws every frame
/// through the lens the meter set, one frame late.
@Suite(.tags(.rendering)) struct AutofocusTests {
    /// Tap targets: objects of the standard scene (tapped where their centre projects)
    /// and a point on the ground.
    static let targets: [(name: String, point: Vector3)] = [
        ("ball", Vector3(0, 0.3, 0)),
        ("crate", Vector3(-0.9, 0.25, -0.7)),
        ("bench", Vector3(0.75, 0.15, 1.05)),
        ("tower", Vector3(1.0, 0.6, -1.1)),
        ("ground", Vector3(-0.3, 0, 0.9)),
    ]

    @Test(arguments: [0, 1, 2, 3, 4], [1.0, 0.0])
    func tapToLockFocusConvergesThenLocks(target: Int, start: Double) throws {
        let (name, point) = Self.targets[target]
        let rig = try SimulatedRig(lens: LensState(focusDistance: Float(SimulatedCameraBackend.focusDistance(lensPosition: start))))
        let tap = try #require(rig.camera.project(point)).point
        let truth = try #require(rig.trueDepth(at: tap))
        let area = MeteringArea(mode: .spot, point: tap)

        let outcome = try rig.meter.focus(point: tap, mode: .tapToLockFocus)
        #expect(outcome.applied == [.focus] && outcome.skipped.isEmpty)
        let run = try rig.run(until: { $0.focus.state != .metering }, limit: 15)
        let last = try #require(run.last)
        #expect(last.focus.state == .converged, "\(name): \(run.map(\.focus.state))")
        #expect(run.count <= 15)
        #expect(run.dropLast().allSatisfy { $0.focus.state == .metering && $0.focusMode == .tapToLockFocus })

        // Within 95% of the best this region can look (found by sweeping focus here).
        let lensNow = try #require(last.lensPosition)
        let peak = try rig.peakSharpness(area: area, near: SimulatedCameraBackend.lensPosition(focusDistance: truth.depth))
        let reached = try rig.sharpness(lensPosition: lensNow, area: area)
        #expect(reached >= 0.95 * peak.sharpness,
                "\(name) at \(truth.depth) m: \(reached) vs peak \(peak.sharpness) at \(peak.position), lens \(lensNow)")
        #expect(try #require(last.focus.measure) >= 0.9 * peak.sharpness)

        // Locked from the next frame on, and the lens stays put.
        let after = try rig.run(20)
        #expect(after.allSatisfy { $0.focus.state == .locked && $0.focusMode == .tapToLockFocus })
        #expect(after.allSatisfy { $0.lensPosition == lensNow })
        #expect(last.region == area.normalizedRect(width: rig.width, height: rig.height))
    }

    @Test func tapToAutoFocusHoldsUntilTheSceneChanges() throws {
        let rig = try SimulatedRig(lens: LensState(focusDistance: 0.3))
        let tap = try #require(rig.camera.project(Self.targets[1].point)).point  // the crate
        try rig.meter.focus(point: tap, mode: .tapToAutoFocus)
        let run = try rig.run(until: { $0.focus.state != .metering }, limit: 15)
        #expect(run.last?.focus.state == .converged)
        let lensAtTap = try #require(run.last?.lensPosition)

        // Same view for many frames (sensor noise only): no return to auto.
        let still = try rig.run(60)
        #expect(still.allSatisfy { $0.focusMode == .tapToAutoFocus && $0.focus.state == .converged })
        #expect(still.allSatisfy { $0.lensPosition == lensAtTap })
        // Small shake (a few millimetres, a fraction of a degree): still held.
        let base = rig.camera
        for k in 0..<30 {
            let wobble = Vector3(0.003 * Float(k % 3 - 1), 0.002 * Float(k % 2), 0)
            rig.camera = CameraModel(position: base.position + wobble,
                                     orientation: .lookAt(eye: base.position + wobble, target: SimulatedRig.target + wobble * 2),
                                     intrinsics: base.intrinsics)
            let s = try rig.step()
            #expect(s.focusMode == .tapToAutoFocus)
            #expect(s.lensPosition == lensAtTap)
        }

        // A different view: back to continuous auto within a few frames, searching again.
        rig.camera = SimulatedRig.orbitCamera(degrees: 140, radius: 1.6)
        let moved = try rig.run(until: { $0.focusMode == .auto }, limit: 10)
        #expect(moved.last?.focusMode == .auto)
        #expect(moved.count >= rig.meter.configuration.sceneChangeFrames)
        #expect(moved.dropLast().allSatisfy { $0.focusMode == .tapToAutoFocus })
        let refocus = try rig.run(until: { $0.focus.state == .converged }, limit: 20)
        #expect(refocus.last?.focus.state == .converged)
        #expect(refocus.contains { $0.focus.state == .metering })
        #expect(refocus.last?.lensPosition != lensAtTap)
        #expect(refocus.last?.region == MeteringArea(mode: .weighted).normalizedRect(width: rig.width, height: rig.height))
    }

    @Test func continuousAutoFocusFollowsTheScene() throws {
        // Default mode: auto, centre-weighted; starting focused far too close.
        let rig = try SimulatedRig(lens: LensState(focusDistance: 0.25))
        let first = try rig.run(until: { $0.focus.state == .converged }, limit: 15)
        #expect(first.last?.focus.state == .converged)
        #expect(first.last?.focusMode == .auto)
        let area = MeteringArea(mode: .weighted)
        let peak = try rig.peakSharpness(area: area)
        #expect(try rig.sharpness(lensPosition: #require(first.last?.lensPosition), area: area) >= 0.9 * peak.sharpness)
        // Stays converged on an unchanged view.
        let still = try rig.run(30)
        #expect(still.allSatisfy { $0.focus.state == .converged })

        // Walk up to the ball: the centre gets much closer, sharpness collapses, it searches again.
        rig.camera = SimulatedRig.camera(eye: Vector3(0, 0.9, 0.9), target: SimulatedRig.target)
        let again = try rig.run(until: { $0.focus.state == .metering }, limit: 10)
        #expect(again.last?.focus.state == .metering)
        let settled = try rig.run(until: { $0.focus.state == .converged }, limit: 20)
        #expect(settled.last?.focus.state == .converged)
        let newPeak = try rig.peakSharpness(area: area)
        #expect(try rig.sharpness(lensPosition: #require(settled.last?.lensPosition), area: area) >= 0.9 * newPeak.sharpness)
    }

    @Test func flatContrastDiverges() throws {
        // Looking up into the sky: a smooth gradient, nothing to focus on.
        let camera = SimulatedRig.camera(eye: Vector3(0, 1.6, 3), target: Vector3(0, 6, -3))
        let rig = try SimulatedRig(camera: camera)
        try rig.meter.focus(point: NormalizedPoint(x: 0.5, y: 0.3), mode: .tapToLockFocus)
        let run = try rig.run(until: { $0.focus.state != .metering }, limit: 15)
        #expect(run.last?.focus.state == .diverged)
        #expect(try rig.step().focus.state == .locked)
    }

    @Test(arguments: [2, 3])
    func longerPipelineWithMatchingLatency(latency: Int) throws {
        var configuration = CameraMeter.Configuration()
        configuration.frameLatency = latency
        let rig = try SimulatedRig(lens: LensState(focusDistance: 0.25), configuration: configuration, renderDelay: latency)
        let tap = try #require(rig.camera.project(Self.targets[0].point)).point
        try rig.meter.focus(point: tap, mode: .tapToLockFocus)
        let run = try rig.run(until: { $0.focus.state != .metering }, limit: 15 + 12 * (latency - 1))
        #expect(run.last?.focus.state == .converged)
        let area = MeteringArea(mode: .spot, point: tap)
        let peak = try rig.peakSharpness(area: area)
        #expect(try rig.sharpness(lensPosition: #require(run.last?.lensPosition), area: area) >= 0.95 * peak.sharpness)
    }

    @Test func settingsReportedWithTheFrameReplaceTheLatencyGuess() throws {
        // Lens changes show 3 frames late, the meter is left at its default latency of 1,
        // but every frame comes with the lens it was rendered with.
        let rig = try SimulatedRig(lens: LensState(focusDistance: 0.25, exposure: 0.4), renderDelay: 3)
        rig.reportsCapturedSettings = true
        let tap = try #require(rig.camera.project(Self.targets[1].point)).point
        try rig.meter.meter(MeterRequest(point: tap, routines: [.focus, .exposure], meteringMode: .spot))
        let run = try rig.run(until: { $0.focus.state == .converged }, limit: 40)
        #expect(run.last?.focus.state == .converged)
        let area = MeteringArea(mode: .spot, point: tap)
        let peak = try rig.peakSharpness(area: area)
        #expect(try rig.sharpness(lensPosition: #require(run.last?.lensPosition), area: area) >= 0.95 * peak.sharpness)
        let settled = try rig.run(until: { $0.exposure.state == .locked }, limit: 20)
        #expect(abs(try #require(settled.last?.exposure.measure) - 118) <= 11.8)
    }

    @Test func retapMovesTheLock() throws {
        let rig = try SimulatedRig(lens: LensState(focusDistance: 0.25))
        try rig.meter.focus(point: #require(rig.camera.project(Self.targets[0].point)).point, mode: .tapToLockFocus)
        _ = try rig.run(until: { $0.focus.state == .locked }, limit: 20)
        let first = rig.meter.status.lensPosition
        // Tap the ground close to the camera: a new search, a new lock.
        try rig.meter.focus(point: NormalizedPoint(x: 0.5, y: 0.97), mode: .tapToLockFocus)
        let next = try rig.step()
        #expect(next.focus.state == .metering)
        let run = try rig.run(until: { $0.focus.state == .locked }, limit: 20)
        #expect(run.last?.focus.state == .locked)
        #expect(run.last?.lensPosition != first)
    }
}
