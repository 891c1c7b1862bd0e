import Imaging
import PoseCastKit

/// One of MediaPipe's single-shot detectors through LiteRT (the short-range face detector
/// by default, or the full-range one): the frame letterboxed
/// into the model's square input (aspect kept, grey bands), the output decoded by
/// `FaceDecoding`, the detections mapped back to the frame (normalised).
public final class FaceDetector: @unchecked Sendable {
    /// Which model, with its file.
    public enum Kind: Sendable {
        case shortRangeFace, fullRangeFace
        var layout: FaceDecoding.Layout {
            switch self { case .shortRangeFace: .shortRangeFace; case .fullRangeFace: .fullRangeFace }
        }
        var file: String {
            switch self {
            case .shortRangeFace: EffectAssets.faceModel
            case .fullRangeFace: EffectAssets.fullRangeFaceModel
            }
        }
    }

    public let model: LiteRTModel
    public let layout: FaceDecoding.Layout
    private let regressorsIndex: Int, scoresIndex: Int
    public var minScore: Float = 0.5

    public init(assets: EffectAssets, kind: Kind = .shortRangeFace) throws(EffectModelError) {
        let model = try assets.model(kind.file)
        let layout = kind.layout
        let size = layout.inputSize, anchors = layout.anchors.count
        guard model.inputShapes.count == 1, model.inputShapes[0] == [1, size, size, 3], model.outputShapes.count == 2 else {
            throw EffectModelError("\(model.path): expected a 1×\(size)×\(size)×3 input and two outputs, got \(model.inputShapes) → \(model.outputShapes)")
        }
        // The regressors are the output with `valuesPerAnchor` values per anchor, whatever the order.
        let counts = model.outputShapes.map { $0.reduce(1, *) }
        guard let r = counts.firstIndex(of: anchors * layout.valuesPerAnchor), let s = counts.firstIndex(of: anchors) else {
            throw EffectModelError("\(model.path): outputs \(model.outputShapes) are not \(anchors)×\(layout.valuesPerAnchor) and \(anchors)×1")
        }
        self.model = model; self.layout = layout; regressorsIndex = r; scoresIndex = s
    }

    /// Faces in `region` of `frame` (the whole frame by default: a region near the last
    /// face sees a small face at a higher resolution), best first, boxes and landmarks
    /// normalised in the frame.
    public func detect(_ frame: FrameView, region: CropWindow? = nil) throws(EffectModelError) -> [DetectedFace] {
        let size = layout.inputSize
        let area = region ?? .full(width: frame.width, height: frame.height)
        let landscape = area.width >= area.height
        // The region's long side fills the input; the short side is centred between bands.
        var short = Int((Double(size) * min(area.width, area.height) / max(area.width, area.height)).rounded())
        short = max(2, short & ~1)
        let (w, h) = landscape ? (size, short) : (short, size)
        let picture = ModelInput.resized(frame, width: w, height: h, crop: area)
        let input = model.input(0)
        input.update(repeating: 0)
        let offset = (size - short) / 2
        if landscape {
            ModelInput.write(picture, into: input, tensorWidth: size, rowOffset: offset, low: -1, high: 1)
        } else {
            // Portrait: write column-offset rows through a temporary tensor of the picture's width.
            var tmp = [Float](repeating: 0, count: w * h * 3)
            tmp.withUnsafeMutableBufferPointer { ModelInput.write(picture, into: $0, tensorWidth: w, low: -1, high: 1) }
            for row in 0..<h { for k in 0..<(w * 3) { input[row * size * 3 + offset * 3 + k] = tmp[row * w * 3 + k] } }
        }
        try model.run()
        let faces = FaceDecoding.decode(regressors: model.output(regressorsIndex).baseAddress!,
                                        scores: model.output(scoresIndex).baseAddress!, layout: layout, minScore: minScore)
        // Back from the letterboxed square to the frame.
        let sx: Float = landscape ? 1 : Float(size) / Float(w), sy: Float = landscape ? Float(size) / Float(h) : 1
        let ox: Float = landscape ? 0 : Float(offset) / Float(size), oy: Float = landscape ? Float(offset) / Float(size) : 0
        // Then from the region to the frame.
        let rx = Float(area.x / Double(frame.width)), ry = Float(area.y / Double(frame.height))
        let rw = Float(area.width / Double(frame.width)), rh = Float(area.height / Double(frame.height))
        func map(_ p: NormalizedPoint) -> NormalizedPoint {
            NormalizedPoint(x: rx + (p.x - ox) * sx * rw, y: ry + (p.y - oy) * sy * rh)
        }
        return faces.map { f in
            let origin = map(NormalizedPoint(x: f.box.x, y: f.box.y))
            return DetectedFace(box: NormalizedRect(x: origin.x, y: origin.y, width: f.box.width * sx * rw, height: f.box.height * sy * rh),
                                score: f.score, keypoints: f.keypoints.map(map))
        }
    }
}
