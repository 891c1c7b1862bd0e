internal import CGStreamer
import CGstShim

/// Settings of webrtcbin's libnice agent that webrtcbin 1.22 does not expose itself.
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
    package func enableKeepaliveChecks() -> Bool { setNiceAgent("keepalive-conncheck", "true") }

    /// Turns off libnice's UPnP port mapping. Debian's libnice is built with GUPnP-IGD and
    /// has it on by default: every agent then starts its own discovery thread, opens SSDP
    /// sockets and multicasts `M-SEARCH … WANIPConnection` on every interface, once per
    /// session, to map a port on a home router. A peer on loopback or behind a TURN relay
    /// has no use for that; it is traffic nobody asked for (docs/SECURITY.md), and the
    /// discovery's thread and sockets outlive the session by seconds. Called before any
    /// gathering (at init); false when the ICE backend is not libnice.
    @discardableResult
    package func disableUPnP() -> Bool { setNiceAgent("upnp", "false") }

    /// Gathers ICE-TCP host candidates or not (webrtcbin's libnice backend gathers them by
    /// default). With them, ICE nominated a TCP pair on a lossy path in 3 of 12 kernel-path
    /// runs (`scripts/bench-paths`, 1–3 % loss), when the UDP pair's first checks were
    /// lost: TCP then repairs every loss itself, a lost segment holds back all behind it
    /// (the receiver read 30–98 ms of queueing at a third of a 3 Mbit/s link, so
    /// congestion control sent 938 kbit/s instead of 1702), and no NACK or keyframe
    /// request can help. A relay over TCP (TURN) does not depend on this. Called before
    /// any gathering (at init); false when the ICE backend is not libnice's.
    @discardableResult
    package func setICETCP(_ on: Bool) -> Bool {
        withICEObject(having: "ice-tcp") { ice in gst_util_set_object_arg(gcast(ice, to: GObject.self), "ice-tcp", on ? "true" : "false") }
    }

    /// Sets a property of the NiceAgent behind webrtcbin's `ice-agent`; false when there
    /// is none (another ICE backend).
    private func setNiceAgent(_ property: String, _ value: String) -> Bool {
        withNiceAgent { agent in gst_util_set_object_arg(gcast(agent, to: GObject.self), property, value) }
    }

    /// Runs `body` with the NiceAgent behind webrtcbin's `ice-agent` (borrowed for the
    /// call); false when there is none (another ICE backend).
    func withNiceAgent(_ body: (UnsafeMutableRawPointer) -> Void) -> Bool {
        var found = false
        // The libnice backend exposes its NiceAgent; other backends have no such property.
        _ = withICEObject(having: "agent") { ice in
            guard let agent = pcg_object_get_pointer(ice, "agent") else { return }
            defer { g_object_unref(agent) }
            body(agent)
            found = true
        }
        return found
    }

    /// Runs `body` with webrtcbin's ICE object (`ice-agent`, borrowed for the call) when
    /// its class has `property`; false when it has not (another ICE backend) or is absent.
    private func withICEObject(having property: String, _ body: (UnsafeMutableRawPointer) -> Void) -> Bool {
        guard let ice = pcg_object_get_pointer(webrtc.object, "ice-agent") else { return false }
        defer { g_object_unref(ice) }
        guard let klass = gcast(ice, to: GTypeInstance.self).pointee.g_class,
              g_object_class_find_property(gcast(klass, to: GObjectClass.self), property) != nil else { return false }
        body(ice)
        return true
    }
}
