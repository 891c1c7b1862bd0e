#if os(Linux)
import CameraControl
import Testing

@Suite("V4L2 ranges in CameraSetting units")
struct V4L2RangeTests {
    @Test func focusRangeIsNormalisedLargerNearer() throws {
        let backend = try V4L2CameraBackend(device: FakeV4L2Device(controls: V4L2FakeCameras.webcam()))
        // 0…250 step 5, default 0 (infinity).
        #expect(backend.capabilities[.lensPosition] == SettingRange(minimum: 0, maximum: 1, step: 0.02, defaultValue: 0))
        #expect(backend.value(of: .lensPosition) == 40.0 / 250)
    }

    @Test func focusDirectionIsAParameter() throws {
        let device = FakeV4L2Device(controls: V4L2FakeCameras.webcam())
        let backend = try V4L2CameraBackend(device: device, focusDirection: .largerIsFarther)
        #expect(backend.capabilities[.lensPosition] == SettingRange(minimum: 0, maximum: 1, step: 0.02, defaultValue: 1))
        #expect(backend.value(of: .lensPosition) == 1 - 40.0 / 250)
        try backend.set(.lensPosition, to: 1) // nearest = smallest code
        #expect(device.current(.focusAbsolute) == 0)
        try backend.set(.lensPosition, to: 0.2)
        #expect(device.current(.focusAbsolute) == 200)
    }

    @Test func focusRangeNotStartingAtZero() throws {
        let device = V4L2FakeCameras.webcam { $0[.focusAbsolute]! = .init(name: "Focus", minimum: 100, maximum: 300, step: 1, defaultValue: 150, value: 200, master: .focusAuto) }
        let backend = try V4L2CameraBackend(device: device)
        #expect(backend.capabilities[.lensPosition] == SettingRange(minimum: 0, maximum: 1, step: 0.005, defaultValue: 0.25))
        #expect(backend.value(of: .lensPosition) == 0.5)
    }

    @Test func exposureIsIn100MicrosecondUnits() throws {
        let backend = try V4L2CameraBackend(device: FakeV4L2Device(controls: V4L2FakeCameras.webcam()))
        let range = try #require(backend.capabilities[.exposureMs])
        #expect(abs(range.minimum - 0.3) < 1e-12 && abs(range.maximum - 204.7) < 1e-12)
        #expect(abs(range.step - 0.1) < 1e-12 && range.defaultValue == 25)
        #expect(abs(backend.value(of: .exposureMs)! - 15.6) < 1e-12)
    }

    @Test func whiteBalanceIsKelvin() throws {
        let backend = try V4L2CameraBackend(device: FakeV4L2Device(controls: V4L2FakeCameras.webcam()))
        #expect(backend.capabilities[.whiteBalanceKelvin] == SettingRange(minimum: 2800, maximum: 6500, step: 10, defaultValue: 4000))
        #expect(backend.value(of: .whiteBalanceKelvin) == 4600)
    }

    @Test(arguments: [(V4L2GainMapping.default, 8.0), (V4L2GainMapping(maximumGain: 16), 16.0)])
    func gainIsLinearFromUnityAtTheMinimumCode(mapping: V4L2GainMapping, top: Double) throws {
        let device = FakeV4L2Device(controls: V4L2FakeCameras.webcam())
        let backend = try V4L2CameraBackend(device: device, gainMapping: mapping)
        let range = try #require(backend.capabilities[.gain])
        #expect(range.minimum == 1 && range.maximum == top && range.defaultValue == 1)
        try backend.set(.gain, to: top)
        #expect(device.current(.gain) == 255)
        #expect(backend.value(of: .gain) == top)
    }
}
#endif
