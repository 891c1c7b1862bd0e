import Imaging
import PoseCastKit

/// The analyses behind the effects, run on capture frames at a limited rate (the seed's
/// 15 per second) with the latest result serving every frame until the next: the person
/// matte (smoothed, `MatteSmoother`) for the background and for person framing, and the
/// subject's box (the largest face, or the matte's box) for framing. Faces are looked for
/// first near the last one (a region four face-heights tall, so a small face in a wide
/// view is seen at a usable resolution), then in the whole frame. One instance per
/// streaming thread.
public final class SceneAnalyzer: @unchecked Sendable {
    public enum Subject: Sendable { case none, face, person }

    public private(set) var matte: Matte? { didSet { matteGeneration &+= 1 } }
    /// Changes whenever `matte` does (what a cache of the mask stretched over frames keys on).
    public private(set) var matteGeneration = 0
    public private(set) var subject: NormalizedRect?
    /// The tallest face's height when `subject` frames faces (a group's box is taller
    /// than any of its faces; the zoom follows the face, the box must fit).
    public private(set) var subjectFaceHeight: Float?
    /// Whether the person gate saw a person lately (true without a gate).
    public private(set) var personPresent = true
    /// How long a person counts as present after the gate last saw one.
    public var presenceHoldNanos: UInt64 = 2_000_000_000
    private var lastPersonSeen: UInt64?
    /// The box of the matte the gate last confirmed, as followed since.
    private var trackedBox: NormalizedRect?
    /// Capture times of the segmentations in the last second.
    public private(set) var segmentationTimes: [UInt64] = []
    private var smoother = MatteSmoother()
    private var lastRun: UInt64?
    private var missedSearches = 0
    /// Face searches so far.
    private var runs = 0
    /// Faces in the last face subject (a group is framed whole).
    private var lastFaceCount = 0
    private var gateRuns = 0
    private let periodNanos: UInt64

    public init(fps: Double) { periodNanos = UInt64(1e9 / max(fps, 0.1)) }

    /// Runs what is due on `frame` (captured at `captureNanos`); returns the subject and
    /// the error of a model that failed (the previous results then stay).
    @discardableResult
    public func analyse(_ frame: FrameView, captureNanos: UInt64, segmenter: PersonSegmenter?, subject kind: Subject,
                        faces: FaceDetector?, personGate: PersonGate? = nil) -> (subject: NormalizedRect?, error: String?) {
        let wantMatte = segmenter != nil && (kind == .person || needsMatte)
        if !wantMatte, matte != nil { matte = nil; smoother.reset() }
        if kind == .none { subject = nil }
        if kind != .face { subjectFaceHeight = nil }
        guard wantMatte || kind == .face else { return (subject, nil) }
        // 5 ms of slack: a 30 fps source analysed 15 times a second runs every other frame.
        if let last = lastRun, captureNanos &- last + 5_000_000 < periodNanos { return (subject, nil) }
        lastRun = captureNanos
        segmentationTimes.removeAll { captureNanos &- $0 > 1_000_000_000 }
        var failure: String?
        if wantMatte, let segmenter {
            do throws(EffectModelError) {
                var raw = try segmenter.segment(frame)
                if let personGate {
                    // The gate looks every third run (5 a second at the default rate): a
                    // person it saw is held for 2 s anyway. Between, and once the face is
                    // gone (the person turned to the work), the matte it confirmed is
                    // followed: the same person while its box overlaps the last one.
                    let box = raw.boundingBox()
                    if gateRuns % 3 == 0, try personGate.showsPerson(raw, in: frame) {
                        lastPersonSeen = captureNanos; trackedBox = box
                    } else if let tracked = trackedBox, let box, Self.follows(box, tracked) {
                        lastPersonSeen = captureNanos; trackedBox = box
                    }
                    gateRuns += 1
                    personPresent = lastPersonSeen.map { captureNanos &- $0 <= presenceHoldNanos } ?? false
                    if !personPresent { trackedBox = nil }
                    if !personPresent { raw.values = [Float](repeating: 0, count: raw.values.count) }
                } else {
                    personPresent = true
                }
                matte = smoother.smooth(raw)
                segmentationTimes.append(captureNanos)
            } catch { failure = "\(error)" }
            if kind == .person { subject = matte?.boundingBox() }
        }
        if kind == .face, let faces {
            do throws(EffectModelError) {
                var found: [DetectedFace] = []
                // Near the last subject while it was one face; a group is looked for in the
                // whole frame (a region around one of them would lose the others).
                if let box = subject, lastFaceCount <= 1 { found = try faces.detect(frame, region: Self.region(around: box, in: frame)) }
                // Every third run the whole frame and its tiles are searched beside a face
                // found near the last one, for the others of a group (added where they
                // overlap none found already).
                let others = runs % 3 == 0
                func add(_ more: [DetectedFace]) {
                    for face in more where !found.contains(where: { FaceDecoding.iou($0.box, face.box) > 0.3 }) { found.append(face) }
                }
                if found.isEmpty || others { add(try faces.detect(frame)) }
                // A wide view shrinks a face to a few pixels of the model's input: look again
                // in square tiles (a face of 90 px is 13 px of the full-range model's 192 in a
                // 1280 px frame, 24 in a tile), every third run while no one is found (a
                // camera on the work, not on a face, need not pay three detections fifteen
                // times a second), and with the others' search.
                if found.isEmpty ? (subject != nil || missedSearches % 3 == 0) : others {
                    for tile in Self.tiles(of: frame) { add(try faces.detect(frame, region: tile)) }
                }
                runs += 1
                missedSearches = found.isEmpty ? missedSearches + 1 : 0
                let people = Self.people(in: found)
                lastFaceCount = people.count
                subject = people.dropFirst().reduce(people.first) { union, face in union.map { Self.union($0, face) } }
                subjectFaceHeight = people.map(\.height).max()
            } catch { failure = "\(error)" }
        }
        return (subject, failure)
    }

