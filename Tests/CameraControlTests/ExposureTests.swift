import CameraControl
import PoseCastKit
import SyntheticCamera
import TestSupport
import Testing

/// The exposure routine on the simulated camera (linear sensor: code values scale with
/// exposure time × gain until they clip).
@Suite(.tags(.rendering)) struct ExposureTests {
    /// A scene of one flat tone: ground and (looking down) nothing else.
    static func flatScene(_ level: Float) -> SyntheticScene {
        let tone = SceneColor(level, level, level)
        return SyntheticScene(ground: GroundStyle(light: tone, dark: tone, mottle: 0))
    }

    static let lookingDown = SimulatedRig.camera(eye: Vector3(0, 1.6, 0.01), target: Vector3(0, 0, 0))

    @Test(arguments: [
        ("ball, far too dark", Float(0.05), Vector3(0, 0.3, 0)),
        ("ball, clipped", Float(4), Vector3(0, 0.3, 0)),
        ("tower, dark", Float(0.2), Vector3(1.0, 0.6, -1.1)),
        ("crate, bright", Float(2.5), Vector3(-0.9, 0.25, -0.7)),
    ])
    func spotReachesTargetBrightness(name: String, exposure: Float, target: Vector3) throws {
        let rig = try SimulatedRig(lens: LensState(exposure: exposure))
        let point = try #require(rig.camera.project(target)).point
        let outcome = try rig.meter.meter(MeterRequest(point: point, routines: [.exposure], meteringMode: .spot))
        #expect(outcome.applied == [.exposure])
        let run = try rig.run(until: { $0.exposure.state != .metering }, limit: 10)
        let last = try #require(run.last)
        #expect(last.exposure.state == .converged, "\(name): \(run.map(\.exposure))")
        let goal = rig.meter.configuration.targetBrightness
        let measured = rig.measureLast(MeteringArea(mode: .spot, point: point)).brightness
        #expect(abs(measured - goal) <= 0.1 * goal, "\(name): \(measured)")
        #expect(last.exposure.measure == measured)
        let next = try rig.step()
        #expect(next.exposure.state == .locked)
        #expect(next.exposureMs == last.exposureMs && next.gain == last.gain)
    }

    @Test func darkSceneUsesGainOnceExposureIsAtItsLongest() throws {
        let rig = try SimulatedRig(lens: LensState(exposure: 0.3), camera: Self.lookingDown, scene: Self.flatScene(30))
        let run = try rig.run(until: { $0.exposure.state == .converged }, limit: 10)
        let last = try #require(run.last)
        #expect(last.exposure.state == .converged)
        #expect(last.exposureMs == 33)
        #expect(try #require(last.gain) > 1.5)
        #expect(abs(try #require(last.exposure.measure) - 118) <= 11.8)
    }

    @Test func blackSceneDiverges() throws {
        let rig = try SimulatedRig(camera: Self.lookingDown, scene: Self.flatScene(0))
        let run = try rig.run(until: { $0.exposure.state == .diverged }, limit: 10)
        #expect(run.last?.exposure.state == .diverged)
        #expect(run.last?.exposureMs == 33 && run.last?.gain == 8)
    }

    @Test func continuousExposureFollowsTheScene() throws {
        let rig = try SimulatedRig(lens: LensState(exposure: 0.25))
        let first = try rig.run(until: { $0.exposure.state == .converged }, limit: 10)
        #expect(first.last?.exposure.state == .converged)
        let before = try #require(first.last?.exposureMs)
        // Turn towards the bright sky: the auto area brightens, exposure comes down.
        rig.camera = SimulatedRig.camera(eye: SimulatedRig.eye, target: Vector3(0, 3.5, -3))
        let after = try rig.run(until: { $0.exposure.state == .converged && $0.exposureMs != before }, limit: 30)
        #expect(try #require(after.last?.exposureMs) < before)
        #expect(abs(try #require(after.last?.exposure.measure) - 118) <= 11.8)
    }
}
