// Pass 1 of a frame: shade one image row at full resolution into linear RGB and
// inverse depth, then convert it to luma and accumulate chroma.
//
// The per-pixel loops are written as plain scalar code without branches, calls or
// overflow checks (conditions are selects, stores unconditional) because that is the
// form the compiler reliably vectorises into SSE code four pixels wide. Boxes and
// spheres, which the compiler leaves scalar, are in ObjectShading.swift.

/// Below this depth a hit counts as behind the camera (as `CameraModel.nearPlane`).
let nearDepth: Float = 1e-3

/// The rays of one image row: direction `(x0 + i·dx, y0 + i·dy, z0 + i·dz)` for column
/// i, and the numerators of the ground point it meets, `px = (px0 + i·px1) / Dy` (same
/// for z), since P = O − oy/Dy · D.
struct RowRays {
    var x0: Float, y0: Float, z0: Float
    var dx: Float, dy: Float, dz: Float
    var px0: Float, px1: Float, pz0: Float, pz1: Float

    init(_ g: FrameGeometry, row y: Int) {
        let yf = Float(y)
        x0 = g.d0x + yf * g.dyx; y0 = g.d0y + yf * g.dyy; z0 = g.d0z + yf * g.dyz
        dx = g.dxx; dy = g.dxy; dz = g.dxz
        px0 = g.ox * y0 - g.oy * x0; px1 = g.ox * dy - g.oy * dx
        pz0 = g.oz * y0 - g.oy * z0; pz1 = g.oz * dy - g.oy * dz
    }
}

extension SyntheticRenderer {
    /// Shades row `y`: ground or sky everywhere, then ground decals (discs, contact
    /// shadows), then boxes and spheres where they are nearer than what is there.
    func shadeRow(_ y: Int, _ g: FrameGeometry) {
        let row = RowRays(g, row: y)
        let inv = rowInv
        shadeGroundAndSky(g, row.x0, row.y0, row.z0, inv)
        for i in 0..<discs.count where discs[i].rect.covers(row: y) {
            paintDisc(discs[i], row, inv)
        }
        for i in 0..<shadows.count where shadows[i].rect.covers(row: y) {
            paintContactShadow(shadows[i], row, inv)
        }
        for i in 0..<boxFaces.count where boxFaces[i].rect.covers(row: y) {
            shadeBoxFace(boxFaces[i], boxes[boxFaces[i].box], g, row, inv)
        }
        for i in 0..<spheres.count where spheres[i].rect.covers(row: y) {
            shadeSphere(spheres[i], g, row, inv)
        }
    }

    /// Paints a disc over the ground (where the pixel shows ground: inverse depth > 0,
    /// before any object is drawn), its edge anti-aliased over the pixel's footprint.
    private func paintDisc(_ disc: DiscPrim, _ row: RowRays, _ inv: UnsafeMutablePointer<Float>) {
        let r = rowR, g = rowG, b = rowB
        let cx = disc.cx, cz = disc.cz, radius = disc.radius, k = disc.inverseFootprint
        let c = disc.hazed
        for x in disc.rect.x0..<disc.rect.x1 &+ 1 {
            let xf = Float(x)
            let rcp = 1 / (row.y0 + xf * row.dy)
            let ex = (row.px0 + xf * row.px1) * rcp - cx
            let ez = (row.pz0 + xf * row.pz1) * rcp - cz
            let distance = (ex * ex + ez * ez).squareRoot()
            var coverage = (radius - distance) * k + 0.5
            coverage = coverage < 0 ? 0 : (coverage > 1 ? 1 : coverage)
            coverage = inv[x] > 0 ? coverage : 0
            r[x] += (c.r - r[x]) * coverage
            g[x] += (c.g - g[x]) * coverage
            b[x] += (c.b - b[x]) * coverage
        }
    }

