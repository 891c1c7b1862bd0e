/// The sending side of transport-wide congestion control, without GStreamer: numbers
/// each packet as it leaves (`assign`, one sequence for media and retransmissions, as
/// they share the path), remembers when it left and its size, and turns the receiver's
/// feedback (`TransportFeedback`) into what our own receiver's `ReceptionReport` gives
/// the congestion controller: packets expected and lost, bytes that got through and the
/// time they took on the receiver's clock, and the one-way queueing delay
/// (`OneWayQueue` over arrival − departure, whatever the clocks' offset).
///
/// Measured from the packets' departures, so the queueing is the path's alone (the
/// pacer's hold comes before it), and from the receiver's network arrival times, which a
/// busy renderer or decoder does not delay: a browser's own estimate (REMB) reads its
/// CPU stalls as congestion.
public struct TransportFeedbackTracker: Sendable {
    /// What a run of feedback says, since the previous `take`.
    public struct Summary: Sendable, Equatable {
        /// Packets reported for the first time, and how many of those were reported lost
        /// (less those a later feedback said arrived after all).
        public var expected: UInt64 = 0
        public var lost: Int64 = 0
        /// Bytes of the packets that arrived, and the receiver-clock time from the last
        /// arrival before them to the last of them (ns).
        public var receivedBytes: UInt64 = 0
        public var receivedSpanNanos: UInt64 = 0
        /// The queueing delay of each window of `windowMicros` closed (ms).
        public var queueingMs: [Double] = []
        /// Feedback messages read (duplicates and unknown packets included).
        public var messages = 0
        public init() {}
    }

    private struct Sent {
        var seq: Int64
        var micros: Int64
        var bytes: Int
        /// 0 not reported yet, 1 reported received, 2 reported lost.
        var state: UInt8 = 0
    }

    /// How many departures are remembered (about 4 s at 2 Mbit/s).
    static let capacity = 1 << 12
    /// The queueing window: our own receiver reports five times a second; so is this.
    public var windowMicros: Int64 = 200_000

    private var sent: [Sent?] = Array(repeating: nil, count: Self.capacity)
    private var next: Int64 = 0
    private var lastArrivalMicros: Int64?
    private var queue = OneWayQueue()
    private var windowStartMicros: Int64?
    private var summary = Summary()

    public init() {}

    /// The next packet's transport-wide sequence number; it leaves now.
    public mutating func assign(bytes: Int, nowMicros: Int64) -> UInt16 {
        let seq = next
        next += 1
        sent[Int(seq & Int64(Self.capacity - 1))] = Sent(seq: seq, micros: nowMicros, bytes: bytes)
        return UInt16(truncatingIfNeeded: seq)
    }

    /// Reads one feedback message, at `nowMicros` (our clock).
    public mutating func receive(_ feedback: TransportFeedback, nowMicros: Int64) {
        summary.messages += 1
        var newestArrival: Int64?
        for packet in feedback.packets {
            // The 16-bit number is the latest we sent with those bits (at most 65535 back).
            let back = Int64(UInt16(truncatingIfNeeded: next) &- packet.seq)
            guard back > 0 else { continue }
            let seq = next - back
            let slot = Int(seq & Int64(Self.capacity - 1))
            guard seq >= 0, var entry = sent[slot], entry.seq == seq else { continue }
            let first = entry.state == 0
            if first { summary.expected += 1 }
            if let arrival = packet.arrivalMicros {
                guard entry.state != 1 else { continue }
                if entry.state == 2 { summary.lost -= 1 }
                entry.state = 1
                summary.receivedBytes += UInt64(entry.bytes)
                queue.add(transitMs: Double(arrival - entry.micros) / 1000)
                newestArrival = max(newestArrival ?? arrival, arrival)
            } else if first {
                entry.state = 2
                summary.lost += 1
            }
            sent[slot] = entry
        }
        if let newestArrival {
            if let last = lastArrivalMicros, newestArrival > last {
                summary.receivedSpanNanos += UInt64(newestArrival - last) * 1000
            }
            lastArrivalMicros = max(lastArrivalMicros ?? newestArrival, newestArrival)
        }
        if let start = windowStartMicros {
            if nowMicros - start >= windowMicros {
                if let ms = queue.close(nowMicros: nowMicros) { summary.queueingMs.append(ms) }
                windowStartMicros = nowMicros
            }
        } else {
            windowStartMicros = nowMicros
        }
    }

    /// What the feedback said since the last call, then nothing.
    public mutating func take() -> Summary {
        defer { summary = Summary() }
        return summary
    }
}
