internal import CGStreamer
import CGstShim

extension WebRTCPeer {
    /// Lets ICE notice a peer that vanished without a word (killed, unplugged) while no
    /// signaling server can say so: a subscriber killed while the server was being
    /// restarted leaves its session unknown to the new server. libnice 0.1.21 (Debian 12)
    /// is built without RFC 7675 consent freshness, so a connected pair never fails by
    /// itself: its keepalives are STUN indications, which nobody answers. With
    /// `keepalive-conncheck` they are binding requests; when they go unanswered (some
    /// 30–60 s with libnice's timers) the component fails, and with it the connection
    /// state (`.connectionState(.failed)`). Returns false when the ICE backend is not
    /// libnice (no `agent` property), which leaves things as they were.
    @discardableResult
    package func enableKeepaliveChecks() -> Bool {
        guard let ice = pcg_object_get_pointer(webrtc.object, "ice-agent") else { return false }
        defer { g_object_unref(ice) }
        // The libnice backend exposes its NiceAgent; other backends have no such property.
        guard let klass = gcast(ice, to: GTypeInstance.self).pointee.g_class,
              g_object_class_find_property(gcast(klass, to: GObjectClass.self), "agent") != nil,
              let agent = pcg_object_get_pointer(ice, "agent") else { return false }
        defer { g_object_unref(agent) }
        gst_util_set_object_arg(gcast(agent, to: GObject.self), "keepalive-conncheck", "true")
        return true
    }
}
