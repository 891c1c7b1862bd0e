import CX11
import Foundation
import PoseCastKit
import Synchronization

/// The expert's one window for the whole run (CX11's `pcx_window`): titled and classed
/// for PoseCast and the room, kept in its place and size across sessions and outages.
/// Each session's pipeline scales its frames to `fit` and hands them to `draw` (no video
/// sink and no GL: `VideoWindow`); the HUD is drawn over the picture at the window's own
/// resolution, whenever its text changes (the app refreshes it once a second), and the
/// backdrop's text shows where no picture covers the window (before the first session,
/// after one ends).
///
/// Its keys, presses (with the point on the picture drawn last), its close button and its
/// destruction come to `onInput` on the window's own thread.
final class ExpertWindow: Sendable {
    /// The C window; nil once closed (taken out under the lock, closed outside it, so a
    /// callback during the close finds it gone rather than waiting on it).
    private let window: Mutex<OpaquePointer?>
    /// The callback's context, owned here: released after the C side is closed (the
    /// destroy notify of this boundary), never before.
    private let handler: Unmanaged<Handler>

    private final class Handler: Sendable {
        let onInput: @Sendable (WindowInput) -> Void
        /// The poses of the last frames drawn, by their tags (a press names the tag of the
        /// frame it fell on; a few are kept, as frames are drawn while a press is read).
        let shown = Mutex<(next: UInt64, poses: [(tag: UInt64, pose: FramePose?)])>((1, []))
        init(_ onInput: @escaping @Sendable (WindowInput) -> Void) { self.onInput = onInput }
        func pose(of tag: UInt64) -> FramePose? { shown.withLock { s in s.poses.last { $0.tag == tag }?.pose } }
        /// A tag for the next frame, remembering its pose.
        func tag(for pose: FramePose?) -> UInt64 {
            shown.withLock { s in
                defer { s.next += 1 }
                s.poses.append((s.next, pose))
                if s.poses.count > 8 { s.poses.removeFirst(s.poses.count - 8) }
                return s.next
            }
        }
    }

    /// Nil when no X display can be opened (`$DISPLAY` unset or unreachable).
    init?(title: String, width: Int = 640, height: Int = 480, onInput: @escaping @Sendable (WindowInput) -> Void) {
        _ = pcx_init_threads()
        let handler = Unmanaged.passRetained(Handler(onInput))
        let callback: pcx_window_event = { context, kind, name, x, y, tag in
            guard let context else { return }
            let handler = Unmanaged<Handler>.fromOpaque(context).takeUnretainedValue()
            let text = name.map { String(cString: $0) } ?? ""
            switch kind {
            case PCX_WINDOW_KEY_PRESS: handler.onInput(.key(text))
            case PCX_WINDOW_KEY_RELEASE: handler.onInput(.keyUp(text))
            case PCX_WINDOW_CLOSED: handler.onInput(.closed(text))
            case PCX_WINDOW_PRESS:
                let point = x >= 0 && y >= 0 ? NormalizedPoint(x: Float(x), y: Float(y)) : nil
                handler.onInput(.press(button: Int(text) ?? 1, point: point, shown: point == nil ? nil : handler.pose(of: tag)))
            default: break
            }
        }
        guard let raw = pcx_window_open(Int32(width), Int32(height), title, "posecast-subscriber", "PoseCast",
                                        callback, handler.toOpaque()) else {
            handler.release()
            return nil
        }
        guard pcx_window_can_draw(raw) != 0 else {
            // A screen whose pixels are not 24-bit BGRx: the sinks' own windows instead.
            pcx_window_close(raw)
            handler.release()
            return nil
        }
        self.handler = handler
        window = Mutex(raw)
    }

    /// The size to scale a frame of `source` pixels to for the window as it is now.
    func fit(source: (width: Int, height: Int), pixelAspect: (numerator: Int, denominator: Int)) -> PictureFit? {
        window.withLock { w -> PictureFit? in
            guard let w else { return nil }
            var width: Int32 = 0, height: Int32 = 0
            pcx_window_size(w, &width, &height)
            return PictureFit(source: source, pixelAspect: pixelAspect, window: (Int(width), Int(height)))
        }
    }

    /// Shows a frame of BGRx pixels, centred (copied before it returns; on a streaming
    /// thread), and keeps its pose as the one on screen. False once the window is gone.
    @discardableResult
    func draw(pixels: UnsafeRawPointer, width: Int, height: Int, stride: Int, pose: FramePose?) -> Bool {
        let handler = handler
        let address = UInt(bitPattern: pixels)   // the pointer crosses the lock's closure as a number
        return window.withLock { w -> Bool in
            // Under the lock: the handler lives while the window does (`close`).
            guard let w, let pixels = UnsafePointer<UInt8>(bitPattern: address) else { return false }
            let tag = handler.takeUnretainedValue().tag(for: pose)
            return pcx_window_draw_frame(w, pixels, Int32(width), Int32(height), Int32(stride), tag) != 0
        }
    }

    /// The HUD's lines ("" hides it).
    func setHUD(_ text: String) {
        window.withLock { w in if let w { pcx_window_set_hud(w, text) } }
    }

    /// The backdrop's text as last set (only a change redraws it: a redraw clears the
    /// video window, which a sink drawing straight into it would show as a flash).
    private let backdrop = Mutex("")

    /// What the window says where no picture covers it ("" while a picture does).
    func setBackdrop(_ text: String) {
        guard backdrop.withLock({ last in defer { last = text }; return last != text }) else { return }
        window.withLock { w in if let w { pcx_window_set_backdrop(w, text) } }
    }

    /// Closes it (idempotent); no input arrives after this returns. Not from `onInput`.
    func close() {
        guard let raw = window.withLock({ w -> OpaquePointer? in defer { w = nil }; return w }) else { return }
        pcx_window_close(raw)
        handler.release()
    }

    deinit { close() }
}
