/// Sound devices lost under a running node (their server gone or restarted), and when to
/// try each again. A lost device is reported once, stopped (a source whose server is gone
/// posts an error per read: thousands a second, which starved the rest of the process),
/// and tried again every `retryNanos`; it is back once it opens again.
/// Pure: `PublisherVoice` feeds it bus errors and the clock.
public struct DeviceLoss: Sendable, Equatable {
    public static let retryNanos: UInt64 = 1_000_000_000
    private var lost: [String: UInt64] = [:]   // device → next retry
    private var retrying: Set<String> = []

    public init() {}

    public var lostDevices: [String] { lost.keys.sorted() }

    /// An error from `device`'s element: true when it was working until now (report it
    /// and stop it); false for its later errors, and for those of a retry under way.
    public mutating func failed(_ device: String, nowNanos: UInt64) -> Bool {
        guard lost[device] == nil else { return false }
        lost[device] = nowNanos + Self.retryNanos
        return true
    }

    /// The lost devices to try now (each at most once at a time).
    public mutating func due(nowNanos: UInt64) -> [String] {
        let ready = lost.filter { $0.value <= nowNanos && !retrying.contains($0.key) }.keys.sorted()
        retrying.formUnion(ready)
        return ready
    }

    /// A try is over: `opened` (the device is back: true returned, report it) or not (tried
    /// again `retryNanos` later).
    public mutating func retried(_ device: String, opened: Bool, nowNanos: UInt64) -> Bool {
        retrying.remove(device)
        guard lost[device] != nil else { return false }
        if opened {
            lost[device] = nil
            return true
        }
        lost[device] = nowNanos + Self.retryNanos
        return false
    }
}
