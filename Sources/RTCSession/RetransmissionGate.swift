/// Which retransmissions leave, as a pure state machine (the `Pacer` asks it for every
/// RTX packet, by the original sequence number it repairs). rtprtxsend answers every
/// NACK from its store, as often as it is asked. A receiver that asks again each round
/// trip (Chromium does, for up to a second; on loopback its round trip is under a
/// millisecond) then gets the same packet many times over, and on a full link each copy
/// is dropped again and asked for again: a storm. Measured on a 200 kbit/s link to
/// Chromium: 88 % of the packets offered to the link dropped, 12 fps and 24 freezes in
/// 20 s, the encoder already at its floor. libwebrtc has the same two guards (its
/// packet history's one-round-trip spacing and its retransmission rate limiter).
///
/// - **Once per `repeatSpacingMicros`** for each original packet (the newest
///   `remembered` sequence numbers are kept).
/// - **Within a budget**: a token bucket at `budgetKbps` (a share of the rate congestion
///   control allows: retransmissions come on top of the encoder's output), holding
///   `burstMs` of it and at least one full packet. A retransmission over it is dropped;
///   the receiver then asks for a keyframe, which the keyframe throttle merges.
public struct RetransmissionGate: Sendable {
    public enum Decision: Equatable, Sendable { case pass, repeated, overBudget }

    public var repeatSpacingMicros: Int64 = 100_000
    public var burstMs: Double = 250
    public let remembered = 512
    public private(set) var budgetKbps: Double
    private var tokens: Double
    private var lastMicros: Int64?
    /// Last time each original sequence number went out, in a ring indexed by seq % remembered.
    private var sentAt: [(seq: UInt16, micros: Int64)?]

    public init(budgetKbps: Int) {
        self.budgetKbps = Double(max(budgetKbps, 1))
        tokens = max(self.budgetKbps * burstMs, 12_000)   // starts full
        sentAt = Array(repeating: nil, count: remembered)
    }

    public mutating func setBudget(kbps: Int) { budgetKbps = Double(max(kbps, 1)) }

    /// Whether a retransmission of original sequence number `seq`, `bytes` long, may go at `nowMicros`.
    public mutating func decide(seq: UInt16, bytes: Int, nowMicros: Int64) -> Decision {
        let capacity = max(budgetKbps * burstMs, 12_000)
        if let last = lastMicros { tokens = min(capacity, tokens + Double(max(0, nowMicros - last)) * budgetKbps / 1000) }
        lastMicros = max(lastMicros ?? nowMicros, nowMicros)
        let slot = Int(seq) % remembered
        if let entry = sentAt[slot], entry.seq == seq, nowMicros - entry.micros < repeatSpacingMicros { return .repeated }
        let bits = Double(bytes * 8)
        guard tokens >= bits else { return .overBudget }
        tokens -= bits
        sentAt[slot] = (seq, nowMicros)
        return .pass
    }
}
