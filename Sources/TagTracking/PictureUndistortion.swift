import Imaging
import PoseCastKit
import Synchronization

/// Takes a lens's distortion out of a picture, in place: each pixel of the result is what
/// a pinhole with the same intrinsics would have seen there, read (bilinear) from where
/// the lens put it. A calibrated camera's picture then agrees with the pinhole intrinsics
/// sent with every frame, so the expert's taps near the picture's edges land where they
/// point, and the tags' corners need no correction.
///
/// The map is the expensive part (a distortion per pixel); it is computed once per
/// picture size, then each picture costs a fixed-point bilinear read per sample. A pixel
/// whose source lies outside the picture (a pincushion lens's corners) comes out black.
///
/// Thread safety: one picture at a time or several, the maps are built under a lock and
/// only read afterwards.
public final class PictureUndistortion: Sendable {
    public let distortion: LensDistortion
    public let intrinsics: CameraIntrinsics
    private let maps = Mutex<[Size: Planes]>([:])

    private struct Size: Hashable { var width: Int, height: Int }

    /// One plane's map: per output sample, the source's top-left pixel offset (row ×
    /// width + column, in the plane's own unpadded layout; -1 outside) and its weights
    /// towards the right (`wx`) and lower (`wy`) neighbours, out of 256.
    struct PlaneMap: Sendable {
        var width: Int, height: Int
        var offsets: [Int32]
        var wx: [UInt16], wy: [UInt16]
    }

    private struct Planes: Sendable { var luma: PlaneMap, chroma: PlaneMap }

    public init(distortion: LensDistortion, intrinsics: CameraIntrinsics) {
        self.distortion = distortion; self.intrinsics = intrinsics
    }

    /// Undistorts `planes` in place (each plane read from a copy of itself).
    public func apply(to planes: I420Planes) {
        guard !distortion.isNone else { return }
        let size = Size(width: planes.width, height: planes.height)
        let map = maps.withLock { maps in
            if let m = maps[size] { return m }
            let m = Planes(luma: Self.map(distortion, intrinsics, width: size.width, height: size.height, scale: 1),
                           chroma: Self.map(distortion, intrinsics, width: size.width / 2, height: size.height / 2, scale: 2))
            maps[size] = m
            return m
        }
        Self.remap(planes.y, stride: planes.yStride, map.luma, outside: 0)
        Self.remap(planes.u, stride: planes.uStride, map.chroma, outside: 128)
        Self.remap(planes.v, stride: planes.vStride, map.chroma, outside: 128)
    }

    /// The map of a plane `width` × `height` whose samples each cover `scale` × `scale`
    /// pixels of the full picture (1 luma, 2 chroma).
    static func map(_ lens: LensDistortion, _ k: CameraIntrinsics, width: Int, height: Int, scale: Int) -> PlaneMap {
        let pixels = PixelIntrinsics(k, width: width * scale, height: height * scale)
        let count = width * height
        var offsets = [Int32](repeating: -1, count: count), wx = [UInt16](repeating: 0, count: count), wy = wx
        let s = Double(scale)
        for row in 0..<height {
            for column in 0..<width {
                // The sample's centre in full-picture pixels, where the lens put that ray,
                // back in this plane's samples (centres at +0.5).
                let centre = SIMD2((Double(column) + 0.5) * s, (Double(row) + 0.5) * s)
                let source = lens.distort(pixel: centre, intrinsics: pixels) / s - SIMD2(0.5, 0.5)
                guard source.x >= 0, source.y >= 0, source.x <= Double(width - 1), source.y <= Double(height - 1) else { continue }
                // The last row or column reads itself as its neighbour (weight 0 there).
                let x0 = min(Int(source.x), width - 2), y0 = min(Int(source.y), height - 2)
                let i = row * width + column
                offsets[i] = Int32(y0 * width + x0)
                wx[i] = UInt16(((source.x - Double(x0)) * 256).rounded())
                wy[i] = UInt16(((source.y - Double(y0)) * 256).rounded())
            }
        }
        return PlaneMap(width: width, height: height, offsets: offsets, wx: wx, wy: wy)
    }

    /// One plane through its map: the plane is copied (unpadded), then every sample
    /// written from the copy.
    static func remap(_ plane: UnsafeMutablePointer<UInt8>, stride: Int, _ map: PlaneMap, outside: UInt8) {
        let (w, h) = (map.width, map.height)
        guard w >= 2, h >= 2 else { return }
        let copy = [UInt8](unsafeUninitializedCapacity: w * h) { buffer, count in
            for row in 0..<h { (buffer.baseAddress! + row * w).update(from: plane + row * stride, count: w) }
            count = w * h
        }
        copy.withUnsafeBufferPointer { src in
            map.offsets.withUnsafeBufferPointer { offsets in
                map.wx.withUnsafeBufferPointer { wx in
                    map.wy.withUnsafeBufferPointer { wy in
                        for row in 0..<h {
                            let out = plane + row * stride
                            for column in 0..<w {
                                let i = row * w + column
                                let o = Int(offsets[i])
                                guard o >= 0 else { out[column] = outside; continue }
                                let (a, b) = (UInt32(wx[i]), UInt32(wy[i]))
                                let top = UInt32(src[o]) * (256 - a) + UInt32(src[o + 1]) * a
                                let bottom = UInt32(src[o + w]) * (256 - a) + UInt32(src[o + w + 1]) * a
                                out[column] = UInt8((top * (256 - b) + bottom * b + 32768) >> 16)
                            }
                        }
                    }
                }
            }
        }
    }
}
