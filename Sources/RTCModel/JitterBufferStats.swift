/// What a receiving peer's jitter buffers (rtpjitterbuffer, one per incoming stream)
/// counted so far, summed: packets pushed, declared lost, arrived too late, and
/// retransmissions asked for and received in time, with the longest retransmission
/// round trip they measured.
public struct JitterBufferStats: Sendable, Equatable {
    public var pushed: UInt64 = 0
    public var lost: UInt64 = 0
    public var late: UInt64 = 0
    public var retransmissionsRequested: UInt64 = 0
    public var retransmissionsReceived: UInt64 = 0
    /// rtpjitterbuffer's `rtx-rtt` (its running average), ms; 0 before any.
    public var retransmissionRoundTripMs: Double = 0
    public init() {}
}
