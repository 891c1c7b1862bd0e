import PoseCastKit
import RTCSession
import Synchronization
import Voice

/// A microphone or speaker whose sound server goes away under a running node (killed,
/// restarted, the device unplugged): stopped and reported once instead of an error per
/// read (thousands a second from a microphone), the rest of the voice and the video
/// untouched, opened again as soon as it can be. The speaker, reopened, stays silent in
/// the one test of it so far (open work).
extension PublisherVoice {
    /// What happened to a device: lost (with the element's error), or back.
    public struct DeviceChange: Sendable {
        public var device: String
        public var lost: Bool
        public var message: String
    }

    /// The device elements (the microphone's source, the speaker's sink) and, for each, the
    /// elements to restart with it: the speaker's mixer and what feeds it stop pushing when
    /// its sink goes (flushing), and start again only with a state change of their own.
    /// (Left blocked, they kept the publisher from stopping on SIGTERM.)
    private var devices: [(element: Element, restart: [Element])] {
        var list: [(Element, [Element])] = []
        if let source = capture?.elements.first { list.append((source, [source])) }
        if let playback, let speakerMixer, let sink = playback.elements.last {
            list.append((sink, speakerFeeds + [speakerMixer] + playback.elements))
        }
        return list
    }

    /// Whether bus errors from `source` (an element name) are this voice's to report.
    public func claimsErrors(from source: String) -> Bool {
        devices.contains { source.hasPrefix($0.element.name) }
    }

    /// Watches the devices' errors; `report` is called once when one is lost (from the
    /// posting thread) and once when it is open again (from the state worker).
    public func watchDevices(_ report: @escaping @Sendable (DeviceChange) -> Void) {
        let devices = self.devices
        guard !devices.isEmpty else { return }
        deviceReport.withLock { $0 = report }
        pipeline.addObserver { [weak self] message in
            guard let self, case let .error(from, text, _) = message,
                  let device = devices.first(where: { from.hasPrefix($0.element.name) })?.element else { return }
            guard self.deviceLoss.withLock({ $0.failed(device.name, nowNanos: MonotonicClock.nanos()) }) else { return }
            report(DeviceChange(device: device.name, lost: true, message: "\(from): \(text)"))
            // Stopped off the streaming thread that posted the error; locked, so that the
            // pipeline's own state changes (its stop among them) leave it alone.
            StateWorker.shared.submit {
                device.lockState(true)
                device.stopOnThisThread()
            }
        }
    }

    /// Tries the lost devices again when their time has come (the status loop calls it each
    /// second): open (READY connects to the sound server), then running with the rest.
    public func retryLostDevices() {
        let due = deviceLoss.withLock { $0.due(nowNanos: MonotonicClock.nanos()) }
        guard !due.isEmpty, let report = deviceReport.withLock({ $0 }) else { return }
        for (device, restart) in devices where due.contains(device.name) {
            StateWorker.shared.submit { [weak self] in
                guard let self else { return }
                device.lockState(false)
                var opened = device.readyOnThisThread()
                if opened {
                    for e in restart where e !== device { _ = e.readyOnThisThread() }
                    VoiceDevices.startWithoutPreroll(device)
                    // Downstream first, as elements are added.
                    for e in restart.reversed() { opened = e.syncStateWithParent() && opened }
                }
                if !opened {
                    device.stopOnThisThread()
                    device.lockState(true)
                }
                if self.deviceLoss.withLock({ $0.retried(device.name, opened: opened, nowNanos: MonotonicClock.nanos()) }) {
                    report(DeviceChange(device: device.name, lost: false, message: "\(device.name) open again"))
                }
            }
        }
    }
}
