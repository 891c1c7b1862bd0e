import PoseCastKit
@testable import Subscriber
import Testing

/// What each button and key of the expert's window does (`WindowControls`, a pure state
/// machine: the window test drives the real thing under Xvfb).
@Suite("the window's buttons and keys")
struct WindowControlsTests {
    static let p = NormalizedPoint(x: 0.4, y: 0.6)
    static let ms: UInt64 = 1_000_000

    @Test("left pins, once per double click; a later or farther click pins again")
    func leftClicks() {
        var c = WindowControls()
        #expect(c.action(for: .press(button: 1, point: Self.p), nowNanos: 1000 * Self.ms, lockedNow: false) == .command(.tap(Self.p, label: "")))
        #expect(c.action(for: .press(button: 1, point: Self.p), nowNanos: 1200 * Self.ms, lockedNow: false) == .none)
        #expect(c.action(for: .press(button: 1, point: Self.p), nowNanos: 1900 * Self.ms, lockedNow: false) == .command(.tap(Self.p, label: "")))
        let q = NormalizedPoint(x: 0.7, y: 0.6)
        #expect(c.action(for: .press(button: 1, point: q), nowNanos: 2000 * Self.ms, lockedNow: false) == .command(.tap(q, label: "")))
    }

    @Test("the pin uses the frame the window showed")
    func shownPose() {
        var c = WindowControls()
        let pose = FramePose(frameID: 7, captureTimeNanos: 1, position: Vector3(0, 1, 3),
                             orientation: .lookAt(eye: Vector3(0, 1, 3), target: Vector3(0, 0, 0)),
                             intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3))
        #expect(c.action(for: .press(button: 1, point: Self.p, shown: pose), nowNanos: 0, lockedNow: false)
                == .command(.tap(Self.p, label: "", shown: pose)))
    }

    @Test("right focuses there; l locks at that point, or unlocks when locked")
    func focusAndLock() {
        var c = WindowControls()
        #expect(c.action(for: .key("l"), nowNanos: 0, lockedNow: false) == .command(.focus(NormalizedPoint(x: 0.5, y: 0.5), .tapToLockFocus)))
        #expect(c.action(for: .press(button: 3, point: Self.p), nowNanos: 0, lockedNow: false) == .command(.focus(Self.p, .tapToAutoFocus)))
        #expect(c.action(for: .key("l"), nowNanos: 0, lockedNow: false) == .command(.focus(Self.p, .tapToLockFocus)))
        #expect(c.action(for: .key("l"), nowNanos: 0, lockedNow: true) == .command(.unlock))
    }

    @Test("the middle button and the border do nothing, and say so")
    func nothingButSaid() {
        var c = WindowControls()
        for input: WindowInput in [.press(button: 2, point: Self.p), .press(button: 1, point: nil), .press(button: 3, point: nil),
                                   .press(button: 5, point: nil)] {
            guard case .say = c.action(for: input, nowNanos: 0, lockedNow: false) else { Issue.record("\(input) did something"); continue }
        }
    }

    @Test("the wheel zooms ×1.25 a notch within 1…4, the point under the pointer kept in place; z unzooms")
    func wheelZoom() {
        var c = WindowControls()
        #expect(c.action(for: .press(button: 4, point: Self.p), nowNanos: 0, lockedNow: false)
                == .command(.zoom(WindowControls.zoomCentre(keeping: Self.p, from: 1, to: 1.25), factor: 1.25)))
        #expect(c.action(for: .press(button: 4, point: nil), nowNanos: 0, lockedNow: false)
                == .command(.zoom(NormalizedPoint(x: 0.5, y: 0.5), factor: 1.56)))
        for _ in 0..<10 { _ = c.action(for: .press(button: 4, point: Self.p), nowNanos: 0, lockedNow: false) }
        #expect(c.zoom == 4)
        guard case .say = c.action(for: .press(button: 4, point: Self.p), nowNanos: 0, lockedNow: false) else {
            Issue.record("a notch past ×4 must say so"); return
        }
        #expect(c.action(for: .press(button: 5, point: Self.p), nowNanos: 0, lockedNow: false)
                == .command(.zoom(WindowControls.zoomCentre(keeping: Self.p, from: 4, to: 3.2), factor: 3.2)))
        #expect(c.action(for: .key("z"), nowNanos: 0, lockedNow: false) == .command(.zoom(NormalizedPoint(x: 0.5, y: 0.5), factor: 1)))
        #expect(c.zoom == 1)
    }

    @Test("three notches in and two out keep the camera's point under the pointer within 0.1 % (the publisher centring its crop on each request)")
    func wheelKeepsThePoint() {
        // The publisher's side: the crop's centre in the camera's picture and its zoom; a
        // request's point, given in the shown picture, becomes the new centre.
        var centre = (x: 0.5, y: 0.5), zoom = 1.0
        func camera(_ p: NormalizedPoint) -> (x: Double, y: Double) {
            (centre.x + (Double(p.x) - 0.5) / zoom, centre.y + (Double(p.y) - 0.5) / zoom)
        }
        func shown(_ f: (x: Double, y: Double)) -> (x: Double, y: Double) {
            (0.5 + (f.x - centre.x) * zoom, 0.5 + (f.y - centre.y) * zoom)
        }
        var c = WindowControls()
        let pointer = NormalizedPoint(x: 0.7, y: 0.35)
        let target = camera(pointer)
        for button in [4, 4, 4, 5, 5] {
            guard case .command(.zoom(let point, let factor)) = c.action(for: .press(button: button, point: pointer), nowNanos: 0, lockedNow: false) else {
                Issue.record("notch \(button) sent no zoom"); return
            }
            centre = camera(point)
            zoom = factor
            let now = shown(target)
            #expect(abs(now.x - Double(pointer.x)) < 0.001 && abs(now.y - Double(pointer.y)) < 0.001,
                    "after ×\(factor) the point is at \(now), the pointer at \(pointer)")
        }
    }

    @Test("keys: undo, clear, metering modes in turn, HUD; q, Esc and closing quit once")
    func keys() {
        var c = WindowControls()
        #expect(c.action(for: .key("u"), nowNanos: 0, lockedNow: false) == .command(.undo))
        #expect(c.action(for: .key("BackSpace"), nowNanos: 0, lockedNow: false) == .command(.undo))
        #expect(c.action(for: .key("c"), nowNanos: 0, lockedNow: false) == .command(.clearMine), "c: our pins only")
        #expect(c.action(for: .key("Delete"), nowNanos: 0, lockedNow: false) == .command(.clearMine))
        // Everyone's pins only with a second C within 3 s.
        guard case .say = c.action(for: .key("C"), nowNanos: 1_000_000_000, lockedNow: false) else { Issue.record("C did not ask"); return }
        #expect(c.action(for: .key("C"), nowNanos: 5_000_000_000, lockedNow: false) != .command(.clear), "too late: asks again")
        #expect(c.action(for: .key("C"), nowNanos: 6_000_000_000, lockedNow: false) == .command(.clear))
        let modes = (0..<3).map { _ in c.action(for: .key("m"), nowNanos: 0, lockedNow: false) }
        #expect(modes == [MeteringMode.uniform, .spot, .weighted].map { .command(.meteringMode($0)) }, "m changes the mode only: nothing metered once, nothing locked")
        #expect(c.action(for: .key("h"), nowNanos: 0, lockedNow: false) == .toggleHUD)
        #expect(!c.hudVisible)
        #expect(c.action(for: .key("h"), nowNanos: 20_000_000_000, lockedNow: false) == .toggleHUD)
        #expect(c.hudVisible && c.hintsUntil == 30_000_000_000, "back on: the keys shown for 10 s")
        #expect(c.action(for: .key("question"), nowNanos: 40_000_000_000, lockedNow: false) == .toggleHUD)
        #expect(c.hudVisible && c.hintsUntil == 50_000_000_000)
        #expect(c.action(for: .key("x"), nowNanos: 0, lockedNow: false) == .none)
        for quit: WindowInput in [.key("q"), .key("Escape"), .closed("Output window was closed")] {
            var fresh = WindowControls()
            #expect(fresh.action(for: quit, nowNanos: 0, lockedNow: false) == .quit)
            // Whatever the window does while it goes (its X errors) is ignored.
            #expect(fresh.action(for: .closed("X error"), nowNanos: 0, lockedNow: false) == .none)
            #expect(fresh.action(for: .press(button: 1, point: Self.p), nowNanos: 0, lockedNow: false) == .none)
        }
    }

    @Test("undo and clearmine parse as commands")
    func undoCommand() throws {
        #expect(try SubscriberCommand.parse("undo") == .undo)
        #expect(try SubscriberCommand.parse("clearmine") == .clearMine)
    }
}

