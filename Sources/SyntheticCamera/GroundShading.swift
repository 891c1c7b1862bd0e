// The ground and the sky of one row: the bulk of every frame, so the costliest loop.
//
// Along a row the ray direction is affine in x, so with D(x) = d0 + x·dx:
//   inverse depth   1/z = −Dy(x)/oy                       (affine: exact, no division)
//   ground point    u = (ox·Dy − oy·Dx)/(tile·Dy), v likewise with z
// i.e. both texture coordinates are an affine numerator over the affine Dy: one
// reciprocal per pixel. Everything that varies slowly — the pixel's footprint on the
// ground (anti-aliasing and contrast fade), the mottling, the haze — is evaluated every
// `GroundSamples.spacing` pixels and interpolated linearly; only the checkerboard is
// evaluated per pixel, in a scalar loop the compiler vectorises four pixels wide.

/// Ground farther than this is drawn as horizon haze (sky, infinite depth).
let maxGroundDepth: Float = 1e5

/// Per-row samples of the slowly varying ground terms, every `spacing` pixels.
final class GroundSamples {
    static let spacing = 32
    static let quantities = 7
    let count: Int
    private let storage: UnsafeMutablePointer<Float>

    init(width: Int) {
        count = width / Self.spacing + 3
        storage = .allocate(capacity: count * Self.quantities)
        storage.initialize(repeating: 0, count: count * Self.quantities)
    }

    deinit { storage.deallocate() }

    /// Sample `i` of quantity `q`: 0, 1 the checker slopes along u and v (1/footprint in
    /// tiles); 2 the checker contrast; 3 the brightness times the clear-air fraction; 4…6
    /// the haze colour added (r, g, b).
    @inline(__always) subscript(q: Int, i: Int) -> Float {
        get { storage[q &* count &+ i] }
        set { storage[q &* count &+ i] = newValue }
    }
}

/// One axis of the anti-aliased checkerboard, before contrast: +2 inside tiles whose
/// index is even, −2 inside odd ones, ramping linearly across each edge over the pixel's
/// footprint (`slope` = 1/footprint in tiles). `|w − round(w)|` with w = u/2 − 1/4 is a
/// triangle wave e, and (1 − 4e)/2 the signed distance (in tiles) to the nearest edge.
/// Scalar and branch-free so the compiler vectorises the loops that use it.
@inline(__always)
func checkerAxis(_ u: Float, slope: Float) -> Float {
    let magic: Float = 12_582_912
    let w = u * 0.5 - 0.25
    let e = abs(w - ((w + magic) - magic))
    let s = (1 - 4 * e) * slope
    return abs(s + 1) - abs(s - 1)  // 2·clamp(s, −1, 1)
}

extension SyntheticRenderer {
    /// Ground or sky for the whole row.
    func shadeGroundAndSky(_ g: FrameGeometry, _ rowX: Float, _ rowY: Float, _ rowZ: Float,
                           _ inv: UnsafeMutablePointer<Float>) {
        let (g0, g1) = groundSpan(g, rowY)
        if g0 < g1 { shadeGround(g, rowX, rowY, rowZ, inv, from: g0, to: g1) }
        if g0 > 0 { shadeSky(g, rowX, rowY, rowZ, inv, from: 0, to: min(g0, width)) }
        if g1 < width { shadeSky(g, rowX, rowY, rowZ, inv, from: max(g1, 0), to: width) }
    }

