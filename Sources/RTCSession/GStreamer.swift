internal import CGStreamer
import Synchronization

/// One-time, thread-safe GStreamer initialisation (tests run in parallel).
public enum GStreamer {
    private static let outcome: Result<Void, RTCError> = {
        var error: UnsafeMutablePointer<GError>? = nil
        guard gst_init_check(nil, nil, &error) != 0 else {
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown reason"
            if let error { g_error_free(error) }
            return .failure(.initialisation(message))
        }
        return .success(())
    }()

    /// Initialises GStreamer once; later calls return the first outcome.
    public static func initialize() throws(RTCError) {
        try outcome.get()
    }

    /// "1.22.0"-style runtime version.
    public static var version: String {
        var major: guint = 0, minor: guint = 0, micro: guint = 0, nano: guint = 0
        gst_version(&major, &minor, &micro, &nano)
        return "\(major).\(minor).\(micro)"
    }
}