    /// The faces of the people present, to be framed together: every face at least a
    /// quarter of the largest one's area (a face far behind, on a poster or a screen is
    /// not one of them). Framing the largest face alone cut out a second person facing
    /// the camera beside a nearer head turned away.
    public static func people(in faces: [DetectedFace]) -> [NormalizedRect] {
        let largest = faces.map { $0.box.width * $0.box.height }.max() ?? 0
        return faces.map(\.box).filter { $0.width * $0.height >= largest / 4 }
    }

    public static func union(_ a: NormalizedRect, _ b: NormalizedRect) -> NormalizedRect {
        let x0 = min(a.x, b.x), y0 = min(a.y, b.y)
        return NormalizedRect(x: x0, y: y0, width: max(a.x + a.width, b.x + b.width) - x0, height: max(a.y + a.height, b.y + b.height) - y0)
    }

    /// Whether a matte's box `box` is still the person whose box was `tracked`: they
    /// overlap by at least 30 % (intersection over union; a person moves a few percent of
    /// the frame between analyses) and neither is three times the other's area (what the
    /// model marks once the person has left, a chair or a screen, is smaller).
    static func follows(_ box: NormalizedRect, _ tracked: NormalizedRect) -> Bool {
        let ratio = (box.width * box.height) / max(tracked.width * tracked.height, 1e-6)
        return FaceDecoding.iou(box, tracked) >= 0.3 && ratio >= 1.0 / 3 && ratio <= 3
    }

    /// Whether the background effect wants the matte (set by the caller each frame).
    public var needsMatte = false

    /// Two overlapping squares as tall as the frame (a wide frame) or as wide (a tall one);
    /// none for a frame that is nearly square.
    static func tiles(of frame: FrameView) -> [CropWindow] {
        let w = Double(frame.width), h = Double(frame.height)
        if w > h * 1.2 { return [CropWindow(x: 0, y: 0, width: h, height: h), CropWindow(x: w - h, y: 0, width: h, height: h)] }
        if h > w * 1.2 { return [CropWindow(x: 0, y: 0, width: w, height: w), CropWindow(x: 0, y: h - w, width: w, height: w)] }
        return []
    }

    /// A 4:3 region four face-heights tall (at least 128 px) centred on `box`, inside the frame.
    static func region(around box: NormalizedRect, in frame: FrameView) -> CropWindow {
        let w = Double(frame.width), h = Double(frame.height)
        let cx = Double(box.x + box.width / 2) * w, cy = Double(box.y + box.height / 2) * h
        let height = min(max(Double(box.height) * h * 4, 128), h, w * 3 / 4)
        let width = height * 4 / 3
        return CropWindow(x: min(max(cx - width / 2, 0), w - width), y: min(max(cy - height / 2, 0), h - height),
                          width: width, height: height)
    }
}