/// The voice keys: `v` mutes and unmutes; with push-to-talk, the space bar talks while held.
@Suite("the window's voice keys")
struct WindowVoiceKeysTests {
    @Test("v toggles the microphone; push-to-talk talks from space down to space up, once despite key repeat")
    func voiceKeys() {
        var c = WindowControls()
        #expect(c.action(for: .key("v"), nowNanos: 0, lockedNow: false) == .command(.mute(true)))
        #expect(c.action(for: .key("v"), nowNanos: 1, lockedNow: false) == .command(.mute(false)))
        #expect(c.action(for: .key("space"), nowNanos: 2, lockedNow: false) == .none, "space does nothing without push-to-talk")
        var ptt = WindowControls()
        ptt.pushToTalk = true
        ptt.muted = true
        #expect(ptt.action(for: .key("space"), nowNanos: 0, lockedNow: false) == .command(.mute(false)))
        #expect(ptt.action(for: .key("space"), nowNanos: 1, lockedNow: false) == .none, "key repeat: already talking")
        #expect(ptt.action(for: .keyUp("space"), nowNanos: 2, lockedNow: false) == .command(.mute(true)))
        #expect(ptt.action(for: .keyUp("space"), nowNanos: 3, lockedNow: false) == .none)
    }

    @Test("the audio direction of an offer decides what an expert may do")
    func offerDirection() {
        let video = "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=sendonly\r\n"
        #expect(SubscriberVoice.audioDirection(in: video) == nil)
        #expect(SubscriberVoice.audioDirection(in: video + "m=audio 0 UDP/TLS/RTP/SAVPF 111\r\na=sendrecv\r\n") == "sendrecv")
        #expect(SubscriberVoice.audioDirection(in: video + "m=audio 0 UDP/TLS/RTP/SAVPF 111\r\na=sendonly\r\n") == "sendonly")
        #expect(SubscriberVoice.audioDirection(in: video + "m=audio 0 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 OPUS/48000/2\r\n") == "sendrecv")
    }
}
