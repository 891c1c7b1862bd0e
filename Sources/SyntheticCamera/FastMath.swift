// Scalar helpers for the per-pixel loops. The package builds for baseline x86-64
// (SSE2), where `Float.rounded(.down)` becomes a call to `floorf`; these stay in
// registers. All are `@inline(__always)` so the loops that use them have no calls.

/// `floor(x)` for |x| < 2^22, without a library call: round to nearest by adding and
/// removing 1.5·2^23, then step down when that rounded up.
@inline(__always)
func fastFloor(_ x: Float) -> Float {
    let magic: Float = 12_582_912  // 1.5 · 2^23
    let r = (x + magic) - magic
    return r > x ? r - 1 : r
}

/// `x − floor(x)`, in [0, 1).
@inline(__always)
func fract(_ x: Float) -> Float { x - fastFloor(x) }

@inline(__always)
func clamp01(_ x: Float) -> Float { x < 0 ? 0 : (x > 1 ? 1 : x) }

@inline(__always)
func clamp(_ x: Float, _ lo: Float, _ hi: Float) -> Float { x < lo ? lo : (x > hi ? hi : x) }

@inline(__always)
func mix(_ a: Float, _ b: Float, _ t: Float) -> Float { a + (b - a) * t }

/// Box-filtered square wave: the mean over [u − w/2, u + w/2] of the wave that is +1 on
/// [0, 1) and −1 on [1, 2) (period 2). The wave's integral is the triangle
/// `S(u) = 1 − |2·fract(u/2) − 1|`, so the mean is a difference of two triangles. It fades
/// to 0 as the footprint `w` covers whole periods, which is what keeps a distant
/// checkerboard from aliasing.
@inline(__always)
func filteredSquareWave(_ u: Float, width w: Float) -> Float {
    let w = w < 1e-3 ? 1e-3 : w
    let h = 0.5 * w
    let a = 1 - abs(2 * fract((u + h) * 0.5) - 1)
    let b = 1 - abs(2 * fract((u - h) * 0.5) - 1)
    return clamp((a - b) / w, -1, 1)
}

/// Triangle wave in [0, 1] with period 1, peaking at half-integers.
@inline(__always)
func triangleWave(_ u: Float) -> Float { 1 - abs(2 * fract(u) - 1) }

/// Anti-aliased stripe mask in [0, 1] for period-1 stripes whose pixel footprint is `w`
/// periods: a triangle wave pushed towards a square wave as far as the footprint allows.
@inline(__always)
func stripeMask(_ u: Float, footprint w: Float) -> Float {
    let sharpness = clamp(0.35 / (w + 1e-4), 1, 6)
    return clamp01((triangleWave(u) - 0.5) * sharpness + 0.5)
}

/// SplitMix64: a small, well-mixed deterministic generator (per-frame noise offsets,
/// the noise tile, texture variation).
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    mutating func nextUnit() -> Float { Float(next() >> 40) * (1 / 16_777_216) }
}

// MARK: - Four lanes at a time
// SIMD4<Float> maps onto one SSE register: the row loops shade four pixels per step.
// Two things in the standard library's SIMD API compile badly here: `pointwiseMin`,
// `pointwiseMax`, `clamped` and integer ⇄ float conversions are generic and stay calls,
// and `SIMDMask` selects (`replacing(with:where:)`) are sometimes split into per-lane
// branches. So lane masks here are plain integer vectors made from sign bits, selects
// are and/andnot/or, and conversions use the 2^23 "magic number": all single SSE
// instructions.

typealias F4 = SIMD4<Float>
typealias U4 = SIMD4<UInt32>

@inline(__always)
func bits(_ x: F4) -> U4 { unsafeBitCast(x, to: U4.self) }

@inline(__always)
func float4(bits x: U4) -> F4 { unsafeBitCast(x, to: F4.self) }

/// All ones in lanes where x is negative (sign bit set), zero elsewhere.
@inline(__always)
func negativeMask(_ x: F4) -> U4 { unsafeBitCast(unsafeBitCast(x, to: SIMD4<Int32>.self) &>> 31, to: U4.self) }

