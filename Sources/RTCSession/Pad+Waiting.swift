package import CGStreamer

extension Pad {
    /// Waits, without polling, until the pad has negotiated caps (`notify::caps`), or
    /// `timeout` has passed. Returns whether it has them.
    package func waitForCaps(timeout: Duration) async -> Bool {
        if gst_pad_has_current_caps(raw) != 0 { return true }
        let outcome = OnceResult<Bool>()
        // Strong: the handler is disconnected below, before the wrapper can go.
        let handler = Signal.connect(UnsafeMutableRawPointer(raw), "notify::caps") { [self] (_: UnsafeMutableRawPointer?) in
            if gst_pad_has_current_caps(self.raw) != 0 { outcome.finish(true) }
        }
        // Caps set between the first check and the connection: no notify will come.
        if gst_pad_has_current_caps(raw) != 0 { outcome.finish(true) }
        let has = await outcome.value(orAfter: timeout, false)
        Signal.disconnect(UnsafeMutableRawPointer(raw), handler)
        return has
    }

    /// Unlinks this source pad from `peer` once no buffer is passing through it (an IDLE
    /// probe: at once when the pad is idle, else from its streaming thread right after the
    /// current buffer), then calls `done` (on whichever thread unlinked: keep it quick).
    package func unlinkWhenIdle(from peer: Pad, then done: @escaping @Sendable () -> Void) {
        // The probe owns both wrappers until it has run (GST_PAD_PROBE_REMOVE frees it).
        addProbe(GST_PAD_PROBE_TYPE_IDLE) { [self, peer] _ in
            _ = gst_pad_unlink(self.raw, peer.raw)
            done()
            return GST_PAD_PROBE_REMOVE
        }
    }
}
