import PoseCastKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fixed tile of Gaussian sensor noise (unit variance), read at a different offset
/// every frame: noise that changes from frame to frame without a random draw per pixel,
/// and is the same for the same frame index. 256 rows of 512 samples, each row extended
/// periodically by the image width so a row read at any offset below 512 is contiguous.
final class NoiseTile {
    static let rows = 256
    static let columns = 512
    let samples: UnsafeMutablePointer<Float>
    let stride: Int

    init(seed: UInt64, rowLength: Int) {
        stride = Self.columns + rowLength + 8
        samples = .allocate(capacity: Self.rows * stride)
        var rng = SplitMix64(seed: seed)
        var pending: Float?
        func normal() -> Float {
            if let p = pending { pending = nil; return p }
            // Box–Muller: two independent normals per pair of uniforms.
            let u1 = max(rng.nextUnit(), 1e-7), u2 = rng.nextUnit()
            let r = (-2 * log(u1)).squareRoot(), a = 2 * Float.pi * u2
            pending = r * sin(a)
            return r * cos(a)
        }
        for y in 0..<Self.rows {
            let row = samples + y * stride
            for x in 0..<Self.columns { row[x] = normal() }
            for x in Self.columns..<stride { row[x] = row[x % Self.columns] }
        }
    }

    deinit { samples.deallocate() }

    /// Row `y` of the tile (wrapping); valid for `columns + rowLength` samples.
    @inline(__always)
    func row(_ y: Int) -> UnsafeMutablePointer<Float> { samples + (y & (Self.rows - 1)) &* stride }

    /// Per-frame offsets (x below `columns`, y below `rows`) for each of the three planes,
    /// from the frame index alone.
    static func offsets(frameIndex: UInt64) -> [(x: Int, y: Int)] {
        var rng = SplitMix64(seed: frameIndex ^ 0x5EED_CA3E_7A11_0000)
        return (0..<3).map { _ in
            let r = rng.next()
            return (Int(r % UInt64(columns)), Int((r >> 32) % UInt64(rows)))
        }
    }
}
