internal import CGStreamer
import CGstShim
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Spreads a peer's outgoing RTP over time at `rateKbps` (a token bucket holding
/// `burstMs` of the rate, at least one full packet), as every WebRTC sender does: an
/// encoder hands over a whole frame at once (a keyframe is tens of packets), and a
/// bottleneck that can queue only a few tens of ms of its rate (a policer, a radio
/// link's shallow buffer) drops the tail of such a burst although the average fits.
/// Congestion control sets the rate to a multiple of its estimate
/// (`PublisherMedia.pacingFactor`); a frame then leaves in a fraction of a frame time.
///
/// It sits in webrtcbin's aux-sender slot (`SendPath`), after the retransmission store,
/// so retransmissions are paced too, and before a `LinkSimulator`, which is the link.
/// A packet that must wait is held and let go by the pacer's own thread (`hold`,
/// Pacer+Holding.swift), never by the streaming thread that brought it: that thread
/// holds the stream locks every packet of the bundle passes (rtpfunnel's, rtpsession's),
/// and a voice packet waited behind each paced video frame. As the link simulator's
/// shaper (`pace`) it waits on the thread that pushes, the link's queue thread.
public final class Pacer: Sendable {
    private struct Bucket {
        var rateKbps: Double
        /// Bits available now (negative: owed by packets already let through).
        var tokens: Double
        var lastMicros: Int64
    }
    private let bucket: Mutex<Bucket>
    public let burstMs: Double
    /// The longest a packet waits.
    public let maxQueueMs: Double
    let delayed = Atomic<UInt64>(0)
    /// The youngest packet (µs since its frame's capture) to leave since `takeLowestAgeMs`
    /// (Int64.max: none). The lowest, as the receiver measures the lowest transit: a
    /// retransmission is as old as its original and says nothing of the queue.
    let lowestAge = Atomic<Int64>(.max)

    /// The media's RTP payload type: every other packet through here is a retransmission
    /// (RTX), which `RetransmissionGate` admits first. nil: no gate (the link simulator's shaper).
    public let mediaPayloadType: Int?
    private let gate: Mutex<RetransmissionGate>
    private let repeatsDropped = Atomic<UInt64>(0), overBudgetDropped = Atomic<UInt64>(0)

    /// Payload types that never wait here (a voice), their bits still taken from the bucket.
    public let unpacedPayloadTypes: Set<Int>
    /// The packets held for the pacer's thread (see `hold`).
    let holding = PacerHolding()

    public init(rateKbps: Int, burstMs: Double = 10, maxQueueMs: Double = 150, mediaPayloadType: Int? = nil,
                retransmissionBudgetKbps: Int? = nil, unpacedPayloadTypes: Set<Int> = []) {
        self.burstMs = burstMs; self.maxQueueMs = maxQueueMs; self.mediaPayloadType = mediaPayloadType
        self.unpacedPayloadTypes = unpacedPayloadTypes
        bucket = Mutex(Bucket(rateKbps: Double(max(rateKbps, 1)), tokens: 0, lastMicros: 0))
        gate = Mutex(RetransmissionGate(budgetKbps: retransmissionBudgetKbps ?? rateKbps))
    }

    deinit { stop() }

    /// The rate retransmissions may take (kbit/s), besides the media's.
    public func setRetransmissionBudget(kbps: Int) { gate.withLock { $0.setBudget(kbps: kbps) } }

    /// Retransmissions dropped so far: asked again within the gate's spacing, and over its budget.
    public var retransmissionsDropped: (repeated: UInt64, overBudget: UInt64) {
        (repeatsDropped.load(ordering: .relaxed), overBudgetDropped.load(ordering: .relaxed))
    }

