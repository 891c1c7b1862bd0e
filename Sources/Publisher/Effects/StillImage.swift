import Foundation
import Imaging
import RTCSession
import PoseMedia
import VideoEffects

/// A picture file (PNG, JPEG, anything `decodebin` reads) as an I420 frame: the virtual
/// background's replacement image, and the photographs the effect tests run on
/// (`PictureDecoder`: it blocks, so call it from a thread of its own, never the async pool
/// or a streaming thread).
public enum StillImage {
    public typealias LoadError = PictureError

    /// The file at its own size (an odd last row or column is dropped).
    public static func load(_ path: String) throws(LoadError) -> I420Image {
        try PictureDecoder.decode(path)
    }

    /// Whether the file decodes (the decode on a thread of its own, off the async pool).
    public static func check(_ path: String) async throws(LoadError) {
        try await OwnThread.run { () throws(LoadError) in _ = try load(path) }
    }

    /// The file scaled to cover `width × height` (aspect kept, the overflow cropped equally
    /// from both sides): a replacement background for frames of that size.
    public static func load(_ path: String, covering width: Int, height: Int) throws(LoadError) -> I420Image {
        let image = try load(path)
        return cover(image, width: width, height: height)
    }

    /// `image` scaled to cover `width × height`, centred.
    public static func cover(_ image: I420Image, width: Int, height: Int) -> I420Image {
        let crop = CropWindow.centred(aspect: Double(width) / Double(height), inWidth: image.width, height: image.height)
        var out = try! I420Image(width: width, height: height)
        image.withFrameView { view in out.withPlanes { planes in I420Resampler.resample(view, crop: crop, into: planes) } }
        return out
    }
}
