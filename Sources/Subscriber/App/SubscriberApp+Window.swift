import Foundation
import NodeOutput
import PoseCastKit
import Voice

/// What the window's buttons and keys do (README, "The expert's window"):
/// - left click: a pin where clicked (a second press within `doubleClickNanos` and a few
///   pixels of the first is the same click: one pin);
/// - right click: focus there (tapToAutoFocus); `l` locks focus at the last right-click
///   point (the centre before any), or unlocks when the publisher's focus is locked;
/// - `u` or BackSpace: remove the newest pin of ours; `c` or Delete: remove all of ours;
///   `C` (Shift+c) twice within 3 s: clear every expert's pins (the first press asks);
/// - `m`: next metering mode (uniform, spot, weighted); `h`: HUD on/off; `?`: these
///   hints for `hintsNanos` (also at the start and when the HUD comes back on: on a small
///   window the hints alone took half the picture);
/// - the wheel: the publisher's digital zoom, ×1.25 a notch (up in, down out, 1…4),
///   keeping the point under the pointer where it is (`zoomCentre`); `z`: back to the
///   framing (zoom off);
/// - `v`: microphone on/off; with push-to-talk, hold the space bar to talk;
/// - `q` or Escape, or the window's close button: quit (exit 0).
/// The middle button does nothing; a press on the black border is refused here and said so.
struct WindowControls: Sendable {
    static let doubleClickNanos: UInt64 = 400_000_000
    static let doubleClickPixels: Float = 0.01
    static let meteringModes: [MeteringMode] = [.uniform, .spot, .weighted]
    static let hints = "left: pin · right: focus · wheel: zoom · z: unzoom · l: lock/unlock focus · u: undo · c: clear mine · C C: clear all · m: metering · v: mute · space: talk · h: HUD · ?: these keys · q: quit"
    static let clearAllConfirmNanos: UInt64 = 3_000_000_000
    static let hintsNanos: UInt64 = 10_000_000_000
    static let zoomStep = 1.25

    var lastLeftPress: (nanos: UInt64, point: NormalizedPoint)?
    /// When `C` last asked to clear everyone's pins (a second `C` within 3 s does it).
    var clearAllAskedAt: UInt64?
    var focusPoint = NormalizedPoint(x: 0.5, y: 0.5)
    var meteringIndex = 2
    /// The zoom this window asked for last (1: none).
    var zoom = 1.0
    var hudVisible = true
    /// The hints show in the HUD until then (wall-clock nanoseconds; nil: from the first
    /// refresh on, for `hintsNanos`).
    var hintsUntil: UInt64?
    /// The last thing said to the person (a reply, a refusal), shown in the HUD.
    var message = ""
    /// Quitting: later inputs (the window's errors as it goes) do nothing.
    var quitting = false
    /// Our microphone as this window last set it, and whether the space bar talks
    /// (push-to-talk: muted except while it is held).
    var muted = false
    var pushToTalk = false

    enum Action: Equatable {
        case command(SubscriberCommand)
        case say(String)
        case toggleHUD
        case quit
        case none
    }

    /// The centre to ask for (in the shown picture, normalised) so that the picture's point
    /// under the pointer `p` stays under it when the zoom goes from `from` to `to`. The
    /// publisher centres its crop on the point it is given: asking for `p` itself moved
    /// that point to the middle of the window, and each notch walked the view further.
    /// A point `p` of the shown picture lies `(p − ½) / from` from its centre in the
    /// camera's picture; after the step it must lie as far, scaled by `1 / to`, from the
    /// new centre, which is therefore `p − (p − ½) · from / to` in the shown picture.
    /// (Near the camera picture's edge the publisher keeps its crop inside the picture,
    /// so the point can move there.)
    static func zoomCentre(keeping p: NormalizedPoint, from: Double, to: Double) -> NormalizedPoint {
        let k = Float(from / to)
        func axis(_ v: Float) -> Float { min(max(v - (v - 0.5) * k, 0), 1) }
        return NormalizedPoint(x: axis(p.x), y: axis(p.y))
    }

    /// What an input does; `lockedNow`: the publisher's focus is locked.
    mutating func action(for input: WindowInput, nowNanos: UInt64, lockedNow: Bool) -> Action {
        guard !quitting else { return .none }
        let action = decide(input, nowNanos: nowNanos, lockedNow: lockedNow)
        if action == .quit { quitting = true }
        return action
    }

