import Imaging
import PoseCastKit

/// The person gate: the selfie model assumes a person is in the picture and marks
/// whatever stands out when none is (measured: 90 % of a cat photograph, 80 % of a coin
/// tray), so its matte counts only where a face is that it marks: a face the full-range
/// detector scores at least 0.5 (faces to about 5 m, three-quarter and profile views), at
/// most 60 % of the picture's height (a cat's head fills the picture), its centre marked.
/// A wide or tall frame with no such face as a whole is searched again in two squares (a
/// face 3 m away in 1280×720 is about 12 px of the whole frame's 192).
///
/// A person who then turns away keeps the gate open through `SceneAnalyzer`'s tracking
/// of the matte it confirmed. Tried and left out: BlazePose's person detector
/// (`pose_detection.tflite`, in the same wheel) found no one in the astronaut photograph
/// with her face covered (it works from the face) and scored the cat photograph 0.67.
public final class PersonGate: @unchecked Sendable {
    public let faces: FaceDetector

    public init(assets: EffectAssets) throws(EffectModelError) {
        faces = try FaceDetector(assets: assets, kind: .fullRangeFace)
    }

    /// What the last `showsPerson` found (for tests and the docs' figures).
    public private(set) var lastFaces: [DetectedFace] = []

    /// Whether `matte` (of `frame`) shows a person.
    public func showsPerson(_ matte: Matte, in frame: FrameView) throws(EffectModelError) -> Bool {
        lastFaces = []
        for area in [nil] + SceneAnalyzer.tiles(of: frame).map({ Optional($0) }) {
            lastFaces += try faces.detect(frame, region: area)
            if Self.confirms(matte, faces: lastFaces) { return true }
        }
        return false
    }

    /// Whether the matte marks one of `faces` (at most 60 % of the picture's height, its
    /// centre marked).
    public static func confirms(_ matte: Matte, faces: [DetectedFace]) -> Bool {
        faces.contains { f in
            guard f.box.height <= 0.6 else { return false }
            let x = Int((f.box.x + f.box.width / 2) * Float(matte.width)), y = Int((f.box.y + f.box.height / 2) * Float(matte.height))
            guard (0..<matte.width).contains(x), (0..<matte.height).contains(y) else { return false }
            return matte.values[y * matte.width + x] >= 0.5
        }
    }
}
