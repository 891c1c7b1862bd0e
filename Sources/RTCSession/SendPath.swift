internal import CGStreamer
import CGstShim

/// What goes into webrtcbin's aux-sender slot of a peer (between the retransmission
/// store and the transport, one per RTP session): the `Pacer`, then the
/// `LinkSimulator`'s elements, in a bin with `sink` and `src` ghost pads. webrtcbin 1.22
/// asks once per session through `request-aux-sender` and keeps the first answer, so
/// both must come from one handler.
enum SendPath {
    /// Connects the handler; nil when there is nothing to put there. The handler holds
    /// the pacer (small, no cycle: webrtcbin → handler → pacer) and the simulator weakly.
    /// `transport` numbers each packet as the pacer lets it out (with a pacer only).
    static func attach(to webrtc: Element, pacer: Pacer?, transport: TransportSequencer, link: LinkSimulator?) -> UInt? {
        guard pacer != nil || link != nil else { return nil }
        return Signal.connectReturning(webrtc.object, "request-aux-sender") { [weak link] _ in
            makeBin(pacer: pacer, transport: transport, link: link?.makeLink() ?? [])
        }
    }

    /// A floating bin (webrtcbin sinks it): identity with the pacer's probe on its source
    /// pad (identity pushes a buffer list's packets one by one, so each is paced), then
    /// the simulated link's elements. A packet is numbered for transport-wide feedback
    /// as it leaves the pacer: its departure, after the pacer's hold, before the link.
    static func makeBin(pacer: Pacer?, transport: TransportSequencer,
                        link: [UnsafeMutablePointer<GstElement>]) -> UnsafeMutableRawPointer? {
        var chain: [UnsafeMutablePointer<GstElement>] = []
        if let pacer, let identity = gst_element_factory_make("identity", nil) {
            gst_util_set_object_arg(gcast(identity, to: GObject.self), "silent", "true")
            if let src = gst_element_get_static_pad(identity, "src") {
                let data = GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue)
                let address = Int(bitPattern: UnsafeMutableRawPointer(identity))
                pacer.attach(pad: src)
                Pad(takingOwnership: src).addProbe(data) { info in
                    guard let buffer = gst_pad_probe_info_get_buffer(info) else { return GST_PAD_PROBE_OK }
                    // One the pacer held, now let go by its thread.
                    if pacer.onPacerThread { transport.stamp(info); return GST_PAD_PROBE_OK }
                    // A retransmission asked again too soon, or over its budget, never leaves.
                    guard pacer.admits(buffer) else { return GST_PAD_PROBE_DROP }
                    // The frame's age: running time now less its timestamp (the capture's
                    // running time, carried from the encoder through the payloader).
                    // The identity is alive while its pad calls this.
                    let element = UnsafeMutablePointer<GstElement>(bitPattern: address)!
                    let now = gst_element_get_current_running_time(element), pts = buffer.pointee.pts
                    let age = now != GstClockTime.max && pts != GstClockTime.max && now >= pts ? Int64((now - pts) / 1000) : nil
                    switch pacer.hold(buffer, bytes: Int(gst_buffer_get_size(buffer)), ageMicros: age,
                                      payloadType: ProbeInfo.rtpPayloadType(buffer)) {
                    case .held:
                        return GST_PAD_PROBE_HANDLED
                    case .now:
                        transport.stamp(info)
                        return GST_PAD_PROBE_OK
                    }
                }
            }
            chain.append(identity)
        }
        chain += link
        guard let first = chain.first, let last = chain.last, let bin = gst_bin_new(nil) else { return nil }
        let binObject = gcast(bin, to: GstBin.self)
        for element in chain { _ = gst_bin_add(binObject, element) }
        for (a, b) in zip(chain, chain.dropFirst()) { _ = gst_element_link(a, b) }
        for (name, element) in [("sink", first), ("src", last)] {
            guard let target = gst_element_get_static_pad(element, name) else { continue }
            if let ghost = gst_ghost_pad_new(name, target) { _ = gst_element_add_pad(bin, ghost) }
            gst_object_unref(UnsafeMutableRawPointer(target))
        }
        return UnsafeMutableRawPointer(bin)
    }
}
