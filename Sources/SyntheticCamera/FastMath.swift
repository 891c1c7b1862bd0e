// Small scalar helpers and a deterministic random generator. The package builds for
// baseline x86-64 (SSE2), where `Float.rounded(.down)` becomes a call to `floorf`; these
// stay in registers.
//
// Helpers a per-pixel loop calls live in that loop's file: debug builds of this target
// are optimised but compile file by file, and a function in another file is never
// inlined there.

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

/// Triangle wave in [0, 1] with period 1, peaking at half-integers.
@inline(__always)
func triangleWave(_ u: Float) -> Float { 1 - abs(2 * fract(u) - 1) }

/// SplitMix64: a small, well-mixed deterministic generator (the noise tile and its
/// per-frame offsets).
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
