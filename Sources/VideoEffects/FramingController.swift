import Foundation
import PoseCastKit

/// How the framing effect follows its subject (`FramingController`).
public struct FramingConfiguration: Sendable, Hashable {
    public var captureWidth: Int, captureHeight: Int
    public var outputWidth: Int, outputHeight: Int
    /// The subject may wander this far from the crop's centre (a fraction of the crop's
    /// width, and of its height) before the crop moves: a still subject that sways does
    /// not make the picture sway.
    public var deadZone = 0.06
    /// Time constant of the crop's approach to where it should be (seconds).
    public var smoothingSeconds = 0.15
    /// A moving subject is led by its velocity times this (seconds; the smoothing's
    /// lag), so a steady walk stays centred instead of trailing by speed × lag.
    public var leadSeconds = 0.15
    /// The largest move of the crop per frame, in output pixels: the smoothness bound
    /// (at 30 fps, 12 px is 360 px/s across a 640 px picture).
    public var maxStepOutputPixels = 12.0
    /// The zoom changes by at most this factor per frame (1.03: ×2 in about 0.8 s at 30 fps).
    public var maxZoomStepPerFrame = 1.03
    /// Digital zoom limit, against the widest crop (1…4).
    public var maxZoom = 4.0
    /// Automatic framing makes a face this fraction of the crop's height (head and shoulders).
    public var faceFill = 0.22
    /// A subject box (a group of faces) is at most 1 / this of the crop's width, so the
    /// outer faces keep a margin; one face is far narrower than that at `faceFill`.
    public var groupMargin = 1.6
    /// A subject box nearer the current zoom than this ratio leaves the zoom alone.
    public var zoomDeadBand = 1.2
    /// A subject lost for this long: the crop goes back to the widest view.
    public var lostSubjectSeconds = 2.0

    public init(captureWidth: Int, captureHeight: Int, outputWidth: Int, outputHeight: Int) {
        self.captureWidth = captureWidth; self.captureHeight = captureHeight
        self.outputWidth = outputWidth; self.outputHeight = outputHeight
    }

    /// The widest crop of the output's shape that fits the capture, centred.
    public var widest: CropWindow {
        .centred(aspect: Double(outputWidth) / Double(outputHeight), inWidth: captureWidth, height: captureHeight)
    }
}

/// What the crop should show this frame.
public enum FramingTarget: Sendable, Hashable {
    /// The widest view, centred (framing off).
    case wide
    /// Keep a subject framed: its box normalised in the capture, nil while it is lost;
    /// for a group of faces, the box around them and the tallest face's height (the zoom
    /// follows the face, the box fits across the crop).
    case subject(NormalizedRect?, faceHeight: Float? = nil)
    /// A fixed view: centre normalised in the capture, zoom against the widest view
    /// (an expert's `zoom`).
    case region(center: NormalizedPoint, zoom: Double)
    /// Keep a point in view at the given zoom (an expert's `follow`: the annotation's 3D
    /// anchor projected with this frame's pose); nil while it is behind the camera.
    case point(NormalizedPoint?, zoom: Double)
}

/// Center Stage as a pure state machine: each frame, given what to frame, it returns the
/// crop of the capture to show. The crop's centre moves only when the subject leaves a
/// dead zone, approaches its goal exponentially, never faster than a stated number of
/// output pixels per frame, and zooms in small steps; the crop always lies inside the
/// capture. No clock: the caller gives each frame's interval.
public struct FramingController: Sendable {
    public let configuration: FramingConfiguration
    /// The crop of the last frame.
    public private(set) var crop: CropWindow
    private var centerX: Double, centerY: Double, zoom = 1.0
    private var goalX: Double, goalY: Double, goalZoom = 1.0
    private var lostFor = 0.0
    /// The subject's last detected centre (capture pixels), when, and its velocity (px/s).
    private var clock = 0.0
    private var lastSubject: (x: Double, y: Double, at: Double)?
    private var velocity = (x: 0.0, y: 0.0)

    public init(configuration: FramingConfiguration) {
        self.configuration = configuration
        let wide = configuration.widest
        crop = wide
        centerX = wide.centerX; centerY = wide.centerY; goalX = centerX; goalY = centerY
    }

    /// The zoom of the last frame against the widest view.
    public var currentZoom: Double { zoom }

