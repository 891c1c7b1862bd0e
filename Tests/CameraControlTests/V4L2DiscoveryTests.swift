#if os(Linux)
import CameraControl
import Glibc
import Testing

@Suite("V4L2 control discovery")
struct V4L2DiscoveryTests {
    @Test func webcamOffersEverySettingAndDiscoveryWritesNothing() throws {
        let device = FakeV4L2Device(controls: V4L2FakeCameras.webcam())
        let backend = try V4L2CameraBackend(device: device)
        #expect(Set(backend.capabilities.keys) == Set(CameraSetting.allCases))
        #expect(backend.automaticSettings == [.lensPosition, .exposureMs, .whiteBalanceKelvin])
        #expect(backend.name == "v4l2 /dev/fake-video0")
        #expect(device.sets.isEmpty)
        for setting in CameraSetting.allCases { #expect(backend.unsupportedReason(setting) == nil) }
    }

    @Test func absentControlIsUnsupportedWithItsCID() throws {
        let device = V4L2FakeCameras.webcam { $0[.whiteBalanceTemperature] = nil }
        let backend = try V4L2CameraBackend(device: device)
        #expect(backend.capabilities[.whiteBalanceKelvin] == nil)
        #expect(!backend.automaticSettings.contains(.whiteBalanceKelvin))
        let reason = try #require(backend.unsupportedReason(.whiteBalanceKelvin))
        #expect(reason.contains("no V4L2_CID_WHITE_BALANCE_TEMPERATURE (0x0098091a)"))
        #expect(reason.contains("/dev/fake-video0"))
    }

    @Test func disabledControlIsSkipped() throws {
        let device = V4L2FakeCameras.webcam { $0[.focusAbsolute]!.flags = .disabled }
        let backend = try V4L2CameraBackend(device: device)
        #expect(backend.capabilities[.lensPosition] == nil)
        #expect(backend.unsupportedReason(.lensPosition)?.contains("V4L2_CID_FOCUS_ABSOLUTE (0x009a090a) is disabled") == true)
    }

    @Test func readOnlyControlIsUnsupported() throws {
        let device = V4L2FakeCameras.webcam { $0[.gain]!.flags = .readOnly }
        let backend = try V4L2CameraBackend(device: device)
        #expect(backend.capabilities[.gain] == nil)
        #expect(backend.unsupportedReason(.gain)?.contains("V4L2_CID_GAIN (0x00980913) is read-only") == true)
    }

    @Test func inactiveControlIsStillDiscovered() throws {
        // The webcam's manual controls are inactive at power-on (their auto modes are on).
        let device = FakeV4L2Device(controls: V4L2FakeCameras.webcam())
        #expect(try device.queryControl(.focusAbsolute)?.flags.contains(.inactive) == true)
        let backend = try V4L2CameraBackend(device: device)
        #expect(backend.capabilities[.lensPosition] != nil)
    }

    @Test(arguments: [true, false])
    func gainFallsBackToAnalogueGain(gainDisabled: Bool) throws {
        let device = V4L2FakeCameras.webcam { table in
            if gainDisabled { table[.gain]!.flags = .disabled } else { table[.gain] = nil }
            table[.analogueGain] = .init(name: "Analogue Gain", minimum: 16, maximum: 248, defaultValue: 16, value: 16)
        }
        let backend = try V4L2CameraBackend(device: device)
        let range = try #require(backend.capabilities[.gain])
        #expect(range.minimum == 1 && range.maximum == 8)
        try backend.set(.gain, to: 8)
        #expect(device.sets == [.set(.analogueGain, 248)])
    }

    @Test func noGainAtAllNamesBothCIDs() throws {
        let backend = try V4L2CameraBackend(device: V4L2FakeCameras.webcam { $0[.gain] = nil })
        let reason = try #require(backend.unsupportedReason(.gain))
        #expect(reason.contains("V4L2_CID_GAIN") && reason.contains("V4L2_CID_ANALOGUE_GAIN"))
    }

    @Test func exposureMenuWithoutManualModeIsUnsupported() throws {
        let device = V4L2FakeCameras.webcam { $0[.exposureAuto]!.menuItems = [3] }
        let backend = try V4L2CameraBackend(device: device)
        #expect(backend.capabilities[.exposureMs] == nil)
        #expect(backend.unsupportedReason(.exposureMs)?.contains("V4L2_CID_EXPOSURE_AUTO (0x009a0901) offers no manual mode") == true)
    }

    @Test func queryFailureOtherThanAbsentFailsDiscovery() {
        let device = FakeV4L2Device(controls: V4L2FakeCameras.webcam())
        device.refuse(.query, .exposureAbsolute, errno: EIO)
        let error = #expect(throws: V4L2Error.self) { try V4L2CameraBackend(device: device) }
        #expect(error?.errno == EIO)
        #expect(error?.description.contains("VIDIOC_QUERYCTRL V4L2_CID_EXPOSURE_ABSOLUTE") == true)
    }

    /// The labels changed in Linux 5.16; the CIDs did not. Discovery, capabilities and
    /// the ioctls issued are the same whatever the driver calls its controls.
    @Test(arguments: [
        V4L2FakeCameras.labelsSince516, V4L2FakeCameras.labelsBefore516,
        V4L2FakeCameras.labelsMixed, V4L2FakeCameras.labelsScrambled,
    ])
    func controlLabelsAreIrrelevant(labels: [V4L2ControlID: String]) throws {
        let reference = FakeV4L2Device(controls: V4L2FakeCameras.webcam())
        let device = FakeV4L2Device(controls: V4L2FakeCameras.webcam(labels: labels))
        let expected = try V4L2CameraBackend(device: reference)
        let backend = try V4L2CameraBackend(device: device)
        #expect(backend.capabilities == expected.capabilities)
        #expect(backend.automaticSettings == expected.automaticSettings)
        for b in [expected, backend] {
            try b.set(.exposureMs, to: 10)
            try b.set(.lensPosition, to: 1)
            try b.set(.whiteBalanceKelvin, to: 3200)
        }
        #expect(device.calls == reference.calls)
        #expect(try device.queryControl(.exposureAuto)?.name == labels[.exposureAuto])
    }

    @Test func controlIDsDescribeThemselves() {
        #expect(V4L2ControlID.focusAbsolute.description == "V4L2_CID_FOCUS_ABSOLUTE (0x009a090a)")
        #expect(V4L2ControlID.exposureAbsolute.description == "V4L2_CID_EXPOSURE_ABSOLUTE (0x009a0902)")
        #expect(V4L2ControlID(rawValue: 0x0098_0900).description == "CID 0x00980900")
        #expect(V4L2ControlID.gain.isUserClass && !V4L2ControlID.focusAuto.isUserClass)
    }
}
#endif
