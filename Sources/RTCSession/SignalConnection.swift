internal import CGStreamer

/// The one way PoseCast connects to a GObject signal: g_signal_connect_data with a Swift
/// closure boxed into user_data (`SignalBox`, retained) and released by the destroy
/// notify when the handler is disconnected or the instance finalised. One C trampoline
/// per signal shape, because a C callback can be neither generic nor capturing; the
/// instance argument every signal passes first is not handed on.
package enum Signal {
    /// `void handler(GObject *self, gpointer user_data)`
    package static func connect(_ instance: UnsafeMutableRawPointer, _ name: String,
                                _ body: @escaping @Sendable () -> Void) -> UInt {
        let trampoline: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { _, ud in
            SignalBox<@Sendable () -> Void>.body(ud)()
        }
        return connect(instance, name, unsafeBitCast(trampoline, to: GCallback.self), body)
    }

    /// `void handler(GObject *self, gpointer arg, gpointer user_data)`: one pointer argument.
    package static func connect(_ instance: UnsafeMutableRawPointer, _ name: String,
                                _ body: @escaping @Sendable (UnsafeMutableRawPointer?) -> Void) -> UInt {
        let trampoline: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { _, arg, ud in
            SignalBox<@Sendable (UnsafeMutableRawPointer?) -> Void>.body(ud)(arg)
        }
        return connect(instance, name, unsafeBitCast(trampoline, to: GCallback.self), body)
    }

    /// `void handler(GObject *self, gpointer a, gpointer b, gpointer user_data)`: two
    /// pointer arguments (fakesink's handoff: buffer, pad).
    package static func connect(_ instance: UnsafeMutableRawPointer, _ name: String,
                                _ body: @escaping @Sendable (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void) -> UInt {
        let trampoline: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?,
                                        UnsafeMutableRawPointer?) -> Void = { _, a, b, ud in
            SignalBox<@Sendable (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void>.body(ud)(a, b)
        }
        return connect(instance, name, unsafeBitCast(trampoline, to: GCallback.self), body)
    }

    /// `void handler(GObject *self, gpointer p, guint a, guint b, gpointer user_data)`
    /// (rtpbin's new-jitterbuffer: jitter buffer, session, ssrc).
    package static func connect(_ instance: UnsafeMutableRawPointer, _ name: String,
                                _ body: @escaping @Sendable (UnsafeMutableRawPointer?, UInt32, UInt32) -> Void) -> UInt {
        let trampoline: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, guint, guint,
                                        UnsafeMutableRawPointer?) -> Void = { _, p, a, b, ud in
            SignalBox<@Sendable (UnsafeMutableRawPointer?, UInt32, UInt32) -> Void>.body(ud)(p, a, b)
        }
        return connect(instance, name, unsafeBitCast(trampoline, to: GCallback.self), body)
    }

    /// `void handler(GObject *self, guint n, gchar *s, gpointer user_data)` (on-ice-candidate).
    package static func connect(_ instance: UnsafeMutableRawPointer, _ name: String,
                                _ body: @escaping @Sendable (UInt32, String) -> Void) -> UInt {
        let trampoline: @convention(c) (UnsafeMutableRawPointer?, guint, UnsafePointer<gchar>?, UnsafeMutableRawPointer?) -> Void = { _, n, s, ud in
            SignalBox<@Sendable (UInt32, String) -> Void>.body(ud)(n, s.map { String(cString: $0) } ?? "")
        }
        return connect(instance, name, unsafeBitCast(trampoline, to: GCallback.self), body)
    }

    /// `gpointer handler(GObject *self, gpointer arg, gpointer user_data)`: a signal whose
    /// handler returns an object (webrtcbin's request-aux-sender); ownership of the return
    /// value is the signal's contract, stated at the connecting site.
    package static func connectReturning(_ instance: UnsafeMutableRawPointer, _ name: String,
                                         _ body: @escaping @Sendable (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?) -> UInt {
        let trampoline: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?,
                                        UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { _, arg, ud in
            SignalBox<@Sendable (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?>.body(ud)(arg)
        }
        return connect(instance, name, unsafeBitCast(trampoline, to: GCallback.self), body)
    }

    package static func disconnect(_ instance: UnsafeMutableRawPointer, _ id: UInt) {
        if g_signal_handler_is_connected(instance, gulong(id)) != 0 {
            g_signal_handler_disconnect(instance, gulong(id))
        }
    }

    /// Boxes `body` (one retain, owned by the connection) and connects; 0 when no such signal.
    private static func connect<F>(_ instance: UnsafeMutableRawPointer, _ name: String, _ callback: GCallback,
                                   _ body: F) -> UInt {
        let userData = Unmanaged.passRetained(SignalBox(body)).toOpaque()
        return UInt(g_signal_connect_data(instance, name, callback, userData, { ud, _ in
            guard let ud else { return }
            Unmanaged<AnyObject>.fromOpaque(ud).release()
        }, GConnectFlags(rawValue: 0)))
    }
}

/// A signal handler's closure as user_data: retained by the connection, released by its
/// destroy notify.
private final class SignalBox<F> {
    let body: F
    init(_ body: F) { self.body = body }
    /// The closure behind a trampoline's user_data (borrowed: the connection keeps it).
    static func body(_ userData: UnsafeMutableRawPointer?) -> F {
        Unmanaged<SignalBox<F>>.fromOpaque(userData!).takeUnretainedValue().body
    }
}
