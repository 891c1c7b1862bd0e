internal import CGStreamer
import CGstShim
import CX11
import PoseCastKit
import PoseMedia
import RTCSession
import Synchronization
import Foundation

/// What a person does in the video window, as the window reports it.
public enum WindowInput: Sendable, Equatable {
    /// A mouse button went down: 1 left, 2 middle, 3 right (4–7: the wheel, on X11). The
    /// point on the picture, normalised, or nil when the press fell on the black border
    /// around it (glimagesink clamps such a press to the picture's edge: a press exactly
    /// on the edge counts as the border).
    /// `shown`: the pose of the frame on screen when the button went down (the last frame
    /// the window drew), nil when it carried none.
    case press(button: Int, point: NormalizedPoint?, shown: FramePose? = nil)
    /// A key went down, named as the window system names it (X11 keysym names: "q",
    /// "Escape", "BackSpace" …).
    case key(String)
    /// A key went up (push-to-talk: talking while it is held).
    case keyUp(String)
    /// The window was closed (its close button, or the window went away): the reason.
    case closed(String)
}

/// The display branch of the subscriber: the decoded picture, scaled to a window with the
/// aspect ratio kept. Two ways:
///
/// - **Into the app's one window** (`ExpertWindow`, which draws the HUD at its own
///   resolution and reads the presses itself):
///   decoder → queue (one frame, leaky) → videoconvertscale → BGRx at the window's fit → fakesink,
///   whose buffer probe hands each frame to the window (MIT-SHM, no GL). Scaling and
///   conversion are one pass on the CPU; the size follows the window (`PictureFit`, asked
///   again after every frame: a resize or a new stream size renegotiates the capsfilter).
///   glimagesink here cost 46 % of a core at 640×480 under software GL (llvmpipe).
/// - **A window of the sink's own** (no X window of ours could be made):
///   decoder → queue (one frame, leaky) → textoverlay (HUD) → glimagesink, which scales
///   (`force-aspect-ratio`) and translates the pointer into picture pixels before it sends
///   navigation events upstream; a press on the border comes out clamped to the picture's
///   edge, which we report as `point: nil`. Where the GL sink cannot be made,
///   `autovideosink` (unscaled) is the fallback.
///
/// - **Latency**: the one-frame leaky queue decouples decoding from drawing. A window that
///   is not drawing yet (mapping, a compositor catching up) makes frames wait; without
///   the leaky queue they pile up in the jitter buffer and are shown late (p50 715 ms in
///   the first seconds), with it the newest decoded frame replaces the waiting one.
/// - **Closing**: glimagesink posts an error when its window is closed; it is reported as
///   `.closed`, not as a failure of the session (the app's window reports its own).
final class VideoWindow: Sendable {
    let elements: [Element]
    private let overlay: Element?
    private let sink: Element
    /// The pose of the last frame that reached the window's sink: the frame on screen.
    private let shown = ShownFrame()

    final class ShownFrame: Sendable {
        let pose = Mutex<FramePose?>(nil)

