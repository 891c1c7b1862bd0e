/// One transport-wide congestion control feedback message (RTCP RTPFB, FMT 15;
/// draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1), as a receiver that
/// negotiated `transport-cc` (Chromium) sends it every 50–100 ms: for each packet in a
/// range of transport-wide sequence numbers, whether it arrived and when, on the
/// receiver's clock. A pure value, parsed from the message's FCI.
public struct TransportFeedback: Sendable, Equatable {
    /// One packet of the range: its transport-wide sequence number and, when it
    /// arrived, its arrival time in µs on the receiver's clock (the reference time's
    /// origin, arbitrary); nil when the receiver reports it not received.
    public struct Packet: Sendable, Equatable {
        public var seq: UInt16
        public var arrivalMicros: Int64?
        public init(seq: UInt16, arrivalMicros: Int64?) { self.seq = seq; self.arrivalMicros = arrivalMicros }
    }

    public var baseSeq: UInt16
    /// The feedback message's own counter (for duplicates and reordering of feedback).
    public var feedbackCount: UInt8
    public var packets: [Packet]

    public init(baseSeq: UInt16, feedbackCount: UInt8, packets: [Packet]) {
        self.baseSeq = baseSeq; self.feedbackCount = feedbackCount; self.packets = packets
    }

    /// Why an FCI is refused (a malformed or hostile message: never a crash).
    public enum ParseError: Error, Equatable {
        case tooShort(Int)
        case chunksEndEarly(statuses: Int, described: Int)
        case deltasEndEarly(received: Int)
        case reservedSymbol
    }

    /// The receiver's clock unit for the reference time and for one delta step.
    static let referenceMicros: Int64 = 64_000
    static let deltaMicros: Int64 = 250
    /// A feedback never covers more than this many packets (a bound against a forged count).
    static let maxStatuses = 1 << 14

    /// Parses the FCI (what follows the sender and media SSRCs).
    public init(fci: [UInt8]) throws(ParseError) {
        guard fci.count >= 8 else { throw .tooShort(fci.count) }
        baseSeq = UInt16(fci[0]) << 8 | UInt16(fci[1])
        let statusCount = Int(UInt16(fci[2]) << 8 | UInt16(fci[3]))
        // 24-bit signed reference time, in 64 ms.
        var reference = Int64(fci[4]) << 16 | Int64(fci[5]) << 8 | Int64(fci[6])
        if reference & 0x80_0000 != 0 { reference -= 1 << 24 }
        feedbackCount = fci[7]
        guard statusCount <= Self.maxStatuses else { throw .chunksEndEarly(statuses: statusCount, described: 0) }

        // The packet chunks: 0 not received, 1 received with a one-byte delta,
        // 2 received with a two-byte (signed) delta.
        var symbols: [UInt8] = []
        symbols.reserveCapacity(statusCount)
        var offset = 8
        while symbols.count < statusCount {
            guard offset + 2 <= fci.count else { throw .chunksEndEarly(statuses: statusCount, described: symbols.count) }
            let chunk = UInt16(fci[offset]) << 8 | UInt16(fci[offset + 1])
            offset += 2
            if chunk & 0x8000 == 0 {
                // Run length: a 2-bit symbol, a 13-bit count.
                let symbol = UInt8((chunk >> 13) & 0x3)
                let run = min(Int(chunk & 0x1FFF), statusCount - symbols.count)
                guard symbol != 3 || run == 0 else { throw .reservedSymbol }
                symbols += repeatElement(symbol, count: run)
            } else if chunk & 0x4000 == 0 {
                // Status vector of 14 one-bit symbols.
                for bit in (0..<14).reversed() where symbols.count < statusCount {
                    symbols.append(UInt8((chunk >> UInt16(bit)) & 0x1))
                }
            } else {
                // Status vector of 7 two-bit symbols.
                for pair in (0..<7).reversed() where symbols.count < statusCount {
                    let symbol = UInt8((chunk >> UInt16(2 * pair)) & 0x3)
                    guard symbol != 3 else { throw .reservedSymbol }
                    symbols.append(symbol)
                }
            }
        }

        // The receive deltas, one per received packet, in 250 µs from the previous arrival
        // (the first from the reference time).
        var arrival = reference * Self.referenceMicros
        var packets: [Packet] = []
        packets.reserveCapacity(statusCount)
        var received = 0
        for (i, symbol) in symbols.enumerated() {
            let seq = baseSeq &+ UInt16(truncatingIfNeeded: i)
            switch symbol {
            case 1:
                guard offset + 1 <= fci.count else { throw .deltasEndEarly(received: received) }
                arrival += Int64(fci[offset]) * Self.deltaMicros
                offset += 1
            case 2:
                guard offset + 2 <= fci.count else { throw .deltasEndEarly(received: received) }
                arrival += Int64(Int16(bitPattern: UInt16(fci[offset]) << 8 | UInt16(fci[offset + 1]))) * Self.deltaMicros
                offset += 2
            default:
                packets.append(Packet(seq: seq, arrivalMicros: nil))
                continue
            }
            received += 1
            packets.append(Packet(seq: seq, arrivalMicros: arrival))
        }
        self.packets = packets
    }
}
