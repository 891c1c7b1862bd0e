internal import CGStreamer
import CGstShim
import Synchronization

/// RTP packets seen by a `LinkSimulator`, by payload type (the media's own type and,
/// once negotiated, its RTX type: retransmissions travel the same impaired link).
public struct LinkSimulatorStats: Sendable, Equatable {
    /// Packets that reached the simulator, by RTP payload type.
    public var offered: [Int: UInt64] = [:]
    /// Packets it let through, by RTP payload type.
    public var passed: [Int: UInt64] = [:]

    public init(offered: [Int: UInt64] = [:], passed: [Int: UInt64] = [:]) {
        self.offered = offered
        self.passed = passed
    }

    public var offeredTotal: UInt64 { offered.values.reduce(0, +) }
    public var passedTotal: UInt64 { passed.values.reduce(0, +) }
    /// Packets dropped (those still held back by a delay count here until they leave).
    public var droppedTotal: UInt64 { offeredTotal &- passedTotal }
    public func dropped(payloadType pt: Int) -> UInt64 { (offered[pt] ?? 0) &- (passed[pt] ?? 0) }
}

/// Impairs a webrtcbin's outgoing RTP: a bottleneck buffer and shaper at the link's
/// rate, then GStreamer's `netsim` (loss, delay, token bucket), inserted through
/// webrtcbin's `request-aux-sender` signal (`SendPath`, after the pacer). In 1.22 webrtcbin builds, for each RTP
/// session, a bin `rtprtxsend → (aux sender) → transport`: the element sits after
/// the retransmission store, so a packet it drops has been kept by `rtprtxsend` and
/// can be sent again (as RTX) when the receiver NACKs it; the retransmission crosses
/// the same impaired link. RTCP (NACK, PLI) does not pass through it.
///
/// The conditions can change at any time (`update`), e.g. to stop the loss mid-stream.
public final class LinkSimulator: Sendable {
    private let state: Mutex<State>
    private let counters = Counters()

    private struct State {
        var conditions: LinkConditions
        /// One link per RTP session (one with max-bundle); we hold a reference to each element.
        var links: [Link] = []
    }

    /// The bottleneck's buffer (a drop-tail queue), the shaper that empties it at the
    /// link's rate (a `Pacer` on an identity's source pad, in the queue's thread), and
    /// netsim (loss, delay, and the token bucket as a backstop, or as the policer when
    /// there is no buffer).
    private struct Link { var queue: Element; var shaper: Pacer; var netsim: Element }

    /// Fails when the conditions are out of range or `netsim` is not installed.
    public init(_ conditions: LinkConditions) throws(RTCError) {
        try conditions.validate()
        guard ElementFactory.isAvailable("netsim") else { throw ElementFactory.missing("netsim") }
        state = Mutex(State(conditions: conditions))
    }

    public var conditions: LinkConditions { state.withLock { $0.conditions } }

    /// Packet counts so far.
    public var stats: LinkSimulatorStats { counters.value.withLock { $0 } }

    /// Applies new conditions to every session's link at once (and to later ones).
    public func update(_ conditions: LinkConditions) throws(RTCError) {
        try conditions.validate()
        let links = state.withLock { s -> [Link] in
            s.conditions = conditions
            return s.links
        }
        for link in links { Self.apply(conditions, to: link) }
    }

