import CameraControl
import SyntheticCamera
import TestSupport
import Testing

/// The simulated camera's settings and their mapping onto `LensState`.
@Suite(.tags(.rendering)) struct SimulatedCameraBackendTests {
    @Test func reportsAllFourSettings() {
        let backend = SimulatedCameraBackend(lens: LensControl())
        #expect(Set(backend.capabilities.keys) == Set(CameraSetting.allCases))
        #expect(backend.capabilities[.exposureMs]?.minimum == 0.1 && backend.capabilities[.exposureMs]?.maximum == 33)
        #expect(backend.capabilities[.gain]?.maximum == 8)
        #expect(backend.capabilities[.whiteBalanceKelvin]?.minimum == 2800)
        #expect(backend.name == "simulated")
    }

    @Test func lensPositionIsLinearInDioptres() {
        #expect(abs(SimulatedCameraBackend.focusDistance(lensPosition: 0) - 50) < 1e-9)
        #expect(abs(SimulatedCameraBackend.focusDistance(lensPosition: 1) - 0.25) < 1e-9)
        let mid = SimulatedCameraBackend.focusDistance(lensPosition: 0.5)
        #expect(abs(1 / mid - (0.02 + 4) / 2) < 1e-9)
        for d in [0.3, 1.0, 3.0, 12.0] {
            let p = SimulatedCameraBackend.lensPosition(focusDistance: d)
            #expect(abs(SimulatedCameraBackend.focusDistance(lensPosition: p) - d) < 1e-9)
        }
        #expect(SimulatedCameraBackend.lensPosition(focusDistance: .infinity) == 0)
        #expect(SimulatedCameraBackend.lensPosition(focusDistance: 0.1) == 1)
    }

    @Test func settingsDriveTheLens() throws {
        let lens = LensControl()
        let backend = SimulatedCameraBackend(lens: lens)
        #expect(abs(backend.value(of: .exposureMs)! - 16.67) < 1e-6)
        try backend.set(.lensPosition, to: 0.25)
        try backend.set(.exposureMs, to: 25.005)
        try backend.set(.gain, to: 2.5)
        try backend.set(.whiteBalanceKelvin, to: 4000)
        let l = lens.current
        #expect(abs(1 / Double(l.focusDistance) - (0.02 + 0.25 * 3.98)) < 1e-5)
        #expect(abs(l.exposure - 1.5) < 1e-6 && l.gain == 2.5 && l.whiteBalanceKelvin == 4000)
        // Values come back exactly as sent.
        #expect(backend.value(of: .lensPosition) == 0.25 && backend.value(of: .exposureMs) == 25.005)
        // Someone else moving the lens is seen too.
        try lens.update { $0.gain = 3 }
        #expect(backend.value(of: .gain) == 3)
    }

    @Test func valuesAreClampedAndNonsenseRefused() throws {
        let backend = SimulatedCameraBackend(lens: LensControl())
        try backend.set(.lensPosition, to: 1.5)
        try backend.set(.exposureMs, to: 100)
        try backend.set(.gain, to: 0.2)
        try backend.set(.whiteBalanceKelvin, to: 1500)
        #expect(backend.value(of: .lensPosition) == 1 && backend.value(of: .exposureMs) == 33)
        #expect(backend.value(of: .gain) == 1 && backend.value(of: .whiteBalanceKelvin) == 2800)
        #expect(throws: CameraControlError.invalidValue(.gain, .infinity)) { try backend.set(.gain, to: .infinity) }
    }
}
