#if os(Linux)
import CameraControl
import Testing

@Suite("V4L2 restoreAuto gives control back to the camera")
struct V4L2RestoreAutoTests {
    @Test func focusAutoIsTurnedBackOn() throws {
        let device = FakeV4L2Device(controls: V4L2FakeCameras.webcam())
        let backend = try V4L2CameraBackend(device: device)
        try backend.set(.lensPosition, to: 0.3)
        device.clearCalls()
        try backend.restoreAuto(.lensPosition)
        #expect(device.calls == [.get(.focusAuto), .set(.focusAuto, 1)])
        #expect(backend.isAutomatic(.lensPosition) == true)
    }

    @Test func alreadyAutomaticIsLeftAlone() throws {
        let device = FakeV4L2Device(controls: V4L2FakeCameras.webcam())
        let backend = try V4L2CameraBackend(device: device)
        device.clearCalls()
        try backend.restoreAuto(.exposureMs)
        #expect(device.calls == [.get(.exposureAuto)])
    }

    /// Aperture priority is the only automatic mode most UVC webcams offer.
    @Test func exposureReturnsToAperturePriority() throws {
        let device = FakeV4L2Device(controls: V4L2FakeCameras.webcam())
        let backend = try V4L2CameraBackend(device: device)
        try backend.set(.exposureMs, to: 10)
        try backend.restoreAuto(.exposureMs)
        #expect(device.current(.exposureAuto) == 3)
    }

    @Test(arguments: [(Int32(0), Int32(0)), (3, 3), (1, 0)])
    func exposurePrefersTheCamerasDefaultAutoMode(defaultMode: Int32, restored: Int32) throws {
        let device = V4L2FakeCameras.webcam {
            $0[.exposureAuto]!.menuItems = [0, 1, 3]
            $0[.exposureAuto]!.defaultValue = defaultMode
        }
        let backend = try V4L2CameraBackend(device: device)
        try backend.set(.exposureMs, to: 10)
        try backend.restoreAuto(.exposureMs)
        #expect(device.current(.exposureAuto) == restored)
    }

    @Test func noAutomaticModeIsUnsupported() throws {
        let device = FakeV4L2Device(controls: V4L2FakeCameras.webcam())
        let backend = try V4L2CameraBackend(device: device)
        let error = #expect(throws: CameraControlError.self) { try backend.restoreAuto(.gain) }
        guard case let .unsupported(setting, reason)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(setting == .gain && reason.contains("V4L2_CID_AUTOGAIN"))
        #expect(device.sets.isEmpty)
    }

    @Test func unsupportedSettingCannotBeRestored() throws {
        let backend = try V4L2CameraBackend(device: V4L2FakeCameras.webcam { $0[.whiteBalanceTemperature] = nil })
        #expect(throws: CameraControlError.self) { try backend.restoreAuto(.whiteBalanceKelvin) }
    }
}
#endif