    /// The elements of one session's link, upstream first, floating for the bin that
    /// takes them (`SendPath`); we keep a reference of our own, to change them later.
    func makeLink() -> [UnsafeMutablePointer<GstElement>] {
        guard let queueRaw = gst_element_factory_make("queue", nil),
              let identityRaw = gst_element_factory_make("identity", nil),
              let netsimRaw = gst_element_factory_make("netsim", nil) else { return [] }
        for raw in [queueRaw, identityRaw, netsimRaw] { gst_object_ref(UnsafeMutableRawPointer(raw)) }
        let link = Link(queue: Element(takingOwnership: queueRaw), shaper: Pacer(rateKbps: Self.unlimitedKbps, burstMs: 5, maxQueueMs: 60_000),
                        netsim: Element(takingOwnership: netsimRaw))
        link.queue.set("max-size-buffers", 0)
        link.queue.set("max-size-bytes", 0)
        link.queue.set("leaky", "upstream")        // drop-tail: a full buffer drops what arrives
        gst_util_set_object_arg(gcast(identityRaw, to: GObject.self), "silent", "true")
        let shaper = link.shaper
        if let src = gst_element_get_static_pad(identityRaw, "src") {
            Pad(takingOwnership: src).addProbe(GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue)) { info in
                if let buffer = gst_pad_probe_info_get_buffer(info) { shaper.pace(bytes: Int(gst_buffer_get_size(buffer)), ageMicros: nil) }
                return GST_PAD_PROBE_OK
            }
        }
        let conditions = state.withLock { s -> LinkConditions in
            s.links.append(link)
            return s.conditions
        }
        Self.apply(conditions, to: link)
        let counters = self.counters
        let data = GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
        link.queue.staticPad("sink")?.addProbe(data) { info in
            Self.countPayloadTypes(info) { pt in counters.value.withLock { $0.offered[pt, default: 0] += 1 } }
            return GST_PAD_PROBE_OK
        }
        link.netsim.staticPad("src")?.addProbe(data) { info in
            Self.countPayloadTypes(info) { pt in counters.value.withLock { $0.passed[pt, default: 0] += 1 } }
            return GST_PAD_PROBE_OK
        }
        return [queueRaw, identityRaw, netsimRaw]
    }

    private static let unlimitedKbps = 10_000_000

    private static func apply(_ conditions: LinkConditions, to link: Link) {
        let shaping = conditions.rateKbps != nil && conditions.queueMs > 0
        link.shaper.setRate(kbps: shaping ? conditions.rateKbps! : unlimitedKbps)
        // The buffer in bytes: `queueMs` of the rate (not in time: the queue measures
        // time by timestamps, and a retransmission carries its original's, so its level
        // jumps); without shaping it never fills.
        link.queue.set("max-size-time", "0")
        link.queue.set("max-size-bytes", shaping ? max(conditions.rateKbps! * conditions.queueMs / 8, 1500) : 64 << 20)
        applyNetsim(conditions, to: link.netsim)
    }

    private static func applyNetsim(_ conditions: LinkConditions, to element: Element) {
        element.set("drop-probability", String(conditions.dropProbability))
        // A fixed delay on every packet, order kept (netsim delays by a random amount
        // between min and max, for the packets chosen by delay-probability).
        element.set("allow-reordering", false)
        element.set("min-delay", conditions.delayMs)
        element.set("max-delay", conditions.delayMs)
        element.set("delay-probability", conditions.delayMs > 0 ? "1" : "0")
        // The capacity: netsim's token bucket, in kbit/s and kbit (-1: unlimited; an
        // unlimited bucket would let the first minutes through at any rate). By default
        // the bucket holds 100 ms of the rate, and at least one full packet. Behind the
        // shaper it never fills; without a buffer it is the policer.
        element.set("max-kbps", conditions.rateKbps ?? -1)
        element.set("max-bucket-size", conditions.rateKbps.map { conditions.bucketKbit ?? max($0 / 10, 12) } ?? -1)
    }

    /// Calls `count` with the RTP payload type of each packet in a buffer or list probe.
    private static func countPayloadTypes(_ info: UnsafeMutablePointer<GstPadProbeInfo>, _ count: (Int) -> Void) {
        let payloadType = ProbeInfo.rtpPayloadType
        let type = info.pointee.type.rawValue
        if type & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0, let buffer = gst_pad_probe_info_get_buffer(info) {
            if let pt = payloadType(buffer) { count(pt) }
        } else if type & GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue != 0, let list = gst_pad_probe_info_get_buffer_list(info) {
            for i in 0..<gst_buffer_list_length(list) {
                if let buffer = gst_buffer_list_get(list, i), let pt = payloadType(buffer) { count(pt) }
            }
        }
    }
}

/// The packet counts, shared with the pad probes (which must not keep the simulator alive).
private final class Counters: Sendable {
    let value = Mutex(LinkSimulatorStats())
}
