import Synchronization

/// The path's round trip the publisher's echoes of our reception reports measured
/// (`ReceptionReport.Echo`): written by the session's event handler, taken by the report
/// loop that owns the `JitterLatency` machine. Only the newest one waits.
final class EchoRoundTrips: Sendable {
    private let pending = Mutex<Double?>(nil)

    /// An echo of a report sent at `sentMicros` arrived at `nowMicros` (our monotonic
    /// clock): false when the time it names is not one we could have sent (in the future,
    /// or over 10 s ago), so a publisher cannot set our latency from nothing.
    @discardableResult
    func record(sentMicros: Int64, nowMicros: Int64) -> Bool {
        let micros = nowMicros - sentMicros
        guard micros >= 0, micros < 10_000_000 else { return false }
        pending.withLock { $0 = Double(micros) / 1000 }
        return true
    }

    /// The newest round trip (ms) not taken yet.
    func take() -> Double? {
        pending.withLock { pending in
            defer { pending = nil }
            return pending
        }
    }
}
