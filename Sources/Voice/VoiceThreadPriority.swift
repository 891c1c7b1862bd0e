internal import CGStreamer
import CGstShim
import Foundation
import RTCSession
import Synchronization

/// The threads that carry voice (capture, a received voice's jitter-buffer output, the
/// mixers, the speaker's queue) run at nice −10, above the video's threads and anything
/// else at nice 0: 10–20 ms of audio must be handled every 10–20 ms, where a video frame
/// may wait a little. With two busy loops beside the nodes, voice at nice 0 lost 22–85 %
/// of its speech frames (`bench-voice --burners 2`).
///
/// A raise beyond nice 0 needs the right to it (root, CAP_SYS_NICE or a RLIMIT_NICE that
/// allows it); without it the voice keeps nice 0 and the process says so once on stderr.
package enum VoiceThreadPriority {
    package static let nice: Int32 = -10
    private static let refusalSaid = Atomic<Bool>(false)

    /// Raises the thread that pushes buffers through `pad`, at its first buffer and again
    /// whenever another thread takes over (a restarted source, a new task).
    package static func raise(on pad: Pad) {
        StreamingThreadPriority.set(on: pad, nice: nice) {
            guard !refusalSaid.exchange(true, ordering: .relaxed) else { return }
            FileHandle.standardError.write(Data(("voice: cannot raise the voice threads to nice \(nice) (no permission: root, "
                                                 + "CAP_SYS_NICE or RLIMIT_NICE); they stay at the video's priority\n").utf8))
        }
    }
}
