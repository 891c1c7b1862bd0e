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
