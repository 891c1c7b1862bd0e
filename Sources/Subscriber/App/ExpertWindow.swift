import CX11
import Foundation
import Synchronization

/// The expert's one window for the whole run (CX11's `pcx_window`): titled and classed
/// for PoseCast and the room, kept in its place and size across sessions and outages.
/// Each session's video sink draws its picture into it (`windowHandle`); the HUD is drawn
/// over the picture at the window's own resolution, whenever its text changes (the app
/// refreshes it once a second), and the backdrop's text shows where no picture covers
/// the window (before the first session, after one ends).
///
/// Its keys, its close button and its destruction come to `onInput` on the window's own
/// thread (presses inside the picture come from the sink, as before).
final class ExpertWindow: Sendable {
    /// The C window; nil once closed (taken out under the lock, closed outside it, so a
    /// callback during the close finds it gone rather than waiting on it).
    private let window: Mutex<OpaquePointer?>
    /// The callback's context, owned here: released after the C side is closed (the
    /// destroy notify of this boundary), never before.
    private let handler: Unmanaged<Handler>

    private final class Handler: Sendable {
        let onInput: @Sendable (WindowInput) -> Void
        init(_ onInput: @escaping @Sendable (WindowInput) -> Void) { self.onInput = onInput }
    }

    /// The video window's X id, for the video sinks (a child filling the window, under
    /// the HUD).
    let handle: UInt

    /// Nil when no X display can be opened (`$DISPLAY` unset or unreachable).
    init?(title: String, width: Int = 640, height: Int = 480, onInput: @escaping @Sendable (WindowInput) -> Void) {
        _ = pcx_init_threads()
        let handler = Unmanaged.passRetained(Handler(onInput))
        let callback: pcx_window_event = { context, kind, name in
            guard let context else { return }
            let handler = Unmanaged<Handler>.fromOpaque(context).takeUnretainedValue()
            let text = name.map { String(cString: $0) } ?? ""
            switch kind {
            case PCX_WINDOW_KEY_PRESS: handler.onInput(.key(text))
            case PCX_WINDOW_KEY_RELEASE: handler.onInput(.keyUp(text))
            case PCX_WINDOW_CLOSED: handler.onInput(.closed(text))
            case PCX_WINDOW_PRESS_OUTSIDE_PICTURE: handler.onInput(.press(button: Int(text) ?? 1, point: nil))
            default: break
            }
        }
        guard let raw = pcx_window_open(Int32(width), Int32(height), title, "posecast-subscriber", "PoseCast",
                                        callback, handler.toOpaque()) else {
            handler.release()
            return nil
        }
        self.handler = handler
        handle = UInt(pcx_window_video_xid(raw))
        window = Mutex(raw)
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