    private func paintContactShadow(_ s: ContactShadowPrim, _ row: RowRays, _ inv: UnsafeMutablePointer<Float>) {
        let r = rowR, g = rowG, b = rowB
        let cx = s.cx, cz = s.cz, c = s.cosYaw, sn = s.sinYaw, hx = s.hx, hz = s.hz
        let strength = s.strength
        if s.round {
            let r2 = hx * hx, scale = 1 / ((hx + s.reach) * (hx + s.reach) - r2)
            for x in s.rect.x0..<s.rect.x1 &+ 1 {
                let xf = Float(x)
                let rcp = 1 / (row.y0 + xf * row.dy)
                let ex = (row.px0 + xf * row.px1) * rcp - cx
                let ez = (row.pz0 + xf * row.pz1) * rcp - cz
                var k = 1 - (ex * ex + ez * ez - r2) * scale
                k = k < 0 ? 0 : (k > 1 ? 1 : k)
                let darken = inv[x] > 0 ? 1 - strength * k * k : 1
                r[x] *= darken; g[x] *= darken; b[x] *= darken
            }
        } else {
            let scale = 1 / (s.reach * s.reach)
            for x in s.rect.x0..<s.rect.x1 &+ 1 {
                let xf = Float(x)
                let rcp = 1 / (row.y0 + xf * row.dy)
                let ex = (row.px0 + xf * row.px1) * rcp - cx
                let ez = (row.pz0 + xf * row.pz1) * rcp - cz
                let lx = abs(c * ex - sn * ez) - hx, lz = abs(sn * ex + c * ez) - hz
                let ax = lx > 0 ? lx : 0, az = lz > 0 ? lz : 0
                var k = 1 - (ax * ax + az * az) * scale
                k = k < 0 ? 0 : k
                let darken = inv[x] > 0 ? 1 - strength * k * k : 1
                r[x] *= darken; g[x] *= darken; b[x] *= darken
            }
        }
    }

    /// Applies the colour gains, clips at 255 and converts row `y` to luma (level 0 of
    /// the luma pyramid); on odd rows, averages each 2×2 block into chroma. Keeps the
    /// row's inverse depth.
    func finishRow(_ y: Int, red gR: Float, green gG: Float, blue gB: Float) {
        let r = rowR, g = rowG, b = rowB
        let yOut = luma.base.row(y)
        inverseDepth.row(y).update(from: rowInv, count: width)
        for x in 0..<width {
            let rr = r[x] * gR, gg = g[x] * gG, bb = b[x] * gB
            let cr = rr < 255 ? rr : 255, cg = gg < 255 ? gg : 255, cb = bb < 255 ? bb : 255
            yOut[x] = 16 + 0.256_788 * cr + 0.504_129 * cg + 0.097_906 * cb
            r[x] = cr; g[x] = cg; b[x] = cb
        }
        let cw = width / 2
        let sr = sumR, sg = sumG, sb = sumB
        if y & 1 == 0 {
            for i in 0..<cw {
                let x = 2 &* i
                sr[i] = r[x] + r[x &+ 1]; sg[i] = g[x] + g[x &+ 1]; sb[i] = b[x] + b[x &+ 1]
            }
            let invHalf = inverseDepthHalf.row(y >> 1)
            for i in 0..<cw { invHalf[i] = rowInv[2 &* i] }
        } else {
            let u = cb.base.row(y >> 1), v = cr.base.row(y >> 1)
            for i in 0..<cw {
                let x = 2 &* i
                let ar = (sr[i] + r[x] + r[x &+ 1]) * 0.25
                let ag = (sg[i] + g[x] + g[x &+ 1]) * 0.25
                let ab = (sb[i] + b[x] + b[x &+ 1]) * 0.25
                u[i] = 128 - 0.148_223 * ar - 0.290_993 * ag + 0.439_216 * ab
                v[i] = 128 + 0.439_216 * ar - 0.367_788 * ag - 0.071_427 * ab
            }
        }
    }
}