        /// Keeps the pose of every buffer passing `pad` (a probe on its streaming thread).
        func record(at pad: Pad) {
            _ = pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [self] info in
                if let buffer = gst_pad_probe_info_get_buffer(info) {
                    let pose = PoseMeta.bytes(of: buffer).flatMap { try? PoseWireFormat.decode($0) }
                    self.pose.withLock { $0 = pose }
                }
                return GST_PAD_PROBE_OK
            }
        }
    }

    /// `window`: the app's window to draw into (it draws the HUD and reads presses
    /// itself); nil: the sink's own window, with the HUD drawn into the picture by a
    /// textoverlay.
    init(onInput: (@Sendable (WindowInput) -> Void)?, window: ExpertWindow? = nil) throws(RTCError) {
        var elements: [Element] = []
        let queue = try ElementFactory.make("queue")
        queue.set("max-size-buffers", 1)
        queue.set("max-size-bytes", 0)
        queue.set("max-size-time", 0)
        queue.set("leaky", "downstream")
        elements.append(queue)
        if let window {
            overlay = nil
            if ElementFactory.isAvailable("videoconvertscale") {
                elements.append(try ElementFactory.make("videoconvertscale"))
            } else {
                elements += [try ElementFactory.make("videoscale"), try ElementFactory.make("videoconvert")]
            }
            let fit = try ElementFactory.make("capsfilter")
            fit.set("caps", "video/x-raw,format=BGRx")
            elements.append(fit)
            sink = try ElementFactory.make("fakesink")
            sink.set("sync", false)
            sink.set("async", false)
            elements.append(sink)
            self.elements = elements
            Self.drawFrames(from: queue.staticPad("src")!, fit: fit, sink: sink, into: window, shown: shown)
            if let onInput { Self.catchXErrors(reportingTo: onInput) }
            return
        }
        // After the queue, on the window's thread: the first text render loads fonts (some
        // 100 ms), which must not hold up decoding.
        overlay = try? ElementFactory.make("textoverlay")
        if let overlay {
            overlay.set("valignment", "top")
            overlay.set("halignment", "left")
            overlay.set("font-desc", "Sans 9")
            overlay.set("shaded-background", true)
            overlay.set("wait-text", false)
            overlay.set("line-alignment", "left")
            elements.append(overlay)
        }
        if ElementFactory.isAvailable("glimagesink") {
            sink = try ElementFactory.make("glimagesink")
            sink.set("force-aspect-ratio", true)
            sink.set("handle-events", true)
        } else {
            elements.append(try ElementFactory.make("videoconvert"))
            sink = try ElementFactory.make("autovideosink")
        }
        sink.set("sync", false)
        // It waits, linked, for the first stream: no preroll to hold the pipeline's start.
        sink.set("async", false)
        elements.append(sink)
        self.elements = elements
        let shown = self.shown
        shown.record(at: sink.staticPad("sink")!)
        if let onInput {
            Self.watchInput(on: queue.staticPad("src")!, shown: shown, onInput: onInput)
            Self.catchXErrors(reportingTo: onInput)
        }
    }

    /// The app's window mode, on the window's streaming thread: each frame's pose is read
    /// as it leaves the queue (before conversion, which need not keep our meta) and goes
    /// with the converted frame to the window; then the fit is asked again and, when the
    /// window or the stream changed size, set on the capsfilter for the next frame.
    private static func drawFrames(from queueSource: Pad, fit: Element, sink: Element, into window: ExpertWindow,
                                   shown: ShownFrame) {
        shown.record(at: queueSource)
        let asked = Mutex<PictureFit?>(nil)
        let sinkPad = sink.staticPad("sink")!
        _ = sinkPad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [sinkPad, queueSource] info in
            guard let buffer = gst_pad_probe_info_get_buffer(info),
                  let width = sinkPad.capsInt("width"), let height = sinkPad.capsInt("height"), width > 0, height > 0
            else { return GST_PAD_PROBE_OK }
            var map = GstMapInfo()
            if gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 {
                if let data = map.data, Int(map.size) >= width * 4 * height {
                    window.draw(pixels: data, width: width, height: height, stride: Int(map.size) / height,
                                pose: shown.pose.withLock { $0 })
                }
                gst_buffer_unmap(buffer, &map)
            }
            guard let sourceWidth = queueSource.capsInt("width"), let sourceHeight = queueSource.capsInt("height"),
                  let wanted = window.fit(source: (sourceWidth, sourceHeight),
                                          pixelAspect: queueSource.capsFraction("pixel-aspect-ratio") ?? (1, 1))
            else { return GST_PAD_PROBE_OK }
            let change = asked.withLock { last -> Bool in
                guard last != wanted else { return false }
                last = wanted
                return true
            }
            if change {
                fit.set("caps", "video/x-raw,format=BGRx,width=\(wanted.width),height=\(wanted.height),pixel-aspect-ratio=1/1")
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// Reports the window's close (glimagesink's "Output window was closed" error and the
    /// like, from the sink) through `onInput`; other errors of the sink go to `onError`.
    func watchClose(in pipeline: Pipeline, onInput: @escaping @Sendable (WindowInput) -> Void,
                    onError: @escaping @Sendable (RTCError) -> Void) {
        _ = pipeline.addObserver(.within(sink)) { message in
            guard case let .error(source, text, debug) = message else { return }
            if text.localizedCaseInsensitiveContains("window was closed") || text.localizedCaseInsensitiveContains("quit requested") {
                onInput(.closed(text))
            } else {
                onError(.pipeline(source: source, message: text, debug: debug))
            }
        }
    }

    /// Xlib errors go to the newest window's input as `.closed` when they say its window is
    /// gone (BadWindow, BadDrawable), instead of ending the process (`CX11`).
    private static let xErrorListener = Mutex<(@Sendable (WindowInput) -> Void)?>(nil)

    static func catchXErrors(reportingTo onInput: @escaping @Sendable (WindowInput) -> Void) {
        xErrorListener.withLock { $0 = onInput }
        _ = pcx_install_error_handler { code, request in
            // 3 BadWindow, 9 BadDrawable: the window was destroyed under the sink.
            let gone = code == 3 || code == 9
            let text = "X error \(code) on request \(request)" + (gone ? ": the window is gone" : " (ignored)")
            if gone { VideoWindow.xErrorListener.withLock { $0 }?(.closed(text)) }
            else { FileHandle.standardError.write(Data("posecast-subscriber: \(text)\n".utf8)) }
        }
    }

    /// The HUD text (Pango markup off: shown as given); empty hides it (the sink's own
    /// window only: the app's window draws its own).
    func setHUD(_ text: String) { overlay?.set("text", text) }

    /// The sink sends navigation events upstream, in picture pixels: a probe where they
    /// pass turns button and key presses into `WindowInput`.
    private static func watchInput(on pad: Pad, shown: ShownFrame, onInput: @escaping @Sendable (WindowInput) -> Void) {
        _ = pad.addProbe(GST_PAD_PROBE_TYPE_EVENT_UPSTREAM) { [pad] info in
            guard let event = gst_pad_probe_info_get_event(info) else { return GST_PAD_PROBE_OK }
            switch gst_navigation_event_get_type(event) {
            case GST_NAVIGATION_EVENT_MOUSE_BUTTON_PRESS:
                var button: Int32 = 0
                var x = 0.0, y = 0.0
                guard gst_navigation_event_parse_mouse_button_event(event, &button, &x, &y) != 0 else { break }
                var point: NormalizedPoint?
                if let width = pad.capsInt("width").map(Double.init), let height = pad.capsInt("height").map(Double.init),
                   width > 0, height > 0, x > 0, y > 0, x < width, y < height {
                    point = NormalizedPoint(x: Float(x / width), y: Float(y / height))
                }
                onInput(.press(button: Int(button), point: point, shown: shown.pose.withLock { $0 }))
            case GST_NAVIGATION_EVENT_MOUSE_SCROLL:
                // The wheel: on X11 buttons 4 and 5, reported as such.
                var x = 0.0, y = 0.0, dx = 0.0, dy = 0.0
                guard gst_navigation_event_parse_mouse_scroll_event(event, &x, &y, &dx, &dy) != 0 else { break }
                var point: NormalizedPoint?
                if let width = pad.capsInt("width").map(Double.init), let height = pad.capsInt("height").map(Double.init),
                   width > 0, height > 0, x > 0, y > 0, x < width, y < height {
                    point = NormalizedPoint(x: Float(x / width), y: Float(y / height))
                }
                onInput(.press(button: dy > 0 ? 4 : 5, point: point, shown: nil))
            case GST_NAVIGATION_EVENT_KEY_PRESS:
                var key: UnsafePointer<CChar>?
                guard gst_navigation_event_parse_key_event(event, &key) != 0, let key else { break }
                onInput(.key(String(cString: key)))
            case GST_NAVIGATION_EVENT_KEY_RELEASE:
                var key: UnsafePointer<CChar>?
                guard gst_navigation_event_parse_key_event(event, &key) != 0, let key else { break }
                onInput(.keyUp(String(cString: key)))
            default:
                break
            }
            return GST_PAD_PROBE_OK
        }
    }
}
