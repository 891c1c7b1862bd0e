internal import CGStreamer
import CGstShim
import Synchronization

/// Sets the nice level of whichever thread pushes buffers through a pad: at its first
/// buffer, and again whenever another thread takes over (a restarted source, a new
/// task). Linux keeps a nice value per thread, so only that streaming thread moves.
package enum StreamingThreadPriority {
    /// `refused` runs on the streaming thread each time the kernel refuses (a raise above
    /// nice 0 needs root, CAP_SYS_NICE or an RLIMIT_NICE that allows it).
    package static func set(on pad: Pad, nice: Int32, refused: @escaping @Sendable () -> Void) {
        let last = Atomic<UInt>(0)
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { _ in
            let thread = UInt(pthread_self())
            guard last.exchange(thread, ordering: .relaxed) != thread else { return GST_PAD_PROBE_OK }
            if pcg_nice_current_thread(nice) == 0 { refused() }
            return GST_PAD_PROBE_OK
        }
    }
}
