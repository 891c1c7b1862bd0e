import CameraControl
import PoseCastKit
import SyntheticCamera
import TestSupport
import Testing

/// The control-channel commands: locks, their expiry on frame time, unlock, unsupported
/// routines, bad points, metering modes.
@Suite(.tags(.rendering)) struct MeterCommandTests {
    static let ball = Vector3(0, 0.3, 0)

    @Test func lockDurationExpiresOnFrameTime() throws {
        // Meter the bright ball: exposure comes down from nominal, then holds for 0.5 s.
        let rig = try SimulatedRig()
        let point = try #require(rig.camera.project(Self.ball)).point
        try rig.meter.meter(MeterRequest(point: point, lockDuration: 0.5, routines: [.exposure], meteringMode: .spot))
        let run = try rig.run(until: { $0.exposure.state == .converged }, limit: 10)
        #expect(run.last?.exposure.state == .converged)
        #expect(run.last?.lockRemaining == 0.5)
        let convergedAt = rig.lastFrameTime, end = convergedAt + 500_000_000
        let heldMs = try #require(run.last?.exposureMs)

        var expired = false
        for _ in 0..<30 {
            let s = try rig.step()
            if rig.lastFrameTime < end {
                #expect(s.exposure.state == .locked)
                #expect(s.exposureMs == heldMs)
                let remaining = try #require(s.lockRemaining)
                #expect(abs(remaining - Double(end - rig.lastFrameTime) / 1e9) < 1e-6)
            } else {
                // The first frame at or after the end: continuous again, on the auto area.
                #expect(s.exposure.state != .locked)
                #expect(s.lockRemaining == nil)
                #expect(s.region == MeteringArea(mode: .weighted).normalizedRect(width: rig.width, height: rig.height))
                expired = true
                break
            }
        }
        #expect(expired)
        // Continuous metering resumed: the darker centre-weighted area brings exposure back up.
        let resumed = try rig.run(until: { $0.exposureMs != heldMs }, limit: 10)
        #expect(try #require(resumed.last?.exposureMs) > heldMs)
    }

    @Test(arguments: [nil, 0, -1, Double.infinity])
    func lockWithoutAFiniteDurationHoldsForever(duration: Double?) throws {
        let rig = try SimulatedRig(width: 320, height: 240)
        let point = try #require(rig.camera.project(Self.ball)).point
        try rig.meter.meter(MeterRequest(point: point, lockDuration: duration, routines: [.exposure]))
        _ = try rig.run(until: { $0.exposure.state == .converged }, limit: 10)
        let held = try rig.run(300)  // 10 s of frames
        #expect(held.allSatisfy { $0.exposure.state == .locked && $0.lockRemaining == nil })
        #expect(Set(held.map(\.exposureMs)).count == 1)
    }

    @Test func unlockResumesMetering() throws {
        let rig = try SimulatedRig(width: 320, height: 240)
        let point = try #require(rig.camera.project(Self.ball)).point
        try rig.meter.meter(MeterRequest(point: point, routines: [.exposure, .whiteBalance], meteringMode: .spot))
        _ = try rig.run(until: { $0.exposure.state == .locked && $0.whiteBalance.state == .locked }, limit: 12)
        let held = try rig.run(40)
        #expect(held.allSatisfy { $0.exposure.state == .locked && $0.whiteBalance.state == .locked })
        let heldMs = try #require(held.last?.exposureMs)

        let outcome = try rig.meter.unlock(routines: [.exposure])
        #expect(outcome.applied == [.exposure] && outcome.skipped.isEmpty)
        let next = try rig.step()
        #expect(next.exposure.state != .locked)
        #expect(next.whiteBalance.state == .locked, "only what was unlocked moves")
        let resumed = try rig.run(until: { $0.exposureMs != heldMs }, limit: 10)
        #expect(resumed.last?.exposureMs != heldMs)
        #expect(resumed.allSatisfy { $0.exposure.state != .locked })
    }

    @Test func lockFreezesCurrentValues() throws {
        // Far too dark, but locked before the first frame: nothing moves.
        let rig = try SimulatedRig(width: 320, height: 240, lens: LensState(focusDistance: 0.3, exposure: 0.2, whiteBalanceKelvin: 3000))
        let outcome = try rig.meter.lock(routines: [.exposure, .whiteBalance])
        #expect(outcome.applied == [.exposure, .whiteBalance])
        let run = try rig.run(10)
        #expect(run.allSatisfy { $0.exposure.state == .locked && $0.whiteBalance.state == .locked })
        #expect(run.allSatisfy { $0.whiteBalanceKelvin == 3000 && abs($0.exposureMs! - 0.2 * 16.67) < 1e-6 })
        // Focus locked mid-search stops at the sharpest position it has seen, and stays.
        try rig.meter.focus(point: #require(rig.camera.project(Self.ball)).point, mode: .tapToAutoFocus)
        _ = try rig.run(4)
        #expect(rig.meter.status.focus.state == .metering)
        try rig.meter.lock(routines: [.focus])
        let locked = try rig.run(10)
        #expect(locked.allSatisfy { $0.focus.state == .locked })
        #expect(Set(locked.dropFirst().map(\.lensPosition)).count == 1)
    }

    @Test func unsupportedRoutinesThrowOrAreSkipped() throws {
        let rig = try SimulatedRig(width: 320, height: 240) { PartialBackend($0, without: [.whiteBalanceKelvin]) }
        let request = MeterRequest(point: NormalizedPoint(x: 0.5, y: 0.5), routines: [.exposure, .whiteBalance],
                                   throwIfUnsupported: true)
        #expect(throws: CameraMeterError.unsupported(routines: [.whiteBalance], camera: "partial simulated")) {
            try rig.meter.meter(request)
        }
        // A refused request changes nothing.
        #expect(try rig.step().exposure.state != .locked)

        var lenient = request
        lenient.throwIfUnsupported = false
        let outcome = try rig.meter.meter(lenient)
        #expect(outcome.applied == [.exposure])
        #expect(outcome.skipped == [.whiteBalance])
        let run = try rig.run(until: { $0.exposure.state == .locked }, limit: 10)
        #expect(run.last?.exposure.state == .locked)
        #expect(run.allSatisfy { $0.whiteBalance.state == .unsupported && $0.whiteBalanceKelvin == nil })
        #expect(rig.meter.supportedRoutines == [.exposure, .focus])

        #expect(throws: CameraMeterError.unsupported(routines: [.whiteBalance], camera: "partial simulated")) {
            try rig.meter.lock(routines: [.whiteBalance], throwIfUnsupported: true)
        }
        #expect(try rig.meter.unlock(routines: [.whiteBalance, .exposure]).skipped == [.whiteBalance])
        let error = CameraMeterError.unsupported(routines: [.whiteBalance], camera: "partial simulated")
        #expect(error.controlError(id: "7") == ControlError(id: "7", code: .unsupported, message: error.description))
    }

    @Test func focusOnACameraWithoutFocusIsRefused() throws {
        let rig = try SimulatedRig(width: 320, height: 240) { PartialBackend($0, without: [.lensPosition]) }
        #expect(throws: CameraMeterError.unsupported(routines: [.focus], camera: "partial simulated")) {
            try rig.meter.focus(point: NormalizedPoint(x: 0.5, y: 0.5), mode: .tapToLockFocus)
        }
        let outcome = try rig.meter.meter(MeterRequest(routines: [.focus]))
        #expect(outcome.applied.isEmpty && outcome.skipped == [.focus])
        let s = try rig.step()
        #expect(s.focus.state == .unsupported && s.lensPosition == nil)
    }

    @Test func pointsOutsideTheImageAreRefused() throws {
        let rig = try SimulatedRig(width: 320, height: 240)
        let outside = NormalizedPoint(x: 1.2, y: 0.5)
        #expect(throws: CameraMeterError.invalidPoint(outside)) { try rig.meter.focus(point: outside, mode: .tapToAutoFocus) }
        #expect(throws: CameraMeterError.self) {
            try rig.meter.meter(MeterRequest(point: NormalizedPoint(x: .nan, y: 0.5)))
        }
        #expect(CameraMeterError.invalidPoint(outside).code == .invalidValue)
    }

    @Test func meteringModeChangesTheAutoArea() throws {
        let rig = try SimulatedRig(width: 320, height: 240)
        _ = try rig.run(until: { $0.focus.state == .converged }, limit: 15)
        #expect(rig.meter.status.meteringMode == .weighted)
        let outcome = rig.meter.setMeteringMode(.uniform)
        #expect(outcome.applied == [.exposure, .focus, .whiteBalance])
        let s = try rig.step()
        #expect(s.meteringMode == .uniform)
        #expect(s.region == .full)
        #expect(s.focus.state == .metering, "continuous focus searches its new area")
        #expect(rig.meter.setMeteringMode(.uniform).applied.isEmpty, "no change, nothing to do")
        rig.meter.setMeteringMode(.spot)
        #expect(try rig.step().region == MeteringArea(mode: .spot).normalizedRect(width: 320, height: 240))
    }

    @Test func regionFollowsTheLatestTapAndStaysInTheImage() throws {
        let rig = try SimulatedRig(width: 320, height: 240)
        try rig.meter.focus(point: NormalizedPoint(x: 0.99, y: 0.01), mode: .tapToLockFocus)
        let s = try rig.step()
        #expect(s.region.x + s.region.width <= 1 && s.region.y >= 0)
        #expect(abs(s.region.width - 0.08) < 0.01)
        try rig.meter.meter(MeterRequest(point: NormalizedPoint(x: 0.2, y: 0.5), routines: [.exposure], meteringMode: .weighted))
        let t = try rig.step()
        #expect(t.region == MeteringArea(mode: .weighted, point: NormalizedPoint(x: 0.2, y: 0.5)).normalizedRect(width: 320, height: 240))
        #expect(t.focusMode == .tapToLockFocus && t.frameId == UInt32(rig.frameIndex - 1))
    }

    @Test func deviceErrorsAreReported() throws {
        let rig = try SimulatedRig(width: 320, height: 240, lens: LensState(exposure: 0.2)) { FailingBackend($0, failing: .exposureMs) }
        let s = try rig.step()
        #expect(s.exposure.state == .diverged)
        #expect(rig.meter.lastError == .deviceError(.exposureMs, reason: "stuck"))
        // Backs off instead of hammering the device every frame.
        let next = try rig.run(5)
        #expect(next.allSatisfy { $0.exposure.state == .diverged })
    }
}

/// A simulated camera whose one setting always fails.
final class FailingBackend: CameraBackend {
    let base: SimulatedCameraBackend
    let failing: CameraSetting
    var name: String { "failing simulated" }
    var capabilities: [CameraSetting: SettingRange] { base.capabilities }

    init(_ base: SimulatedCameraBackend, failing: CameraSetting) { self.base = base; self.failing = failing }

    func value(of setting: CameraSetting) -> Double? { base.value(of: setting) }

    func set(_ setting: CameraSetting, to value: Double) throws(CameraControlError) {
        if setting == failing { throw .deviceError(setting, reason: "stuck") }
        try base.set(setting, to: value)
    }
}
