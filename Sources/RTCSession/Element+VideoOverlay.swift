internal import CGStreamer

extension Element {
    /// Tells a video sink (any GstVideoOverlay; glsinkbin passes it on to its sink) which
    /// window to draw into. Before the sink opens a window of its own: it then makes its
    /// drawing surface a child of `handle` (an X window id) and follows its size, so the
    /// window outlives the sink (the expert's one window across sessions).
    package func setOverlayWindowHandle(_ handle: UInt) {
        gst_video_overlay_set_window_handle(OpaquePointer(raw), guintptr(handle))
    }
}
