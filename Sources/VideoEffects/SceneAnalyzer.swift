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
    /// Whether the person gate saw a person lately (true without a gate).
    public private(set) var personPresent = true
    /// How long a person counts as present after the gate last saw one.
    public var presenceHoldNanos: UInt64 = 2_000_000_000
    private var lastPersonSeen: UInt64?
    /// Capture times of the segmentations in the last second.
    public private(set) var segmentationTimes: [UInt64] = []
    private var smoother = MatteSmoother()
    private var lastRun: UInt64?
    private var missedSearches = 0
    private var gateRuns = 0
    private let periodNanos: UInt64

    public init(fps: Double) { periodNanos = UInt64(1e9 / max(fps, 0.1)) }

    /// Runs what is due on `frame` (captured at `captureNanos`); returns the subject and
    /// the error of a model that failed (the previous results then stay).
    @discardableResult
    public func analyse(_ frame: FrameView, captureNanos: UInt64, segmenter: PersonSegmenter?, subject kind: Subject,
                        faces: FaceDetector?, personGate: FaceDetector? = nil) -> (subject: NormalizedRect?, error: String?) {
        let wantMatte = segmenter != nil && (kind == .person || needsMatte)
        if !wantMatte, matte != nil { matte = nil; smoother.reset() }
        if kind == .none { subject = nil }
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
                    // face holds the person for 2 s anyway.
                    if gateRuns % 3 == 0, Self.showsPerson(raw, faces: try personGate.detect(frame)) { lastPersonSeen = captureNanos }
                    gateRuns += 1
                    personPresent = lastPersonSeen.map { captureNanos &- $0 <= presenceHoldNanos } ?? false
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
                if let box = subject { found = try faces.detect(frame, region: Self.region(around: box, in: frame)) }
                if found.isEmpty { found = try faces.detect(frame) }
                // A wide view shrinks a face to a few pixels of the model's 128: look again
                // in square tiles (a face of 100 px is 8 px in a 1280 px frame, 18 in a tile),
                // every third run while no one is found (a camera on the work, not on a face,
                // need not pay three detections fifteen times a second).
                if found.isEmpty && (subject != nil || missedSearches % 3 == 0) {
                    for tile in Self.tiles(of: frame) where found.isEmpty { found = try faces.detect(frame, region: tile) }
                }
                missedSearches = found.isEmpty ? missedSearches + 1 : 0
                subject = found.max { $0.box.width * $0.box.height < $1.box.width * $1.box.height }?.box
            } catch { failure = "\(error)" }
        }
        return (subject, failure)
    }

    /// The person gate: the selfie model assumes a person is in the picture and marks
    /// whatever stands out when none is (measured: 90 % of a cat photograph, 80 % of a
    /// coin tray), so a matte counts only with a face in it: a face the detector scores
    /// at least 0.5, at most 60 % of the picture's height (a cat's head fills the picture),
    /// whose centre the matte marks as person.
    public static func showsPerson(_ matte: Matte, faces: [DetectedFace]) -> Bool {
        faces.contains { f in
            guard f.box.height <= 0.6 else { return false }
            let x = Int((f.box.x + f.box.width / 2) * Float(matte.width)), y = Int((f.box.y + f.box.height / 2) * Float(matte.height))
            guard (0..<matte.width).contains(x), (0..<matte.height).contains(y) else { return false }
            return matte.values[y * matte.width + x] >= 0.5
        }
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
