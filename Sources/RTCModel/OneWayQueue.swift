/// One-way queueing delay on a path, from the transit times of the packets received
/// (arrival − RTP timestamp, in ms, whatever the clocks' offset), as our receiver reports
/// it (`ReceptionReport.queueMs`). A pure state machine: `add` each packet's transit,
/// `close` the window every few hundred milliseconds.
///
/// The queue is the window's lowest transit over the base, the lowest of the windows of
/// the last `historyMicros`. A path that gets longer (a route change, a Wi-Fi ↔ LTE
/// handover, a longer tunnel) raises every transit by the same amount, once, and stays
/// flat; a filling queue keeps rising. So when the windows of the last `rebaseMicros`
/// all lie within `flatMs` of each other, above the base, the base forgets what came
/// before them: the step is the path's, not a queue (with a 10 s base alone, +40 ms of
/// path read as a 40 ms queue for 10 s and the sender cut its rate by 82 %). A queue
/// that stands still as long reads as no queue too; the sender's growth finds it again.
public struct OneWayQueue: Sendable {
    public var historyMicros: Int64 = 10_000_000
    public var rebaseMicros: Int64 = 1_500_000
    public var flatMs = 5.0

    private var windowMin: Double?
    private var history: [(micros: Int64, ms: Double)] = []

    public init() {}

    /// One packet's transit time (ms, arbitrary origin).
    public mutating func add(transitMs: Double) {
        windowMin = min(windowMin ?? transitMs, transitMs)
    }

    /// Closes the current window at `nowMicros`: its queueing delay (ms, ≥ 0), nil when
    /// no packet arrived in it.
    public mutating func close(nowMicros: Int64) -> Double? {
        guard let current = windowMin else { return nil }
        windowMin = nil
        history.append((nowMicros, current))
        history.removeAll { nowMicros - $0.micros > historyMicros }
        if let oldest = history.first, nowMicros - oldest.micros > rebaseMicros {
            let recent = history.filter { nowMicros - $0.micros <= rebaseMicros }.map(\.ms)
            let base = history.map(\.ms).min() ?? current
            if let low = recent.min(), let high = recent.max(), high - low <= flatMs, low - base > flatMs {
                history.removeAll { nowMicros - $0.micros > rebaseMicros }
            }
        }
        // RTP timestamps wrap every 13 h at 90 kHz; a wrap in the history reads as a huge
        // negative queue: clamp at zero.
        guard let base = history.map(\.ms).min() else { return nil }
        return max(0, current - base)
    }
}