    /// The crop for the next frame, `seconds` after the previous one.
    public mutating func step(toward target: FramingTarget, seconds: Double) -> CropWindow {
        let c = configuration, wide = c.widest
        let cw = Double(c.captureWidth), ch = Double(c.captureHeight)
        clock += max(seconds, 0)
        switch target {
        case .wide:
            setGoal(wide.centerX, wide.centerY, zoom: 1, deadZone: false)
            lostFor = 0
        case .subject(let box?, let faceHeight):
            lostFor = 0
            let boxHeight = Double(box.height) * ch, boxWidth = Double(box.width) * cw
            let fillHeight = faceHeight.map { Double($0) * ch } ?? boxHeight
            var wanted = fillHeight > 0 ? wide.height * c.faceFill / fillHeight : goalZoom
            // A group's box fits in the crop with a margin each way.
            if boxWidth > 0 { wanted = min(wanted, wide.width / (boxWidth * c.groupMargin)) }
            if faceHeight != nil, boxHeight > 0 { wanted = min(wanted, wide.height / (boxHeight * c.groupMargin)) }
            // Hysteresis on the zoom: a face that grows or shrinks a little keeps the zoom.
            let ratio = wanted / goalZoom
            let z = ratio > c.zoomDeadBand || ratio < 1 / c.zoomDeadBand ? wanted : goalZoom
            let (x, y) = lead((Double(box.x) + Double(box.width) / 2) * cw, (Double(box.y) + Double(box.height) / 2) * ch)
            setGoal(x, y, zoom: z, deadZone: true)
        case .subject(nil, _), .point(nil, _):
            lostFor += seconds
            lastSubject = nil
            if lostFor >= c.lostSubjectSeconds { setGoal(wide.centerX, wide.centerY, zoom: 1, deadZone: false) }
            if case .point(nil, let z) = target { goalZoom = Self.clamp(z, 1, c.maxZoom) }
        case let .region(center, z):
            lostFor = 0
            setGoal(Double(center.x) * cw, Double(center.y) * ch, zoom: z, deadZone: false)
        case let .point(p?, z):
            lostFor = 0
            setGoal(Double(p.x) * cw, Double(p.y) * ch, zoom: z, deadZone: true)
        }
        // Zoom: exponential in log space, bounded per frame.
        let alpha = 1 - exp(-max(seconds, 0) / max(c.smoothingSeconds, 1e-3))
        var logStep = log(goalZoom / zoom) * alpha
        let maxLog = log(max(c.maxZoomStepPerFrame, 1))
        logStep = Self.clamp(logStep, -maxLog, maxLog)
        zoom = Self.clamp(zoom * exp(logStep), 1, c.maxZoom)
        let width = wide.width / zoom, height = wide.height / zoom
        // Centre: exponential, at most `maxStepOutputPixels` output pixels per frame.
        let maxStep = c.maxStepOutputPixels * width / Double(c.outputWidth)
        var dx = (goalX - centerX) * alpha, dy = (goalY - centerY) * alpha
        let length = (dx * dx + dy * dy).squareRoot()
        if length > maxStep { dx *= maxStep / length; dy *= maxStep / length }
        centerX += dx; centerY += dy
        // Inside the capture (a zoom-out near an edge pushes the centre in).
        centerX = Self.clamp(centerX, width / 2, cw - width / 2)
        centerY = Self.clamp(centerY, height / 2, ch - height / 2)
        crop = CropWindow(x: centerX - width / 2, y: centerY - height / 2, width: width, height: height)
        return crop
    }

    /// The subject's centre led by its velocity, learnt from successive detections (a
    /// detection repeated between analyses is not a new one; a gap of half a second
    /// forgets the velocity).
    private mutating func lead(_ x: Double, _ y: Double) -> (Double, Double) {
        let c = configuration
        if let last = lastSubject {
            if x != last.x || y != last.y {
                let dt = clock - last.at
                let jump = ((x - last.x) * (x - last.x) + (y - last.y) * (y - last.y)).squareRoot()
                if dt > 0.5 || dt <= 0 || jump > 0.25 * Double(c.captureWidth) {
                    velocity = (0, 0)   // a gap or a leap: another subject, or the same found again
                } else {
                    // Slowly: a detection's jitter must not become a lead.
                    velocity = (0.75 * velocity.x + 0.25 * (x - last.x) / dt, 0.75 * velocity.y + 0.25 * (y - last.y) / dt)
                }
                lastSubject = (x, y, clock)
            } else if clock - last.at > 0.25 {
                velocity = (0, 0)   // the same box for a while: standing still
            }
        } else {
            lastSubject = (x, y, clock)
            velocity = (0, 0)
        }
        let ahead = c.leadSeconds + min(clock - (lastSubject?.at ?? clock), 0.1)
        return (x + velocity.x * ahead, y + velocity.y * ahead)
    }

    /// Moves the goal; with `deadZone`, only when the new centre leaves the dead zone
    /// around the current goal (measured in the goal's crop).
    private mutating func setGoal(_ x: Double, _ y: Double, zoom z: Double, deadZone: Bool) {
        let c = configuration, wide = c.widest
        goalZoom = Self.clamp(z, 1, c.maxZoom)
        let width = wide.width / goalZoom, height = wide.height / goalZoom
        if deadZone {
            if abs(x - goalX) > c.deadZone * width { goalX = x }
            if abs(y - goalY) > c.deadZone * height { goalY = y }
        } else {
            goalX = x; goalY = y
        }
        // A goal the crop cannot reach is clamped, so the dead zone is measured from a
        // reachable centre.
        goalX = Self.clamp(goalX, width / 2, Double(c.captureWidth) - width / 2)
        goalY = Self.clamp(goalY, height / 2, Double(c.captureHeight) - height / 2)
    }

    static func clamp(_ v: Double, _ lo: Double, _ hi: Double) -> Double { hi < lo ? (lo + hi) / 2 : min(max(v, lo), hi) }
}
