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

/// Impairs a webrtcbin's outgoing RTP with GStreamer's `netsim`, inserted through
/// webrtcbin's `request-aux-sender` signal. In 1.22 webrtcbin builds, for each RTP
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
        /// One netsim per RTP session (one with max-bundle); we hold a reference each.
        var elements: [Element] = []
    }

    /// Fails when the conditions are out of range or `netsim` is not installed.
    public init(_ conditions: LinkConditions) throws(RTCError) {
        try conditions.validate()
        guard ElementFactory.isAvailable("netsim") else { throw ElementFactory.missing("netsim") }
        state = Mutex(State(conditions: conditions))
    }

    public var conditions: LinkConditions { state.withLock { $0.conditions } }

    /// Packet counts so far.
    public var stats: LinkSimulatorStats { counters.value.withLock { $0 } }

    /// Applies new conditions to every session's netsim at once (and to later ones).
    public func update(_ conditions: LinkConditions) throws(RTCError) {
        try conditions.validate()
        let elements = state.withLock { s -> [Element] in
            s.conditions = conditions
            return s.elements
        }
        for element in elements { Self.apply(conditions, to: element) }
    }

    /// Connects to `request-aux-sender` on a webrtcbin not yet negotiated; returns the
    /// handler id (for `Signal.disconnect`). The handler holds the simulator weakly.
    func attach(to webrtc: Element) -> UInt {
        // `GstElement *handler(GstWebRTCBin *, GstWebRTCDTLSTransport *)`: a floating
        // element, which webrtcbin sinks.
        return Signal.connectReturning(webrtc.object, "request-aux-sender") { [weak self] _ in self?.makeElement() }
    }

    /// A new netsim for one session, returned floating as the signal expects
    /// (webrtcbin sinks it and adds it to its bin); we keep a reference of our own.
    private func makeElement() -> UnsafeMutableRawPointer? {
        guard let raw = gst_element_factory_make("netsim", nil) else { return nil }
        gst_object_ref(UnsafeMutableRawPointer(raw))    // ours; the floating one goes to webrtcbin
        let element = Element(takingOwnership: raw)
        let conditions = state.withLock { s -> LinkConditions in
            s.elements.append(element)
            return s.conditions
        }
        Self.apply(conditions, to: element)
        let counters = self.counters
        let data = GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
        element.staticPad("sink")?.addProbe(data) { info in
            Self.countPayloadTypes(info) { pt in counters.value.withLock { $0.offered[pt, default: 0] += 1 } }
            return GST_PAD_PROBE_OK
        }
        element.staticPad("src")?.addProbe(data) { info in
            Self.countPayloadTypes(info) { pt in counters.value.withLock { $0.passed[pt, default: 0] += 1 } }
            return GST_PAD_PROBE_OK
        }
        return UnsafeMutableRawPointer(raw)
    }

    private static func apply(_ conditions: LinkConditions, to element: Element) {
        element.set("drop-probability", String(conditions.dropProbability))
        // A fixed delay on every packet, order kept (netsim delays by a random amount
        // between min and max, for the packets chosen by delay-probability).
        element.set("allow-reordering", false)
        element.set("min-delay", conditions.delayMs)
        element.set("max-delay", conditions.delayMs)
        element.set("delay-probability", conditions.delayMs > 0 ? "1" : "0")
        // The capacity: netsim's token bucket, in kbit/s and kbit (-1: unlimited; an
        // unlimited bucket would let the first minutes through at any rate). By default
        // the bucket holds 100 ms of the rate, and at least one full packet.
        element.set("max-kbps", conditions.rateKbps ?? -1)
        element.set("max-bucket-size", conditions.rateKbps.map { conditions.bucketKbit ?? max($0 / 10, 12) } ?? -1)
    }

    /// Calls `count` with the RTP payload type of each packet in a buffer or list probe.
    private static func countPayloadTypes(_ info: UnsafeMutablePointer<GstPadProbeInfo>, _ count: (Int) -> Void) {
        func payloadType(_ buffer: UnsafeMutablePointer<GstBuffer>) -> Int? {
            var header: (UInt8, UInt8) = (0, 0)
            let copied = withUnsafeMutableBytes(of: &header) { gst_buffer_extract(buffer, 0, $0.baseAddress, 2) }
            return copied == 2 ? Int(header.1 & 0x7F) : nil
        }
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