    /// The pixels of the row that see the ground between `nearDepth` and
    /// `maxGroundDepth`: where the affine inverse depth lies between their inverses.
    private func groundSpan(_ g: FrameGeometry, _ rowY: Float) -> (Int, Int) {
        guard g.oy != 0 else { return (0, 0) }
        let i0 = -Double(rowY) / Double(g.oy), i1 = -Double(g.dxy) / Double(g.oy)
        let low = 1 / Double(maxGroundDepth), high = 1 / Double(nearDepth)
        let w = Double(width)
        if abs(i1) < 1e-15 { return i0 > low && i0 < high ? (0, width) : (0, 0) }
        let a = (low - i0) / i1, b = (high - i0) / i1
        let lo = max(min(a, b), -2), hi = min(max(a, b), w + 2)
        guard lo < hi else { return (0, 0) }
        // Pixel x is inside when lo < x < hi.
        let first = max(Int(lo.rounded(.down)) + 1, 0)
        let end = min(Int(hi.rounded(.up)), width)
        return first < end ? (first, end) : (0, 0)
    }

    private func shadeGround(_ g: FrameGeometry, _ rowX: Float, _ rowY: Float, _ rowZ: Float,
                             _ inv: UnsafeMutablePointer<Float>, from g0: Int, to g1: Int) {
        let ground = scene.ground, haze = scene.hazeDistance
        let horizon = RGB(scene.horizon)
        let invTile = 1 / ground.tileSize, invMottle = 1 / ground.mottleScale
        let ox = g.ox, oy = g.oy, oz = g.oz
        let samples = groundSamples, spacing = GroundSamples.spacing

        // Slowly varying terms at x = spacing·i, clamped into the ground span.
        let firstSample = g0 / spacing, lastSample = (g1 - 1) / spacing + 1
        for i in firstSample...lastSample {
            let xs = Float(min(max(i * spacing, g0), g1 - 1))
            let dx = rowX + xs * g.dxx, dy = rowY + xs * g.dxy, dz = rowZ + xs * g.dxz
            let q = 1 / dy
            let z = -oy * q
            let px = ox + z * dx, pz = oz + z * dz
            // Footprint in tiles along world x and z: |∂P/∂column| + |∂P/∂row| with
            // P = O + z·D and z = −oy/Dy.
            let bq = g.dxy * q, cq = g.dyy * q
            let wu = (abs(g.dxx - dx * bq) + abs(g.dyx - dx * cq)) * z * invTile
            let wv = (abs(g.dxz - dz * bq) + abs(g.dyz - dz * cq)) * z * invTile
            samples[0, i] = 1 / max(wu, 0.01)
            samples[1, i] = 1 / max(wv, 0.01)
            // Contrast fades out as tiles shrink towards a pixel (the ramps above already
            // flatten past one tile per pixel; this removes what would only shimmer).
            // 0.125 = the ¼ of the product of two ±2 axes, times ½ for the tone's range.
            samples[2, i] = 0.125 * clamp01(1.25 - 0.5 * wu) * clamp01(1.25 - 0.5 * wv)
            // Mottling: two crossed smooth waves at odd angles, plus a broad third.
            let mx = px * invMottle, mz = pz * invMottle
            let m1 = smoothWave(0.53 * mx + 0.29 * mz + 0.1) - 0.5
            let m2 = smoothWave(-0.31 * mx + 0.61 * mz + 0.7) - 0.5
            let m3 = smoothWave(0.23 * mx - 0.17 * mz + 0.3) - 0.5
            let brightness = 1 + (2.6 * m1 * m2 + 0.7 * m3) * ground.mottle
            let h = z / (z + haze)
            samples[3, i] = brightness * (1 - h)
            samples[4, i] = horizon.r * h
            samples[5, i] = horizon.g * h
            samples[6, i] = horizon.b * h
        }

        let nu0 = (ox * rowY - oy * rowX) * invTile, nu1 = (ox * g.dxy - oy * g.dxx) * invTile
        let nv0 = (oz * rowY - oy * rowZ) * invTile, nv1 = (oz * g.dxy - oy * g.dxz) * invTile
        let invNegOy = -1 / oy
        let light = RGB(ground.light), dark = RGB(ground.dark)
        let invSpacing = 1 / Float(spacing)
        var start = g0
        while start < g1 {
            // One stretch between two samples: each slow term is a + b·x here.
            let i = start / spacing
            let end = min((i + 1) * spacing, g1)
            let x0 = Float(i * spacing)
            var a = (0, 0, 0, 0, 0, 0, 0) as (Float, Float, Float, Float, Float, Float, Float)
            var d = a
            func line(_ q: Int) -> (Float, Float) {
                let s0 = samples[q, i], step = (samples[q, i + 1] - s0) * invSpacing
                return (s0 - x0 * step, step)
            }
            (a.0, d.0) = line(0); (a.1, d.1) = line(1); (a.2, d.2) = line(2); (a.3, d.3) = line(3)
            (a.4, d.4) = line(4); (a.5, d.5) = line(5); (a.6, d.6) = line(6)
            groundStretch(from: start, to: end, rowY: rowY, dxy: g.dxy, nu: (nu0, nu1), nv: (nv0, nv1),
                          invNegOy: invNegOy, light: light, dark: dark, base: a, slope: d, inv: inv)
            start = end
        }
    }

