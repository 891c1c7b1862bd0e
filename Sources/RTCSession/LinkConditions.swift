/// A simulated network impairment on a peer's outgoing RTP (GStreamer's `netsim`),
/// applied after the retransmission buffer, so a dropped packet can still be sent
/// again when the receiver NACKs it (see `LinkSimulator`).
public struct LinkConditions: Sendable, Equatable, CustomStringConvertible {
    /// Chance that each outgoing RTP packet (retransmissions included) is dropped, 0...1.
    public var dropProbability: Double
    /// Extra one-way delay added to every outgoing RTP packet, in milliseconds (order kept).
    public var delayMs: Int

    /// A link that passes everything at once.
    public static let perfect = LinkConditions(dropProbability: 0, delayMs: 0)

    public init(dropProbability: Double = 0, delayMs: Int = 0) {
        self.dropProbability = dropProbability
        self.delayMs = delayMs
    }

    /// `loss` in percent (e.g. 5 for 5 %), as on a command line.
    public init(lossPercent: Double, delayMs: Int = 0) throws(RTCError) {
        self.init(dropProbability: lossPercent / 100, delayMs: delayMs)
        try validate()
    }

    /// Throws `.invalidArgument` naming the field that is out of range.
    public func validate() throws(RTCError) {
        guard dropProbability.isFinite, (0...1).contains(dropProbability) else {
            throw .invalidArgument("link drop probability \(dropProbability) is outside 0...1 (loss percent 0...100)")
        }
        guard (0...10_000).contains(delayMs) else {
            throw .invalidArgument("link delay \(delayMs) ms is outside 0...10000 ms")
        }
    }

    public var description: String {
        let loss = (dropProbability * 1000).rounded() / 10
        return delayMs == 0 ? "\(loss)% loss" : "\(loss)% loss, \(delayMs) ms delay"
    }
}
