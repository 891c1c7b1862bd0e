import Imaging

/// MediaPipe's selfie segmentation through LiteRT: a frame in, a person matte out (the
/// model's grid: 256×256 for the general model, 256×144 for the landscape one). The whole
/// frame is resized to the model's input, as the model was trained; pick the model whose
/// shape is nearer the frame's (`prefersLandscape`).
public final class PersonSegmenter: @unchecked Sendable {
    public let model: LiteRTModel
    public let inputWidth: Int, inputHeight: Int
    public let landscape: Bool

    /// 16:9 and wider frames use the landscape model.
    public static func prefersLandscape(width: Int, height: Int) -> Bool { Double(width) / Double(height) > 1.55 }

    public init(assets: EffectAssets, landscape: Bool) throws(EffectModelError) {
        let name = landscape ? EffectAssets.landscapeSegmentationModel : EffectAssets.segmentationModel
        let model = try assets.model(name)
        guard model.inputShapes.count == 1, model.inputShapes[0].count == 4, model.inputShapes[0][3] == 3,
              model.outputShapes.count == 1, model.outputShapes[0].reduce(1, *) == model.inputShapes[0][1] * model.inputShapes[0][2]
        else { throw EffectModelError("\(model.path): expected one 1×H×W×3 input and one H×W mask, got \(model.inputShapes) → \(model.outputShapes)") }
        self.model = model; self.landscape = landscape
        inputHeight = model.inputShapes[0][1]; inputWidth = model.inputShapes[0][2]
    }

    /// The person matte of `frame` (foreground probability per cell).
    public func segment(_ frame: FrameView) throws(EffectModelError) -> Matte {
        let picture = ModelInput.resized(frame, width: inputWidth, height: inputHeight)
        ModelInput.write(picture, into: model.input(0), tensorWidth: inputWidth, low: 0, high: 1)
        try model.run()
        let out = model.output(0)
        return Matte(width: inputWidth, height: inputHeight, values: out.map { min(max($0, 0), 1) })
    }
}
