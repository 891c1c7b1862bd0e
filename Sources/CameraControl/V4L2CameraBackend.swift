#if os(Linux)
import Synchronization

/// A V4L2 camera driven by control id: focus, exposure time, gain and white balance.
///
/// Controls are discovered once, by CID, when the backend is made. `set` turns the
/// setting's automatic mode off first (only when it is on), then writes the value
/// clamped into the device's range and rounded to its step; if the value cannot be
/// written the automatic mode is put back as it was. `restoreAuto` hands a setting back
/// to the camera.
///
/// Thread safety: `set` and `restoreAuto` are serialised (each is a sequence of
/// ioctls); `capabilities` never waits for the device; `value(of:)` reads the device
/// directly and may run beside a `set`.
public final class V4L2CameraBackend: CameraBackend {
    public let name: String
    public let device: any V4L2Device
    private let unsupported: [CameraSetting: String]
    private let controls: Mutex<[CameraSetting: V4L2SettingControl]>
    /// Held for a whole set / restore sequence.
    private let writer = Mutex(())

    /// Discovers `device`'s controls. Throws when a query fails (other than "no such
    /// control", which makes a setting unsupported).
    public init(device: any V4L2Device, focusDirection: V4L2FocusDirection = .largerIsNearer,
                gainMapping: V4L2GainMapping = .default) throws(V4L2Error) {
        var found: [CameraSetting: V4L2SettingControl] = [:]
        var reasons: [CameraSetting: String] = [:]
        for setting in CameraSetting.allCases {
            let units = V4L2Discovery.units(for: setting, focus: focusDirection, gain: gainMapping)
            switch try V4L2Discovery.discover(setting, on: device, units: units) {
            case let .supported(control): found[setting] = control
            case let .unsupported(reason): reasons[setting] = reason
            }
        }
        self.device = device
        name = "v4l2 \(device.path)"
        unsupported = reasons
        controls = Mutex(found)
    }

    /// Opens the device node at `path` (see `V4L2FileDevice`) and discovers its controls.
    public convenience init(path: String, focusDirection: V4L2FocusDirection = .largerIsNearer,
                            gainMapping: V4L2GainMapping = .default) throws(V4L2Error) {
        try self.init(device: V4L2FileDevice(path: path), focusDirection: focusDirection, gainMapping: gainMapping)
    }

    public var capabilities: [CameraSetting: SettingRange] {
        controls.withLock { $0.mapValues(\.range) }
    }

    /// The settings the camera can also run automatically (and so `restoreAuto` accepts).
    public var automaticSettings: Set<CameraSetting> {
        controls.withLock { Set($0.values.filter { !($0.auto?.automaticValues.isEmpty ?? true) }.map(\.setting)) }
    }

    /// Why `setting` is unsupported ("no V4L2_CID_WHITE_BALANCE_TEMPERATURE (0x0098091a)
    /// on /dev/video0"), nil when it is supported.
    public func unsupportedReason(_ setting: CameraSetting) -> String? { unsupported[setting] }

    /// The device's current value, in the setting's units (nil when unsupported or the
    /// read fails). In automatic mode this is what the camera chose, where it says.
    public func value(of setting: CameraSetting) -> Double? {
        guard let control = control(setting), let code = try? device.getControl(control.info.id) else { return nil }
        return control.mapping.setting(fromCode: code)
    }

    /// Whether the camera's automatic mode owns `setting` now; nil when the setting is
    /// unsupported, has no automatic mode, or the read fails.
    public func isAutomatic(_ setting: CameraSetting) -> Bool? {
        guard let auto = control(setting)?.auto, let current = try? device.getControl(auto.id) else { return nil }
        return current != auto.manualValue
    }

    public func set(_ setting: CameraSetting, to value: Double) throws(CameraControlError) {
        guard value.isFinite else { throw .invalidValue(setting, value) }
        guard let discovered = control(setting) else { throw unsupportedError(setting) }
        try writer.withLock { _ throws(CameraControlError) in
            let previousAuto = try turnAutoOff(discovered)
            do throws(CameraControlError) {
                let control = try refreshed(discovered)
                if control.info.flags.contains(.inactive) {
                    let why = previousAuto != nil
                        ? "stays inactive after \(control.auto!.id) was switched to manual"
                        : "is inactive (an automatic mode owns it)"
                    throw .deviceError(setting, reason: "\(control.info.id) \(why) on \(device.path); the camera would ignore a manual value")
                }
                let code = control.mapping.code(for: value, in: control.info)
                do throws(V4L2Error) { try device.setControl(control.info.id, to: code) } catch { throw .deviceError(setting, reason: error.description) }
            } catch {
                if let previousAuto, let auto = discovered.auto { try? device.setControl(auto.id, to: previousAuto) }
                throw error
            }
        }
    }

    /// Hands `setting` back to the camera's automatic mode (no-op when already
    /// automatic). Throws `.unsupported` when the camera has no automatic mode for it.
    public func restoreAuto(_ setting: CameraSetting) throws(CameraControlError) {
        guard let control = control(setting) else { throw unsupportedError(setting) }
        guard let auto = control.auto, let preferred = auto.automaticValues.first else {
            let ids = V4L2Discovery.controls(for: setting)
            throw .unsupported(setting, reason: "no automatic mode (\(ids.auto) is absent or offers none) on \(device.path)")
        }
        try writer.withLock { _ throws(CameraControlError) in
            do throws(V4L2Error) {
                let current = try device.getControl(auto.id)
                if !auto.automaticValues.contains(current) { try device.setControl(auto.id, to: preferred) }
            } catch {
                throw .deviceError(setting, reason: error.description)
            }
        }
    }

    // MARK: - Steps

    private func control(_ setting: CameraSetting) -> V4L2SettingControl? {
        controls.withLock { $0[setting] }
    }

    private func unsupportedError(_ setting: CameraSetting) -> CameraControlError {
        .unsupported(setting, reason: unsupported[setting] ?? "not discovered on \(device.path)")
    }

    /// Switches the automatic mode to manual when it is on; returns the value it had
    /// (to put back on failure), nil when nothing was changed.
    private func turnAutoOff(_ control: V4L2SettingControl) throws(CameraControlError) -> Int32? {
        guard let auto = control.auto else { return nil }
        do {
            let current = try device.getControl(auto.id)
            guard current != auto.manualValue else { return nil }
            try device.setControl(auto.id, to: auto.manualValue)
            return current
        } catch {
            throw .deviceError(control.setting, reason: error.description)
        }
    }

    /// The value control queried again (its flags and range may have changed), and
    /// remembered for `capabilities`.
    private func refreshed(_ control: V4L2SettingControl) throws(CameraControlError) -> V4L2SettingControl {
        let info: V4L2ControlInfo?
        do { info = try device.queryControl(control.info.id) } catch { throw .deviceError(control.setting, reason: error.description) }
        guard let info, V4L2Discovery.unusable(info) == nil else {
            let why = info.flatMap(V4L2Discovery.unusable) ?? "\(control.info.id) has disappeared"
            throw .deviceError(control.setting, reason: "\(why) on \(device.path)")
        }
        var updated = control
        updated.info = info
        controls.withLock { $0[control.setting] = updated }
        return updated
    }
}
#endif
