internal import CGStreamer
internal import CDTLS
import Foundation
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

    /// Starts, on a thread of its own, the RSA-2048 key that GStreamer's DTLS elements make
    /// once per process, so that the first connection does not wait for it.
    ///
    /// GStreamer 1.22's `dtlsdec` generates that key when its first instance is created
    /// (webrtcbin creates one when it takes its first description), even where a `pem` of
    /// our own replaces it a moment later (`DTLSCertificate`): 0.2–0.7 s of one core on
    /// these machines, and four subscribers starting at once beside busy loops waited
    /// 1.5–2.6 s for it between their description and their ICE checks. Call at a node's
    /// start; later calls do nothing. Drop when GStreamer makes that key lazily.
    public static func prepareDTLS() {
        guard (try? initialize()) != nil, !dtlsPrepared.exchange(true, ordering: .relaxed) else { return }
        // A node may exit while the key is being made (a bad option): no OpenSSL clean-up
        // at exit under it (`pcdtls_init_without_exit_cleanup`).
        guard pcdtls_init_without_exit_cleanup() == 1 else { return }
        Thread.detachNewThread {
            // The key is process-wide (a g_once in gstdtlsdec.c): one element made and dropped.
            guard let element = gst_element_factory_make("dtlsdec", nil) else { return }
            gst_object_unref(gst_object_ref_sink(element))
        }
    }

    private static let dtlsPrepared = Atomic<Bool>(false)

    /// "1.22.0"-style runtime version.
    public static var version: String {
        var major: guint = 0, minor: guint = 0, micro: guint = 0, nano: guint = 0
        gst_version(&major, &minor, &micro, &nano)
        return "\(major).\(minor).\(micro)"
    }
}