/// All ones in lanes where `a < b` (for finite differences).
@inline(__always)
func lessMask(_ a: F4, _ b: F4) -> U4 { negativeMask(a - b) }

/// `b` in the lanes `m` selects, else `a`.
@inline(__always)
func blend(_ a: F4, _ b: F4, _ m: U4) -> F4 { float4(bits: (bits(a) & ~m) | (bits(b) & m)) }

@inline(__always)
func min4(_ a: F4, _ b: F4) -> F4 { blend(a, b, negativeMask(b - a)) }

@inline(__always)
func max4(_ a: F4, _ b: F4) -> F4 { blend(a, b, negativeMask(a - b)) }

@inline(__always)
func clamp4(_ x: F4, _ lo: F4, _ hi: F4) -> F4 { min4(max4(x, lo), hi) }

@inline(__always)
func anyLane(_ m: U4) -> Bool { (m[0] | m[1] | m[2] | m[3]) != 0 }

@inline(__always)
func allLanes(_ m: U4) -> Bool { (m[0] & m[1] & m[2] & m[3]) != 0 }

/// Nearest integer of each lane, for lanes in [0, 2^22]: the low mantissa bits of x + 2^23.
@inline(__always)
func roundToUInt(_ x: F4) -> U4 { bits(x + 8_388_608) & 0x007F_FFFF }

/// Each lane (below 2^23) as a float.
@inline(__always)
func toFloat(_ x: U4) -> F4 { float4(bits: x | 0x4B00_0000) - 8_388_608 }

@inline(__always)
func load4(_ p: UnsafePointer<Float>) -> F4 { UnsafeRawPointer(p).loadUnaligned(as: F4.self) }

@inline(__always)
func load4(_ p: UnsafeMutablePointer<Float>) -> F4 { UnsafeRawPointer(p).loadUnaligned(as: F4.self) }

@inline(__always)
func store4(_ v: F4, _ p: UnsafeMutablePointer<Float>) { UnsafeMutableRawPointer(p).storeBytes(of: v, as: F4.self) }

@inline(__always)
func fastFloor(_ x: F4) -> F4 {
    let magic = F4(repeating: 12_582_912)
    let r = (x + magic) - magic
    // Subtract 1 where rounding went up (x − r < 0): the sign bit, shifted down, is 1 or 0.
    return r - toFloat(bits(x - r) &>> 31)
}

@inline(__always)
func fract(_ x: F4) -> F4 { x - fastFloor(x) }

@inline(__always)
func clamp01(_ x: F4) -> F4 { clamp4(x, F4(repeating: 0), F4(repeating: 1)) }

@inline(__always)
func absolute(_ x: F4) -> F4 {
    unsafeBitCast(unsafeBitCast(x, to: SIMD4<UInt32>.self) & 0x7FFF_FFFF, to: F4.self)
}

@inline(__always)
func mix(_ a: F4, _ b: F4, _ t: F4) -> F4 { a + (b - a) * t }

@inline(__always)
func mix(_ a: Float, _ b: Float, _ t: F4) -> F4 { a + (b - a) * t }

/// Four-lane `filteredSquareWave`.
@inline(__always)
func filteredSquareWave(_ u: F4, width: F4) -> F4 {
    let w = max4(width, F4(repeating: 1e-3))
    let h = 0.5 * w
    let a = 1 - absolute(2 * fract((u + h) * 0.5) - 1)
    let b = 1 - absolute(2 * fract((u - h) * 0.5) - 1)
    return clamp4((a - b) / w, F4(repeating: -1), F4(repeating: 1))
}

/// Smooth bump wave in [0, 1], period 1: a triangle wave eased with 3t² − 2t³.
@inline(__always)
func smoothWave(_ u: F4) -> F4 {
    let t = 1 - absolute(2 * fract(u) - 1)
    return t * t * (3 - 2 * t)
}
