// Boxes and spheres, four pixels per step in explicit SIMD: with four row buffers to
// select into, the compiler leaves the scalar form of these loops scalar.
//
// SIMD4<Float> maps onto one SSE register. Two parts of the standard library's SIMD API
// compile badly here: `pointwiseMin`/`pointwiseMax`, `clamped`, `squareRoot` are generic
// and stay calls, and `SIMDMask` (from `.<` and friends) is legalised through general
// registers, lane by lane. So lane masks below are integer vectors made from sign bits,
// selects are and/andnot/or, and every helper is a handful of SSE instructions. They
// are file-private on purpose: debug builds compile file by file and would not inline
// them from another file.

private typealias F4 = SIMD4<Float>
private typealias U4 = SIMD4<UInt32>

@inline(__always)
private func bits(_ x: F4) -> U4 { unsafeBitCast(x, to: U4.self) }

@inline(__always)
private func float4(bits x: U4) -> F4 { unsafeBitCast(x, to: F4.self) }

/// All ones in lanes where x is negative (sign bit set), zero elsewhere.
@inline(__always)
private func negativeMask(_ x: F4) -> U4 { unsafeBitCast(unsafeBitCast(x, to: SIMD4<Int32>.self) &>> 31, to: U4.self) }

/// All ones in lanes where `a < b` (for finite differences).
@inline(__always)
private func lessMask(_ a: F4, _ b: F4) -> U4 { negativeMask(a - b) }

/// `b` in the lanes `m` selects, else `a`.
@inline(__always)
private func blend(_ a: F4, _ b: F4, _ m: U4) -> F4 { float4(bits: (bits(a) & ~m) | (bits(b) & m)) }

@inline(__always)
private func min4(_ a: F4, _ b: F4) -> F4 { blend(a, b, negativeMask(b - a)) }

@inline(__always)
private func max4(_ a: F4, _ b: F4) -> F4 { blend(a, b, negativeMask(a - b)) }

@inline(__always)
private func anyLane(_ m: U4) -> Bool { (m[0] | m[1] | m[2] | m[3]) != 0 }

@inline(__always)
private func absolute(_ x: F4) -> F4 { float4(bits: bits(x) & U4(repeating: 0x7FFF_FFFF)) }

/// Square root lane by lane (four `sqrtss`).
@inline(__always)
private func squareRoot(_ x: F4) -> F4 { F4(x[0].squareRoot(), x[1].squareRoot(), x[2].squareRoot(), x[3].squareRoot()) }

@inline(__always)
private func load4(_ p: UnsafeMutablePointer<Float>) -> F4 { UnsafeRawPointer(p).loadUnaligned(as: F4.self) }

@inline(__always)
private func store4(_ v: F4, _ p: UnsafeMutablePointer<Float>) { UnsafeMutableRawPointer(p).storeBytes(of: v, as: F4.self) }

/// Four-lane `checkerAxis` (GroundShading.swift): ±2 inside even/odd half periods,
/// ramping across each edge over the pixel's footprint (`slope` = 1/footprint).
@inline(__always)
private func checkerAxis(_ u: F4, slope: F4) -> F4 {
    let magic = F4(repeating: 12_582_912), one = F4(repeating: 1)
    let w = u * F4(repeating: 0.5) - F4(repeating: 0.25)
    let e = absolute(w - ((w + magic) - magic))
    let s = (one - F4(repeating: 4) * e) * slope
    return absolute(s + one) - absolute(s - one)
}

