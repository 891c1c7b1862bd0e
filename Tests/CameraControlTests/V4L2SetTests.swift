#if os(Linux)
import CameraControl
import Glibc
import Testing

@Suite("V4L2 set: auto off first, then the value")
struct V4L2SetTests {
    private func webcam() throws -> (FakeV4L2Device, V4L2CameraBackend) {
        let device = FakeV4L2Device(controls: V4L2FakeCameras.webcam())
        let backend = try V4L2CameraBackend(device: device)
        device.clearCalls()
        return (device, backend)
    }

    @Test func autoFocusIsTurnedOffBeforeTheManualValueAndOnlyOnce() throws {
        let (device, backend) = try webcam()
        try backend.set(.lensPosition, to: 0.5)
        #expect(device.calls == [.get(.focusAuto), .set(.focusAuto, 0), .query(.focusAbsolute), .set(.focusAbsolute, 125)])
        device.clearCalls()
        try backend.set(.lensPosition, to: 0.2)
        #expect(device.calls == [.get(.focusAuto), .query(.focusAbsolute), .set(.focusAbsolute, 50)])
        #expect(backend.isAutomatic(.lensPosition) == false)
    }

    @Test func exposureGoesFromAperturePriorityToManual() throws {
        let (device, backend) = try webcam()
        #expect(backend.isAutomatic(.exposureMs) == true)
        try backend.set(.exposureMs, to: 33.3)
        #expect(device.sets == [.set(.exposureAuto, 1), .set(.exposureAbsolute, 333)])
        #expect(abs(backend.value(of: .exposureMs)! - 33.3) < 1e-9)
    }

    @Test func whiteBalanceTurnsAutoWhiteBalanceOff() throws {
        let (device, backend) = try webcam()
        try backend.set(.whiteBalanceKelvin, to: 3200)
        #expect(device.sets == [.set(.autoWhiteBalance, 0), .set(.whiteBalanceTemperature, 3200)])
        #expect(backend.value(of: .whiteBalanceKelvin) == 3200)
    }

    @Test func gainWithoutAutoGainIsSetDirectly() throws {
        let (device, backend) = try webcam()
        try backend.set(.gain, to: 2)
        #expect(device.calls == [.query(.gain), .set(.gain, 36)]) // 1 + 36 × 7/255 ≈ 1.99
    }

    @Test func autoGainIsTurnedOffWhenPresent() throws {
        let device = V4L2FakeCameras.webcam {
            $0[.autoGain] = .init(type: .boolean, name: "Gain, Automatic", minimum: 0, maximum: 1, defaultValue: 1, value: 1)
            $0[.gain]!.master = .autoGain
        }
        let backend = try V4L2CameraBackend(device: device)
        #expect(backend.automaticSettings.contains(.gain))
        try backend.set(.gain, to: 1)
        #expect(device.sets == [.set(.autoGain, 0), .set(.gain, 0)])
    }

    @Test func unsupportedSettingThrowsNamingTheControlAndTouchesNothing() throws {
        let device = V4L2FakeCameras.webcam { $0[.whiteBalanceTemperature] = nil }
        let backend = try V4L2CameraBackend(device: device)
        device.clearCalls()
        let error = #expect(throws: CameraControlError.self) { try backend.set(.whiteBalanceKelvin, to: 5000) }
        guard case let .unsupported(setting, reason)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(setting == .whiteBalanceKelvin)
        #expect(reason.contains("V4L2_CID_WHITE_BALANCE_TEMPERATURE"))
        #expect(device.calls.isEmpty)
        #expect(backend.value(of: .whiteBalanceKelvin) == nil)
    }

    @Test func nonFiniteValueIsInvalid() throws {
        let (device, backend) = try webcam()
        #expect(throws: CameraControlError.invalidValue(.lensPosition, .infinity)) { try backend.set(.lensPosition, to: .infinity) }
        #expect(device.calls.isEmpty)
    }

