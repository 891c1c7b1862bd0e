internal import CGStreamer

/// g_signal_connect with a Swift closure boxed into user_data and released by the
/// GClosureNotify when the handler is disconnected or the instance finalised.
/// One trampoline per signal shape, because a C callback cannot be generic.
enum Signal {
    /// `void handler(GObject *self, gpointer user_data)`
    static func connect(_ instance: UnsafeMutableRawPointer, _ name: String,
                        _ body: @escaping @Sendable () -> Void) -> UInt {
        let trampoline: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { _, ud in
            Unmanaged<Box0>.fromOpaque(ud!).takeUnretainedValue().body()
        }
        return connectRaw(instance, name, unsafeBitCast(trampoline, to: GCallback.self),
                          Unmanaged.passRetained(Box0(body) as AnyObject).toOpaque())
    }

    /// `void handler(GObject *self, gpointer arg, gpointer user_data)`: one pointer argument.
    static func connect(_ instance: UnsafeMutableRawPointer, _ name: String,
                        _ body: @escaping @Sendable (UnsafeMutableRawPointer?) -> Void) -> UInt {
        let trampoline: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { _, arg, ud in
            Unmanaged<Box1>.fromOpaque(ud!).takeUnretainedValue().body(arg)
        }
        return connectRaw(instance, name, unsafeBitCast(trampoline, to: GCallback.self),
                          Unmanaged.passRetained(Box1(body) as AnyObject).toOpaque())
    }

    /// `void handler(GObject *self, guint n, gchar *s, gpointer user_data)` (on-ice-candidate).
    static func connect(_ instance: UnsafeMutableRawPointer, _ name: String,
                        _ body: @escaping @Sendable (UInt32, String) -> Void) -> UInt {
        let trampoline: @convention(c) (UnsafeMutableRawPointer?, guint, UnsafePointer<gchar>?, UnsafeMutableRawPointer?) -> Void = { _, n, s, ud in
            Unmanaged<BoxUIntString>.fromOpaque(ud!).takeUnretainedValue().body(n, s.map { String(cString: $0) } ?? "")
        }
        return connectRaw(instance, name, unsafeBitCast(trampoline, to: GCallback.self),
                          Unmanaged.passRetained(BoxUIntString(body) as AnyObject).toOpaque())
    }

    static func disconnect(_ instance: UnsafeMutableRawPointer, _ id: UInt) {
        if g_signal_handler_is_connected(instance, gulong(id)) != 0 {
            g_signal_handler_disconnect(instance, gulong(id))
        }
    }

    private static func connectRaw(_ instance: UnsafeMutableRawPointer, _ name: String,
                                   _ callback: GCallback, _ userData: UnsafeMutableRawPointer) -> UInt {
        UInt(g_signal_connect_data(instance, name, callback, userData, { ud, _ in
            Unmanaged<AnyObject>.fromOpaque(ud!).release()
        }, GConnectFlags(rawValue: 0)))
    }

    private final class Box0 { let body: @Sendable () -> Void; init(_ b: @escaping @Sendable () -> Void) { body = b } }
    private final class Box1 {
        let body: @Sendable (UnsafeMutableRawPointer?) -> Void
        init(_ b: @escaping @Sendable (UnsafeMutableRawPointer?) -> Void) { body = b }
    }
    private final class BoxUIntString {
        let body: @Sendable (UInt32, String) -> Void
        init(_ b: @escaping @Sendable (UInt32, String) -> Void) { body = b }
    }
}
