import Foundation
import Imaging
import Publisher
import VideoEffects

/// The effects' test harness: the installed models and photographs
/// (`scripts/effects-setup`), loaded once per process.
enum EffectsHarness {
    static let assets = EffectAssets.locate()

    /// Why the model tests cannot run here, or nil when they can.
    static var unavailable: String? {
        do throws(EffectModelError) {
            _ = try assets.path(EffectAssets.libraryFile)
            _ = try assets.path(EffectAssets.segmentationModel)
            _ = try assets.path(EffectAssets.faceModel)
            _ = try assets.path(EffectAssets.fullRangeFaceModel)
            return nil
        } catch { return error.message }
    }

    /// A test photograph by name: `NAME.png` (scikit-image's), else `NAME.jpg` (ultralytics').
    static func photo(_ name: String) throws -> I420Image {
        let base = assets.directory + "/photos/\(name)"
        return try StillImage.load(FileManager.default.fileExists(atPath: base + ".png") ? base + ".png" : base + ".jpg")
    }

    /// `picture` pasted into `background` with its top-left corner at (x, y) (even).
    static func paste(_ picture: I420Image, into background: I420Image, x: Int, y: Int) -> I420Image {
        var out = background
        let w = background.width, h = background.height, pw = picture.width, ph = picture.height
        let (bu, bv) = (w * h, w * h + (w / 2) * (h / 2)), (pu, pv) = (pw * ph, pw * ph + (pw / 2) * (ph / 2))
        for row in 0..<ph where (0..<h).contains(y + row) {
            for col in 0..<pw where (0..<w).contains(x + col) {
                out.bytes[(y + row) * w + x + col] = picture.bytes[row * pw + col]
            }
        }
        for row in 0..<(ph / 2) where (0..<(h / 2)).contains(y / 2 + row) {
            for col in 0..<(pw / 2) where (0..<(w / 2)).contains(x / 2 + col) {
                let o = (y / 2 + row) * (w / 2) + x / 2 + col, i = row * (pw / 2) + col
                out.bytes[bu + o] = picture.bytes[pu + i]
                out.bytes[bv + o] = picture.bytes[pv + i]
            }
        }
        return out
    }
}
