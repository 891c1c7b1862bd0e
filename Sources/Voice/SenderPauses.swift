import RTCSession
internal import CGStreamer
import Synchronization

/// Whether the packet a voice's decoder took last came after a pause in the sender's
/// timestamps (Opus DTX: a muted sender sends a comfort-noise packet every 200–400 ms).
///
/// Why the re-timing must know: opusdec with in-band FEC holds each frame until the next
/// packet arrives (it may carry the frame's FEC copy), so the frame before a pause leaves
/// the decoder only when the packet after the pause comes in, hundreds of milliseconds
/// "late". Taken for a hold-up of a busy machine, every mute doubled the slack of the
/// voice's re-timing up to its limit: the field heard the expert 60 ms later for the rest
/// of the call (scripts/bench-voice, expert → field 195 ms). The probe and the re-timing
/// run on the same streaming thread (the decoder pushes while handling the next packet),
/// so the flag read is the one for the packet that released the frame.
package final class SenderPauses: Sendable {
    private struct State { var lastPts: UInt64?; var followedPause = false }
    private let state = Mutex(State())
    /// A gap in the sender's timestamps longer than this is a pause (a frame is 10–20 ms;
    /// one lost packet leaves 20–40).
    package static let pauseNanos: UInt64 = 60_000_000

    /// Watches the decoder's sink pad (the depayloaded packets). The pad's probe keeps
    /// this object (it holds nothing back).
    package init(decoderInput pad: Pad) {
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            guard let buffer = gst_pad_probe_info_get_buffer(info), buffer.pointee.pts != GstClockTime.max else { return GST_PAD_PROBE_OK }
            let pts = UInt64(buffer.pointee.pts)
            self.state.withLock { s in
                s.followedPause = s.lastPts.map { pts > $0 && pts - $0 > Self.pauseNanos } ?? false
                s.lastPts = pts
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// Whether the last packet in came after a pause.
    package var lastFollowedPause: Bool { state.withLock { $0.followedPause } }
}
