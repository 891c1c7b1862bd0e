internal import CGStreamer
import CGstShim
import RTCSession

/// The live `appsrc` the publisher's pushed sources share (the synthetic camera's render
/// thread, an application's `FrameFeed`): I420 at the capture size, stamped with the
/// pipeline's running time when pushed (a live camera), and never more than two frames
/// waiting: a late frame is better dropped, oldest first, than sent late.
enum LiveFrameSource {
    static func make(width: Int, height: Int, fps: Int) throws(RTCError) -> Element {
        let element = try ElementFactory.make("appsrc", name: "source")
        element.set("caps", "video/x-raw,format=I420,width=\(width),height=\(height),framerate=\(fps)/1")
        element.set("is-live", true)
        element.set("format", "time")
        element.set("do-timestamp", true)
        element.set("max-buffers", 2)
        element.set("leaky-type", "downstream")
        return element
    }

    /// Two frames already wait in `appsrc` (a `make` source): the next push makes it drop
    /// its oldest (the streaming thread held up: a subscriber joining, a busy machine).
    static func isFull(_ appsrc: UnsafeMutableRawPointer, frameBytes: Int) -> Bool {
        pcg_object_get_uint64(appsrc, "current-level-bytes") >= UInt64(2 * frameBytes)
    }
}