    @Test(arguments: [EBUSY, EINVAL, EIO])
    func deviceRefusingTheValueSurfacesErrnoAndRestoresAuto(errno code: Int32) throws {
        let (device, backend) = try webcam()
        device.refuse(.set, .focusAbsolute, errno: code)
        let error = #expect(throws: CameraControlError.self) { try backend.set(.lensPosition, to: 0.5) }
        guard case let .deviceError(setting, reason)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(setting == .lensPosition)
        #expect(reason.contains("VIDIOC_S_CTRL V4L2_CID_FOCUS_ABSOLUTE (0x009a090a) = 125 on /dev/fake-video0"))
        #expect(reason.contains(String(cString: strerror(code))))
        #expect(device.sets == [.set(.focusAuto, 0), .set(.focusAbsolute, 125), .set(.focusAuto, 1)])
        #expect(device.current(.focusAuto) == 1)
    }

    @Test func deviceRefusingAutoOffNeverWritesTheValue() throws {
        let (device, backend) = try webcam()
        device.refuse(.set, .exposureAuto, errno: EBUSY)
        let error = #expect(throws: CameraControlError.self) { try backend.set(.exposureMs, to: 10) }
        guard case let .deviceError(setting, reason)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(setting == .exposureMs)
        #expect(reason.contains("V4L2_CID_EXPOSURE_AUTO (0x009a0901) = 1") && reason.contains("Device or resource busy"))
        #expect(device.sets == [.set(.exposureAuto, 1)])
    }

    @Test func controlStillInactiveAfterAutoOffIsReportedAndAutoRestored() throws {
        let device = V4L2FakeCameras.webcam { $0[.focusAbsolute]!.flags = .inactive }
        let backend = try V4L2CameraBackend(device: device)
        let error = #expect(throws: CameraControlError.self) { try backend.set(.lensPosition, to: 0.5) }
        guard case let .deviceError(_, reason)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(reason.contains("V4L2_CID_FOCUS_ABSOLUTE (0x009a090a) stays inactive after V4L2_CID_FOCUS_AUTO"))
        #expect(device.sets == [.set(.focusAuto, 0), .set(.focusAuto, 1)])
    }

    @Test(arguments: [
        (0.5, 125), (0.51, 130), (0.509, 125), (-1, 0), (2, 250), (0.999, 250),
    ] as [(Double, Int32)])
    func focusIsClampedAndRoundedToTheStep(value: Double, code: Int32) throws {
        let (device, backend) = try webcam()
        try backend.set(.lensPosition, to: value)
        #expect(device.current(.focusAbsolute) == code)
    }

    @Test(arguments: [(33.37, 334), (0.01, 3), (1000, 2047), (0.34, 3)] as [(Double, Int32)])
    func exposureIsClampedAndRounded(ms: Double, code: Int32) throws {
        let (device, backend) = try webcam()
        try backend.set(.exposureMs, to: ms)
        #expect(device.current(.exposureAbsolute) == code)
    }

    @Test func maximumOffTheStepGridIsNeverExceeded() throws {
        let device = V4L2FakeCameras.webcam { $0[.whiteBalanceTemperature]!.maximum = 6505 }
        let backend = try V4L2CameraBackend(device: device)
        try backend.set(.whiteBalanceKelvin, to: 6505)
        #expect(device.current(.whiteBalanceTemperature) == 6500)
    }

    @Test func rangeIsRequeriedOnEverySet() throws {
        let (device, backend) = try webcam()
        #expect(backend.capabilities[.exposureMs]?.maximum == 204.7)
        // A frame-rate change shrinks the longest exposure the sensor allows.
        device.update(.exposureAbsolute) { $0.maximum = 333 }
        try backend.set(.exposureMs, to: 100)
        #expect(device.current(.exposureAbsolute) == 333)
        #expect(backend.capabilities[.exposureMs]?.maximum == 33.3)
    }

    @Test func concurrentSetsTurnAutoOffOnce() async throws {
        let (device, backend) = try webcam()
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<16 { group.addTask { try? backend.set(.lensPosition, to: Double(i) / 16) } }
        }
        #expect(device.sets.filter { $0 == .set(.focusAuto, 0) }.count == 1)
        #expect(device.sets.count == 17)
    }
}
#endif
