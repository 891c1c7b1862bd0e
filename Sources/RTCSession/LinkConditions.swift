/// A simulated network impairment on a peer's outgoing RTP (GStreamer's `netsim`),
/// applied after the retransmission buffer, so a dropped packet can still be sent
/// again when the receiver NACKs it (see `LinkSimulator`).
public struct LinkConditions: Sendable, Equatable, CustomStringConvertible {
    /// Chance that each outgoing RTP packet (retransmissions included) is dropped, 0...1.
    public var dropProbability: Double
    /// Extra one-way delay added to every outgoing RTP packet, in milliseconds (order kept).
    public var delayMs: Int
    /// Capacity in kbit/s (netsim's token bucket: what exceeds it is dropped, as a full
    /// bottleneck queue drops), nil: unlimited.
    public var rateKbps: Int?
    /// The bucket's depth in kbit (bursts up to this pass at once), with `rateKbps`;
    /// nil: 100 ms of the rate.
    public var bucketKbit: Int?
    /// The bottleneck's buffer in ms of its rate, with `rateKbps`: packets beyond the
    /// rate wait in a drop-tail queue this long before the token bucket (a shaper, as
    /// a mobile uplink's buffer), and only what overflows it is dropped; 0: no buffer,
    /// the bucket drops at once what exceeds it (a policer).
    public var queueMs: Int = LinkConditions.defaultQueueMs
    /// 200 ms: a modest buffer for a radio uplink (bufferbloat gives seconds).
    public static let defaultQueueMs = 200

    /// A link that passes everything at once.
    public static let perfect = LinkConditions(dropProbability: 0, delayMs: 0)

    public init(dropProbability: Double = 0, delayMs: Int = 0, rateKbps: Int? = nil, bucketKbit: Int? = nil) {
        self.dropProbability = dropProbability
        self.delayMs = delayMs
        self.rateKbps = rateKbps
        self.bucketKbit = bucketKbit
    }

    /// `rate=KBPS,loss=PERCENT,delay=MS[,bucket=KBIT][,queue=MS]`, any subset in any order (the
    /// `--link` option); an empty string or `none` is a perfect link.
    public init(spec: String) throws(RTCError) {
        self = .perfect
        let text = spec.filter { !$0.isWhitespace }
        guard !text.isEmpty, text != "none" else { return }
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, let value = Double(pair[1]), value.isFinite else {
                throw .invalidArgument("link: \"\(part)\" is not KEY=NUMBER (keys: rate, loss, delay, bucket, queue)")
            }
            switch pair[0] {
            case "rate": rateKbps = Int(value)
            case "loss": dropProbability = value / 100
            case "delay": delayMs = Int(value)
            case "bucket": bucketKbit = Int(value)
            case "queue": queueMs = Int(value)
            default: throw .invalidArgument("link: unknown key \"\(pair[0])\" (keys: rate in kbit/s, loss in %, delay in ms, bucket in kbit, queue in ms)")
            }
        }
        try validate()
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
        if let rateKbps, !(8...1_000_000).contains(rateKbps) {
            throw .invalidArgument("link rate \(rateKbps) kbit/s is outside 8...1000000")
        }
        guard (0...10_000).contains(queueMs) else {
            throw .invalidArgument("link queue \(queueMs) ms is outside 0...10000 ms")
        }
        if let bucketKbit, !(1...1_000_000).contains(bucketKbit) {
            throw .invalidArgument("link bucket \(bucketKbit) kbit is outside 1...1000000")
        }
    }

    public var description: String {
        let loss = (dropProbability * 1000).rounded() / 10
        var text = delayMs == 0 ? "\(loss)% loss" : "\(loss)% loss, \(delayMs) ms delay"
        if let rateKbps { text += ", \(rateKbps) kbit/s" + (queueMs > 0 ? " with a \(queueMs) ms buffer" : " (policer)") }
        return text
    }
}