    /// Whether a packet may leave: media always; a retransmission when the gate admits it
    /// (the original sequence number is the first two bytes of an RTX payload, RFC 4588).
    func admits(_ buffer: UnsafeMutablePointer<GstBuffer>) -> Bool {
        // Media (every packet but a few) passes on its second byte alone; only a
        // retransmission is mapped to read the sequence number it repairs.
        guard let media = mediaPayloadType, let pt = ProbeInfo.rtpPayloadType(buffer), pt != media,
              !unpacedPayloadTypes.contains(pt) else { return true }
        var rtp = GstRTPBuffer()
        guard gst_rtp_buffer_map(buffer, GST_MAP_READ, &rtp) != 0 else { return true }
        var seq: UInt16?
        if gst_rtp_buffer_get_payload_len(&rtp) >= 2, let payload = gst_rtp_buffer_get_payload(&rtp) {
            let bytes = payload.assumingMemoryBound(to: UInt8.self)
            seq = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        }
        gst_rtp_buffer_unmap(&rtp)
        guard let seq else { return true }
        let size = Int(gst_buffer_get_size(buffer))
        switch gate.withLock({ $0.decide(seq: seq, bytes: size, nowMicros: Int64(g_get_monotonic_time())) }) {
        case .pass: return true
        case .repeated: repeatsDropped.add(1, ordering: .relaxed); return false
        case .overBudget: overBudgetDropped.add(1, ordering: .relaxed); return false
        }
    }

    public var rateKbps: Int { Int(bucket.withLock { $0.rateKbps }) }

    /// Packets that had to wait.
    public var packetsDelayed: UInt64 { delayed.load(ordering: .relaxed) }

    /// The youngest packet to leave since the last call (ms since its frame's capture;
    /// nil: none): above its lowest over time, the share of the receiver's measured
    /// queueing delay that is our own (the branch queue's included).
    public func takeLowestAgeMs() -> Double? {
        let micros = lowestAge.exchange(.max, ordering: .relaxed)
        return micros == .max ? nil : Double(micros) / 1000
    }

    public func setRate(kbps: Int) { bucket.withLock { $0.rateKbps = Double(max(kbps, 1)) } }

    /// How long (µs) a packet of `bytes` must wait at `nowMicros`; takes its tokens.
    package func reserve(bytes: Int, nowMicros: Int64) -> Int64 {
        bucket.withLock { b in
            let bitsPerMicro = b.rateKbps / 1000
            let capacity = max(b.rateKbps * burstMs, 12_000)
            b.tokens = min(capacity, b.tokens + Double(max(0, nowMicros - b.lastMicros)) * bitsPerMicro)
            b.lastMicros = max(b.lastMicros, nowMicros)
            let wait = b.tokens >= 0 ? 0 : Int64((-b.tokens / bitsPerMicro).rounded(.up))
            b.tokens = max(b.tokens - Double(bytes * 8), -b.rateKbps * maxQueueMs)
            return wait
        }
    }

    /// Forgets what earlier packets owe: a packet older than `maxQueueMs` goes at once.
    func clearDebt(nowMicros: Int64) {
        bucket.withLock { $0.tokens = max($0.tokens, 0); $0.lastMicros = nowMicros }
    }

    /// Blocks the calling streaming thread until a packet of `bytes` may go: the link
    /// simulator's shaper, behind the link's own queue (the sender's pacer holds instead,
    /// `hold`). `ageMicros`: how long ago its frame was captured (nil: unknown). The
    /// packets that wait here hold up the ones behind them, so the backlog is judged by
    /// age, not by this packet's own wait: one older than `maxQueueMs` goes at once and
    /// clears the debt (an encoder above the pacing rate, just after a cut, would
    /// otherwise build a queue of seconds: measured, 600 ms). `hold` judges the same way.
    func pace(bytes: Int, ageMicros: Int64?) {
        let wait = departureWait(bytes: bytes, ageMicros: ageMicros, nowMicros: Int64(g_get_monotonic_time()))
        if let age = ageMicros { _ = lowestAge.min(age + wait, ordering: .relaxed) }
        if wait > 0 { usleep(useconds_t(min(wait, Self.longestWaitMicros))) }
    }

    /// No packet waits longer than this (µs), whatever it owes.
    static let longestWaitMicros: Int64 = 500_000

    /// How long (µs) a packet of `bytes`, `ageMicros` old at `nowMicros`, must wait, its
    /// tokens taken: none for one older than `maxQueueMs`, which clears the debt. Counts
    /// the packets that wait (`packetsDelayed`).
    func departureWait(bytes: Int, ageMicros: Int64?, nowMicros: Int64) -> Int64 {
        if let age = ageMicros, Double(age) > maxQueueMs * 1000 {
            clearDebt(nowMicros: nowMicros)
            return 0
        }
        let wait = reserve(bytes: bytes, nowMicros: nowMicros)
        if wait > 0 { delayed.add(1, ordering: .relaxed) }
        return wait
    }
}