extension SyntheticRenderer {
    /// One front face of a box: where the row's rays meet its plane within its extents,
    /// nearer than what the pixel shows. A step may run up to three pixels past the
    /// rectangle, which is harmless (a hit is a hit) and lands in the row buffers' spare
    /// room at the image edge.
    func shadeBoxFace(_ face: BoxFacePrim, _ box: BoxPrim, _ g: FrameGeometry, _ row: RowRays,
                      _ inv: UnsafeMutablePointer<Float>) {
        let r = rowR, gr = rowG, b = rowB
        let horizon = RGB(scene.horizon), h = box.haze
        // The row's rays in the box frame: direction d0 + x·dd, origin o.
        let d0 = box.local(row.x0, row.y0, row.z0), dd = box.local(row.dx, row.dy, row.dz)
        let o = (box.ox, box.oy, box.oz)
        let a0 = F4(repeating: component(d0, face.axis)), da = F4(repeating: component(dd, face.axis))
        let u0 = F4(repeating: component(d0, face.uAxis)), du = F4(repeating: component(dd, face.uAxis))
        let v0 = F4(repeating: component(d0, face.vAxis)), dv = F4(repeating: component(dd, face.vAxis))
        let ou = F4(repeating: component(o, face.uAxis)), ov = F4(repeating: component(o, face.vAxis))
        let hu = F4(repeating: face.hu), hv = F4(repeating: face.hv)
        let offset = F4(repeating: face.offset), invOffset = F4(repeating: 1 / face.offset)
        // Pattern in units of half periods: checks are axis(u)·axis(v); stripes run
        // diagonally, axis(u + v) times a constant 2.
        let unitS = 2 * box.inversePeriod
        let unit = F4(repeating: unitS)
        let vInU = F4(repeating: box.stripes ? unitS : 0)
        let bConstant = F4(repeating: box.stripes ? 2 : 0), bScale = F4(repeating: box.stripes ? 0 : 1)
        // 1/footprint in half periods at depth t is (1/t)·slopeScale (faces seen at an
        // angle count 1.5× wider).
        let slopeScale = F4(repeating: 1 / (g.pixelSize * 1.5 * unitS))
        let p = box.primary, s = box.secondary
        let clear = (1 - h) * face.shade
        let sR = F4(repeating: s.r * clear), sG = F4(repeating: s.g * clear), sB = F4(repeating: s.b * clear)
        let spanR = F4(repeating: (p.r - s.r) * clear), spanG = F4(repeating: (p.g - s.g) * clear)
        let spanB = F4(repeating: (p.b - s.b) * clear)
        let hazeR = F4(repeating: horizon.r * h), hazeG = F4(repeating: horizon.g * h), hazeB = F4(repeating: horizon.b * h)
        let one = F4(repeating: 1), farthest = F4(repeating: 1 / nearDepth)
        let half = F4(repeating: 0.5), eighth = F4(repeating: 0.125)
        let lanes = F4(0, 1, 2, 3)
        var x = face.rect.x0
        while x <= face.rect.x1 {
            defer { x &+= 4 }
            let xf = F4(repeating: Float(x)) + lanes
            let along = a0 + xf * da
            let t = offset / along
            let u = ou + t * (u0 + xf * du), v = ov + t * (v0 + xf * dv)
            let current = load4(inv + x)
            // 1/t; positive when the ray heads for the face (offset < 0, along < 0).
            let rz = along * invOffset
            let hit = negativeMask(absolute(u) - hu) & negativeMask(absolute(v) - hv) & lessMask(current, rz)
                & lessMask(rz, farthest)
            guard anyLane(hit) else { continue }
            let slope = rz * slopeScale
            let pa = checkerAxis(u * unit + v * vInU, slope: slope)
            let pb = bConstant + bScale * checkerAxis(v * unit, slope: slope)
            let m = half + eighth * pa * pb
            store4(blend(load4(r + x), sR + spanR * m + hazeR, hit), r + x)
            store4(blend(load4(gr + x), sG + spanG * m + hazeG, hit), gr + x)
            store4(blend(load4(b + x), sB + spanB * m + hazeB, hit), b + x)
            store4(blend(current, rz, hit), inv + x)
        }
    }