    /// The per-pixel ground loop over [from, to): scalar, branch-free and call-free, so
    /// the compiler turns it into SSE code four pixels wide.
    @inline(__always)
    private func groundStretch(from x0: Int, to x1: Int, rowY: Float, dxy: Float, nu: (Float, Float), nv: (Float, Float),
                               invNegOy: Float, light: RGB, dark: RGB,
                               base a: (Float, Float, Float, Float, Float, Float, Float),
                               slope d: (Float, Float, Float, Float, Float, Float, Float),
                               inv: UnsafeMutablePointer<Float>) {
        let r = rowR, g = rowG, b = rowB
        let spanR = light.r - dark.r, spanG = light.g - dark.g, spanB = light.b - dark.b
        for x in x0..<x1 {
            let xf = Float(x)
            let dy = rowY + xf * dxy
            let rcp = 1 / dy
            let u = (nu.0 + xf * nu.1) * rcp
            let v = (nv.0 + xf * nv.1) * rcp
            let su = checkerAxis(u, slope: a.0 + xf * d.0)
            let sv = checkerAxis(v, slope: a.1 + xf * d.1)
            let tone = 0.5 + su * sv * (a.2 + xf * d.2)
            let gain = a.3 + xf * d.3
            r[x] = (dark.r + spanR * tone) * gain + (a.4 + xf * d.4)
            g[x] = (dark.g + spanG * tone) * gain + (a.5 + xf * d.5)
            b[x] = (dark.b + spanB * tone) * gain + (a.6 + xf * d.6)
            inv[x] = dy * invNegOy
        }
    }

    /// Sky from `from` to `to`: a gradient from the horizon colour to the zenith colour
    /// by the ray's elevation; infinite depth.
    private func shadeSky(_ g: FrameGeometry, _ rowX: Float, _ rowY: Float, _ rowZ: Float,
                          _ inv: UnsafeMutablePointer<Float>, from a: Int, to e: Int) {
        let horizon = RGB(scene.horizon), zenith = RGB(scene.zenith)
        let r = rowR, gr = rowG, b = rowB
        for x in a..<e {
            let xf = Float(x)
            let dx = rowX + xf * g.dxx, dy = rowY + xf * g.dxy, dz = rowZ + xf * g.dxz
            var s = dy / (dx * dx + dy * dy + dz * dz).squareRoot()  // sine of the elevation
            s = s > 0 ? 1 - (1 - s) * (1 - s) : 0
            r[x] = horizon.r + (zenith.r - horizon.r) * s
            gr[x] = horizon.g + (zenith.g - horizon.g) * s
            b[x] = horizon.b + (zenith.b - horizon.b) * s
            inv[x] = 0
        }
    }
}

/// Smooth bump wave in [0, 1], period 1: a triangle wave eased with 3t² − 2t³.
@inline(__always)
func smoothWave(_ u: Float) -> Float {
    let t = triangleWave(u)
    return t * t * (3 - 2 * t)
}
