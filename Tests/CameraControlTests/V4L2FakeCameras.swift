#if os(Linux)
import CameraControl

/// Control tables of fake cameras, modelled on a UVC webcam.
enum V4L2FakeCameras {
    /// The labels Linux 5.16 and later report.
    static let labelsSince516: [V4L2ControlID: String] = [
        .focusAuto: "Focus, Automatic Continuous", .focusAbsolute: "Focus (absolute)",
        .exposureAuto: "Auto Exposure", .exposureAbsolute: "Exposure Time, Absolute",
        .gain: "Gain", .autoWhiteBalance: "White Balance, Automatic",
        .whiteBalanceTemperature: "White Balance Temperature",
    ]
    /// The labels before Linux 5.16.
    static let labelsBefore516: [V4L2ControlID: String] = [
        .focusAuto: "Focus, Auto", .focusAbsolute: "Focus (absolute)",
        .exposureAuto: "Exposure, Auto", .exposureAbsolute: "Exposure (Absolute)",
        .gain: "Gain", .autoWhiteBalance: "White Balance Temperature, Auto",
        .whiteBalanceTemperature: "White Balance Temperature",
    ]
    /// New labels for focus, old ones for exposure and white balance.
    static let labelsMixed: [V4L2ControlID: String] = labelsSince516.merging(
        [.exposureAuto: "Exposure, Auto", .exposureAbsolute: "Exposure (Absolute)",
         .autoWhiteBalance: "White Balance Temperature, Auto"]) { $1 }
    /// Every label on the wrong control: proves nothing reads them.
    static let labelsScrambled: [V4L2ControlID: String] = [
        .focusAuto: "Exposure, Auto", .focusAbsolute: "White Balance Temperature",
        .exposureAuto: "Focus, Automatic Continuous", .exposureAbsolute: "Gain",
        .gain: "Exposure Time, Absolute", .autoWhiteBalance: "Auto Exposure",
        .whiteBalanceTemperature: "Focus (absolute)",
    ]

    /// A webcam in its power-on state: autofocus, aperture-priority exposure and auto
    /// white balance on, each manual control inactive until its auto control is off.
    /// Focus 0…250 step 5; exposure 3…2047 × 100 µs; gain 0…255 (no auto gain);
    /// white balance 2800…6500 K step 10.
    static func webcam(labels: [V4L2ControlID: String] = labelsSince516) -> [V4L2ControlID: FakeV4L2Device.Control] {
        typealias C = FakeV4L2Device.Control
        func label(_ id: V4L2ControlID) -> String { labels[id] ?? "?" }
        return [
            .focusAuto: C(type: .boolean, name: label(.focusAuto), minimum: 0, maximum: 1, defaultValue: 1, value: 1),
            .focusAbsolute: C(name: label(.focusAbsolute), minimum: 0, maximum: 250, step: 5, defaultValue: 0, value: 40,
                              master: .focusAuto, masterManual: 0),
            .exposureAuto: C(type: .menu, name: label(.exposureAuto), minimum: 0, maximum: 3, defaultValue: 3, value: 3,
                             menuItems: [1, 3]),
            .exposureAbsolute: C(name: label(.exposureAbsolute), minimum: 3, maximum: 2047, defaultValue: 250, value: 156,
                                 master: .exposureAuto, masterManual: 1),
            .gain: C(name: label(.gain), minimum: 0, maximum: 255, defaultValue: 0, value: 0),
            .autoWhiteBalance: C(type: .boolean, name: label(.autoWhiteBalance), minimum: 0, maximum: 1, defaultValue: 1, value: 1),
            .whiteBalanceTemperature: C(name: label(.whiteBalanceTemperature), minimum: 2800, maximum: 6500, step: 10,
                                        defaultValue: 4000, value: 4600, master: .autoWhiteBalance, masterManual: 0),
        ]
    }

    /// The webcam with `change` applied to its table.
    static func webcam(_ change: (inout [V4L2ControlID: FakeV4L2Device.Control]) -> Void) -> FakeV4L2Device {
        var table = webcam()
        change(&table)
        return FakeV4L2Device(controls: table)
    }
}
#endif