    /// A sphere (analytic, front surface), beach-ball pattern, diffuse and a highlight.
    func shadeSphere(_ s: SpherePrim, _ g: FrameGeometry, _ row: RowRays, _ inv: UnsafeMutablePointer<Float>) {
        let r = rowR, gr = rowG, b = rowB
        let horizon = RGB(scene.horizon), h = s.haze
        let sun = lighting.sun
        let sunX = F4(repeating: sun.x), sunY = F4(repeating: sun.y), sunZ = F4(repeating: sun.z)
        let ambient = F4(repeating: lighting.ambient * (1 - h)), direct = F4(repeating: lighting.direct * (1 - h))
        let ocx = F4(repeating: s.ocx), ocy = F4(repeating: s.ocy), ocz = F4(repeating: s.ocz), c = F4(repeating: s.c)
        let invRadius = F4(repeating: 1 / s.radius)
        let bands = F4(repeating: 2 * s.bandFrequency)
        // d(n.y)/d(pixel) ≈ pixel size · depth / radius (at the centre of the disc).
        let slopeScale = F4(repeating: s.radius / (g.pixelSize * 2 * s.bandFrequency))
        let hx = F4(repeating: s.hx), hy = F4(repeating: s.hy), hz = F4(repeating: s.hz)
        let p = s.primary, q = s.secondary
        let qR = F4(repeating: q.r), qG = F4(repeating: q.g), qB = F4(repeating: q.b)
        let spanR = F4(repeating: p.r - q.r), spanG = F4(repeating: p.g - q.g), spanB = F4(repeating: p.b - q.b)
        let highlight = F4(repeating: 70 * (1 - h))
        let hazeR = F4(repeating: horizon.r * h), hazeG = F4(repeating: horizon.g * h), hazeB = F4(repeating: horizon.b * h)
        let zero = F4(), one = F4(repeating: 1), near = F4(repeating: nearDepth)
        let half = F4(repeating: 0.5), quarter = F4(repeating: 0.25)
        let lanes = F4(0, 1, 2, 3)
        let x0 = F4(repeating: row.x0), y0 = F4(repeating: row.y0), z0 = F4(repeating: row.z0)
        let ddx = F4(repeating: row.dx), ddy = F4(repeating: row.dy), ddz = F4(repeating: row.dz)
        var x = s.rect.x0
        while x <= s.rect.x1 {
            defer { x &+= 4 }
            let xf = F4(repeating: Float(x)) + lanes
            let dx = x0 + xf * ddx, dy = y0 + xf * ddy, dz = z0 + xf * ddz
            let a = dx * dx + dy * dy + dz * dz
            let bb = dx * ocx + dy * ocy + dz * ocz
            let disc = bb * bb - a * c
            let inside = ~negativeMask(disc)
            guard anyLane(inside) else { continue }
            let root = squareRoot(max4(disc, zero))
            let t = (zero - bb - root) / a
            let current = load4(inv + x)
            let rz = one / t
            let hit = inside & lessMask(near, t) & lessMask(current, rz)
            guard anyLane(hit) else { continue }
            let nx = (ocx + t * dx) * invRadius, ny = (ocy + t * dy) * invRadius, nz = (ocz + t * dz) * invRadius
            // Beach ball: four segments about the vertical axis crossed by latitude bands.
            let band = half + quarter * checkerAxis(ny * bands, slope: rz * slopeScale)
            let m = blend(one - band, band, negativeMask(zero - nx * nz))
            let shade = ambient + direct * max4(nx * sunX + ny * sunY + nz * sunZ, zero)
            var spec = max4(nx * hx + ny * hy + nz * hz, zero)
            spec *= spec; spec *= spec; spec *= spec; spec *= spec; spec *= spec  // ^32
            let glint = highlight * spec
            let cr = (qR + spanR * m) * shade + glint + hazeR
            let cg = (qG + spanG * m) * shade + glint + hazeG
            let cb = (qB + spanB * m) * shade + glint + hazeB
            store4(blend(load4(r + x), cr, hit), r + x)
            store4(blend(load4(gr + x), cg, hit), gr + x)
            store4(blend(load4(b + x), cb, hit), b + x)
            store4(blend(current, rz, hit), inv + x)
        }
    }
}