    private mutating func decide(_ input: WindowInput, nowNanos: UInt64, lockedNow: Bool) -> Action {
        switch input {
        case .closed:
            return .quit
        case .keyUp(let name):
            guard name == "space", pushToTalk, !muted else { return .none }
            muted = true
            return .command(.mute(true))
        case let .press(button, point, shown):
            if button == 4 || button == 5 {
                let next = min(max(button == 4 ? zoom * Self.zoomStep : zoom / Self.zoomStep, 1), ControlCodec.maxZoom)
                guard next != zoom else { return .say(button == 4 ? "zoom: already ×\(ControlCodec.maxZoom)" : "zoom: already the whole view") }
                let factor = (next * 100).rounded() / 100
                let centre = Self.zoomCentre(keeping: point ?? NormalizedPoint(x: 0.5, y: 0.5), from: zoom, to: factor)
                zoom = factor
                return .command(.zoom(centre, factor: factor))
            }
            guard button == 1 || button == 3 else { return .say("middle button: nothing (left: pin, right: focus, wheel: zoom)") }
            guard let point else { return .say("that click fell on the border, outside the picture: nothing sent") }
            if button == 3 {
                focusPoint = point
                return .command(.focus(point, .tapToAutoFocus))
            }
            if let last = lastLeftPress, nowNanos &- last.nanos < Self.doubleClickNanos,
               abs(last.point.x - point.x) < Self.doubleClickPixels, abs(last.point.y - point.y) < Self.doubleClickPixels {
                lastLeftPress = nil
                return .none
            }
            lastLeftPress = (nowNanos, point)
            return .command(.tap(point, label: "", shown: shown))
        case .key(let name):
            switch name {
            case "q", "Q", "Escape": return .quit
            case "u", "BackSpace": return .command(.undo)
            case "c", "Delete": return .command(.clearMine)
            case "C":
                if let asked = clearAllAskedAt, nowNanos &- asked < Self.clearAllConfirmNanos {
                    clearAllAskedAt = nil
                    return .command(.clear)
                }
                clearAllAskedAt = nowNanos
                return .say("clear every expert's pins? press C again within 3 s (c clears only ours)")
            case "l", "L": return lockedNow ? .command(.unlock) : .command(.focus(focusPoint, .tapToLockFocus))
            case "m", "M":
                meteringIndex = (meteringIndex + 1) % Self.meteringModes.count
                return .command(.meteringMode(Self.meteringModes[meteringIndex]))
            case "h", "H":
                hudVisible.toggle()
                if hudVisible { hintsUntil = nowNanos + Self.hintsNanos }
                return .toggleHUD
            case "question", "?":
                hudVisible = true
                hintsUntil = nowNanos + Self.hintsNanos
                return .toggleHUD
            case "v", "V":
                muted.toggle()
                return .command(.mute(muted))
            case "space" where pushToTalk:
                guard muted else { return .none }   // key repeat: already talking
                muted = false
                return .command(.mute(false))
            case "z", "Z":
                zoom = 1
                return .command(.zoom(NormalizedPoint(x: 0.5, y: 0.5), factor: 1))
            default: return .none
            }
        }
    }
}

extension SubscriberApp {
    /// Carries out one input of the window (called on GStreamer's threads: hops off them).
    func handle(_ input: WindowInput) {
        let locked = node.sceneStatus?.focus.state == .locked
        let action = windowControls.withLock { $0.action(for: input, nowNanos: WallClock.nowNanos(), lockedNow: locked) }
        if action != .none || !windowControls.withLock({ $0.quitting }) {
            out.event(.windowInput, ["input": "\(input)", "action": "\(action)"], human: nil)
        }
        switch action {
        case .command(let command):
            Task { _ = await self.execute(command) }
        case .say(let text):
            windowControls.withLock { $0.message = text }
            out.event(.windowNotice, ["message": text], human: "window: \(text)")
            refreshHUD()
        case .toggleHUD:
            refreshHUD()
        case .quit:
            if case .closed(let why) = input { out.event(.windowClosed, ["reason": why], human: "window closed: quitting") }
            requestQuit()
        case .none:
            break
        }
    }

    /// Redraws the HUD from the node's state (once a second, and after each input).
    func refreshHUD() {
        guard !config.headless else { return }
        window?.setBackdrop(node.isConnected ? "" : "waiting for the publisher in room \(config.node.room)…")
        let now = WallClock.nowNanos()
        let controls = windowControls.withLock { c in
            if c.hintsUntil == nil { c.hintsUntil = now + WindowControls.hintsNanos }
            return c
        }
        guard controls.hudVisible else { showHUD(""); return }
        let w = node.frameWindow
        var lines = [String(format: "%@ · %.0f fps · latency %@ · pose %.0f%%",
                            node.isConnected ? "connected" : "waiting for the publisher", w.fps,
                            w.latencyMsP50.map { String(format: "%.0f ms", $0) } ?? "–", w.posePercent)]
        if node.isConnected, let scene = node.sceneStatus { lines.append(scene.summary) }
        // The voice's meters: our microphone as sent (or muted) and what we hear.
        if node.isConnected, let voice = node.voice {
            var line = "voice \(voice.mode)"
            if let mic = voice.microphoneLevel { line += " · mic " + (voice.isMuted ? "muted" : mic.bar) }
            if let heard = voice.speakerLevel { line += " · heard " + heard.bar }
            lines.append(line)
        }
        if !controls.message.isEmpty { lines.append(controls.message) }
        if now < controls.hintsUntil ?? 0 { lines.append(WindowControls.hints) } else { lines.append("?: keys") }
        showHUD(lines.joined(separator: "\n"))
    }

    /// Over the picture: drawn by our window at its resolution, else into the picture.
    private func showHUD(_ text: String) {
        if let window { window.setHUD(text) } else { node.setHUD(text) }
    }

    /// Puts the last reply or error in the HUD.
    func noteForHUD(_ text: String) {
        guard !config.headless else { return }
        windowControls.withLock { $0.message = text }
        refreshHUD()
    }
}
