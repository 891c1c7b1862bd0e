internal import CGStreamer
import CGstShim

extension WebRTCPeer {
    /// The jitter buffers' counters (elements' `stats`; a property read, not for a
    /// streaming thread). Nil before any stream arrived.
    public func jitterBufferStats() -> JitterBufferStats? {
        var total: JitterBufferStats?
        Element.forEachDescendant(of: webrtc.raw) { element in
            guard Element.factoryName(of: element) == "rtpjitterbuffer",
                  let structure = pcg_object_get_structure(UnsafeMutableRawPointer(element), "stats") else { return }
            defer { gst_structure_free(structure) }
            func u64(_ name: String) -> UInt64 {
                var value: guint64 = 0
                return gst_structure_get_uint64(structure, name, &value) != 0 ? UInt64(value) : 0
            }
            var s = total ?? JitterBufferStats()
            s.pushed += u64("num-pushed"); s.lost += u64("num-lost"); s.late += u64("num-late")
            s.retransmissionsRequested += u64("rtx-count"); s.retransmissionsReceived += u64("rtx-success-count")
            s.retransmissionRoundTripMs = max(s.retransmissionRoundTripMs, Double(u64("rtx-rtt")) / 1e6)
            total = s
        }
        return total
    }

    /// Sets the receive jitter buffers' latency (webrtcbin passes it to rtpbin, which
    /// sets every existing jitter buffer and the ones to come).
    public func setJitterBufferLatency(ms: Int) {
        webrtc.set("latency", ms)
    }
}
