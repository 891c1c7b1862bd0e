// Pass 1 of a frame: shade one image row at full resolution into linear RGB and
// inverse depth, then convert it to luma and accumulate chroma. Every loop here runs
// over raw pointers with wrapping index arithmetic and no calls.

/// Below this depth a hit counts as behind the camera (as `CameraModel.nearPlane`).
let nearDepth: Float = 1e-3
/// Ground farther than this is drawn as horizon haze (sky, infinite depth).
let maxGroundDepth: Float = 1e5

extension SyntheticRenderer {
    /// Shades row `y`: ground or sky everywhere, then ground decals (discs, contact
    /// shadows), then boxes and spheres where they are nearer than what is there.
    func shadeRow(_ y: Int, _ g: FrameGeometry) {
        let yf = Float(y)
        let rowX = g.d0x + yf * g.dyx, rowY = g.d0y + yf * g.dyy, rowZ = g.d0z + yf * g.dyz
        let inv = rowInv
        shadeGroundAndSky(g, rowX, rowY, rowZ, inv)
        for i in 0..<discs.count where discs[i].rect.covers(row: y) {
            paintDisc(discs[i], g, rowX, rowY, rowZ, inv)
        }
        for i in 0..<shadows.count where shadows[i].rect.covers(row: y) {
            paintContactShadow(shadows[i], g, rowX, rowY, rowZ, inv)
        }
        for i in 0..<boxes.count where boxes[i].rect.covers(row: y) {
            shadeBox(boxes[i], g, rowX, rowY, rowZ, inv)
        }
        for i in 0..<spheres.count where spheres[i].rect.covers(row: y) {
            shadeSphere(spheres[i], g, rowX, rowY, rowZ, inv)
        }
    }

    /// Ground or sky for the whole row, four pixels per step (the row buffers have room
    /// for the lanes past an odd multiple of two).
    private func shadeGroundAndSky(_ g: FrameGeometry, _ rowX: Float, _ rowY: Float, _ rowZ: Float,
                                   _ inv: UnsafeMutablePointer<Float>) {
        let r = rowR, gr = rowG, b = rowB
        let ground = scene.ground
        let light = RGB(ground.light), dark = RGB(ground.dark)
        let horizon = RGB(scene.horizon), zenith = RGB(scene.zenith)
        let invTile = 1 / ground.tileSize, invMottle = 1 / ground.mottleScale
        let tileAmp = ground.tileVariation * 2, mottleAmp = ground.mottle
        let haze = scene.hazeDistance
        let ox = g.ox, oz = g.oz
        let negOy = -g.oy, invNegOy: Float = g.oy != 0 ? -1 / g.oy : 0
        // A camera exactly at ground level sees the plane edge-on: sky only (and no 0·∞).
        let hasGround = U4(repeating: g.oy != 0 ? ~0 : 0)
        let lanes = F4(0, 1, 2, 3)
        var x = 0
        while x < width {
            let xf = Float(x) + lanes
            let dx = rowX + xf * g.dxx, dy = rowY + xf * g.dxy, dz = rowZ + xf * g.dxz
            let q = 1 / dy
            let z = negOy * q
            let isGround = lessMask(F4(repeating: nearDepth), z) & lessMask(z, F4(repeating: maxGroundDepth)) & hasGround
            var cr = F4(), cg = F4(), cb = F4(), iv = F4()
            if anyLane(isGround) {
                let px = ox + z * dx, pz = oz + z * dz
                // Footprint of the pixel on the ground, in tiles, along world x and z:
                // |∂P/∂column| + |∂P/∂row| with P = O + z·D and z = −oy/Dy.
                let bq = g.dxy * q, cq = g.dyy * q
                let zt = z * invTile
                let wu = (absolute(g.dxx - dx * bq) + absolute(g.dyx - dx * cq)) * zt
                let wv = (absolute(g.dxz - dz * bq) + absolute(g.dyz - dz * cq)) * zt
                let u = px * invTile, v = pz * invTile
                let t = 0.5 + 0.5 * filteredSquareWave(u, width: wu) * filteredSquareWave(v, width: wv)
                // Per-tile brightness from a hash of the tile's indices, faded out where a
                // pixel covers more than half a tile (it would only shimmer).
                let ta = fract(fastFloor(u) * 0.1031), tb = fract(fastFloor(v) * 0.1099)
                let tileHash = fract((ta * (ta + 33.33) + tb * (tb + 47.17)) * (ta + tb + 0.37)) - 0.5
                let fade = clamp01(1 - 2 * max4(wu, wv))
                // Slow mottling: two crossed smooth waves at odd angles plus a broad third.
                let mx = px * invMottle, mz = pz * invMottle
                let m1 = smoothWave(0.53 * mx + 0.29 * mz + 0.1) - 0.5
                let m2 = smoothWave(-0.31 * mx + 0.61 * mz + 0.7) - 0.5
                let m3 = smoothWave(0.23 * mx - 0.17 * mz + 0.3) - 0.5
                let mottle = 2.6 * m1 * m2 + 0.7 * m3
                let brightness = 1 + tileHash * tileAmp * fade + mottle * mottleAmp
                let h = z / (z + haze)
                let gr0 = mix(dark.r, light.r, t) * brightness
                let gg0 = mix(dark.g, light.g, t) * brightness
                let gb0 = mix(dark.b, light.b, t) * brightness
                cr = gr0 + (horizon.r - gr0) * h
                cg = gg0 + (horizon.g - gg0) * h
                cb = gb0 + (horizon.b - gb0) * h
                iv = dy * invNegOy
            }
            if !allLanes(isGround) {
                let sky = ~isGround
                let elevation = dy / (dx * dx + dy * dy + dz * dz).squareRoot()
                var s = clamp01(elevation)
                s = 1 - (1 - s) * (1 - s)
                cr = blend(cr, mix(horizon.r, zenith.r, s), sky)
                cg = blend(cg, mix(horizon.g, zenith.g, s), sky)
                cb = blend(cb, mix(horizon.b, zenith.b, s), sky)
                iv = blend(iv, F4(), sky)
            }
            store4(cr, r + x); store4(cg, gr + x); store4(cb, b + x); store4(iv, inv + x)
            x &+= 4
        }
    }

    /// Ground point seen by column x of the row (valid where `inv[x] > 0` and nothing
    /// but the ground has been drawn yet).
    @inline(__always)
    private func groundPoint(_ g: FrameGeometry, _ rowX: Float, _ rowZ: Float, _ x: Int, _ z: Float) -> (Float, Float) {
        let xf = Float(x)
        return (g.ox + z * (rowX + xf * g.dxx), g.oz + z * (rowZ + xf * g.dxz))
    }

    private func paintDisc(_ disc: DiscPrim, _ g: FrameGeometry, _ rowX: Float, _ rowY: Float, _ rowZ: Float,
                           _ inv: UnsafeMutablePointer<Float>) {
        let r = rowR, gr = rowG, b = rowB
        let horizon = RGB(scene.horizon), haze = scene.hazeDistance
        let outer = disc.radius * 1.5, outer2 = outer * outer
        for x in disc.rect.x0...disc.rect.x1 {
            let iv = inv[x]
            guard iv > 0 else { continue }
            let z = 1 / iv
            let (px, pz) = groundPoint(g, rowX, rowZ, x, z)
            let ex = px - disc.cx, ez = pz - disc.cz
            let d2 = ex * ex + ez * ez
            guard d2 < outer2 else { continue }
            // Edge anti-aliasing: coverage over the pixel's footprint on the ground
            // (geometric mean of its across- and along-view extents).
            let xf = Float(x)
            let dx = rowX + xf * g.dxx, dy = rowY + xf * g.dxy, dz = rowZ + xf * g.dxz
            let length = (dx * dx + dy * dy + dz * dz).squareRoot()
            let footprint = z * g.pixelSize * (length / abs(dy)).squareRoot()
            let coverage = clamp01((disc.radius - d2.squareRoot()) / footprint + 0.5)
            guard coverage > 0 else { continue }
            let h = z / (z + haze)
            let cr = disc.color.r + (horizon.r - disc.color.r) * h
            let cg = disc.color.g + (horizon.g - disc.color.g) * h
            let cb = disc.color.b + (horizon.b - disc.color.b) * h
            r[x] += (cr - r[x]) * coverage
            gr[x] += (cg - gr[x]) * coverage
            b[x] += (cb - b[x]) * coverage
        }
    }

    private func paintContactShadow(_ s: ContactShadowPrim, _ g: FrameGeometry, _ rowX: Float, _ rowY: Float, _ rowZ: Float,
                                    _ inv: UnsafeMutablePointer<Float>) {
        let r = rowR, gr = rowG, b = rowB
        let invReach = 1 / s.reach
        for x in s.rect.x0...s.rect.x1 {
            let iv = inv[x]
            guard iv > 0 else { continue }
            let (px, pz) = groundPoint(g, rowX, rowZ, x, 1 / iv)
            let ex = px - s.cx, ez = pz - s.cz
            var d: Float
            if s.hz < 0 {
                d = (ex * ex + ez * ez).squareRoot() - s.hx
                if d < 0 { d = 0 }
            } else {
                let lx = abs(s.cosYaw * ex - s.sinYaw * ez) - s.hx
                let lz = abs(s.sinYaw * ex + s.cosYaw * ez) - s.hz
                let ax = lx > 0 ? lx : 0, az = lz > 0 ? lz : 0
                d = (ax * ax + az * az).squareRoot()
            }
            let k = 1 - d * invReach
            guard k > 0 else { continue }
            let darken = 1 - s.strength * k * k
            r[x] *= darken; gr[x] *= darken; b[x] *= darken
        }
    }

    private func shadeBox(_ box: BoxPrim, _ g: FrameGeometry, _ rowX: Float, _ rowY: Float, _ rowZ: Float,
                          _ inv: UnsafeMutablePointer<Float>) {
        let r = rowR, gr = rowG, b = rowB
        let horizon = RGB(scene.horizon), haze = scene.hazeDistance
        let (d0x, d0y, d0z) = box.local(rowX, rowY, rowZ)
        let (ddx, ddy, ddz) = box.local(g.dxx, g.dxy, g.dxz)
        let ox = box.ox, oy = box.oy, oz = box.oz
        let hx = box.hx, hy = box.hy, hz = box.hz
        // Texture footprint per unit depth (pattern periods per pixel at 1 m), allowing
        // for faces seen at an angle.
        let patternFootprint = g.pixelSize * box.inversePeriod * 1.5
        for x in box.rect.x0...box.rect.x1 {
            let xf = Float(x)
            let dx = d0x + xf * ddx, dy = d0y + xf * ddy, dz = d0z + xf * ddz
            let ix = 1 / dx, iy = 1 / dy, iz = 1 / dz
            let tx1 = (-hx - ox) * ix, tx2 = (hx - ox) * ix
            let ty1 = (-hy - oy) * iy, ty2 = (hy - oy) * iy
            let tz1 = (-hz - oz) * iz, tz2 = (hz - oz) * iz
            let txn = min(tx1, tx2), tyn = min(ty1, ty2), tzn = min(tz1, tz2)
            let tf = min(max(tx1, tx2), min(max(ty1, ty2), max(tz1, tz2)))
            let tn = max(txn, max(tyn, tzn))
            // Hit in front of the camera, and nearer than what the pixel shows.
            guard tn <= tf, tn > nearDepth, tn * inv[x] < 1 else { continue }
            let px = ox + tn * dx, py = oy + tn * dy, pz = oz + tn * dz
            let u: Float, v: Float, shade: Float
            if tn == txn {
                u = pz; v = py; shade = dx > 0 ? box.shadeXMinus : box.shadeXPlus
            } else if tn == tyn {
                u = px; v = pz; shade = dy > 0 ? box.shadeYMinus : box.shadeYPlus
            } else {
                u = px; v = py; shade = dz > 0 ? box.shadeZMinus : box.shadeZPlus
            }
            let w = tn * patternFootprint
            let m: Float
            if box.stripes {
                m = stripeMask((u + v) * box.inversePeriod, footprint: w)
            } else {
                let su = filteredSquareWave(2 * u * box.inversePeriod, width: 2 * w)
                let sv = filteredSquareWave(2 * v * box.inversePeriod, width: 2 * w)
                m = 0.5 + 0.5 * su * sv
            }
            let h = tn / (tn + haze)
            let cr = mix(box.secondary.r, box.primary.r, m) * shade
            let cg = mix(box.secondary.g, box.primary.g, m) * shade
            let cb = mix(box.secondary.b, box.primary.b, m) * shade
            r[x] = cr + (horizon.r - cr) * h
            gr[x] = cg + (horizon.g - cg) * h
            b[x] = cb + (horizon.b - cb) * h
            inv[x] = 1 / tn
        }
    }

    private func shadeSphere(_ s: SpherePrim, _ g: FrameGeometry, _ rowX: Float, _ rowY: Float, _ rowZ: Float,
                             _ inv: UnsafeMutablePointer<Float>) {
        let r = rowR, gr = rowG, b = rowB
        let horizon = RGB(scene.horizon), haze = scene.hazeDistance
        let lighting = self.lighting
        let ocx = s.ocx, ocy = s.ocy, ocz = s.ocz, c = s.c
        let invRadius = 1 / s.radius
        let bandFootprint = g.pixelSize * invRadius * s.bandFrequency * 2
        for x in s.rect.x0...s.rect.x1 {
            let xf = Float(x)
            let dx = rowX + xf * g.dxx, dy = rowY + xf * g.dxy, dz = rowZ + xf * g.dxz
            let a = dx * dx + dy * dy + dz * dz
            let bb = dx * ocx + dy * ocy + dz * ocz
            let disc = bb * bb - a * c
            guard disc >= 0 else { continue }
            let t = (-bb - disc.squareRoot()) / a
            guard t > nearDepth, t * inv[x] < 1 else { continue }
            let nx = (ocx + t * dx) * invRadius, ny = (ocy + t * dy) * invRadius, nz = (ocz + t * dz) * invRadius
            // Beach ball: four segments about the vertical axis, crossed by latitude bands.
            let band = stripeMask(ny * s.bandFrequency, footprint: t * bandFootprint)
            let m = (nx * nz > 0) ? band : 1 - band
            let shade = lighting.factor(nx: nx, ny: ny, nz: nz)
            var spec = nx * s.hx + ny * s.hy + nz * s.hz
            spec = spec > 0 ? spec : 0
            spec *= spec; spec *= spec; spec *= spec; spec *= spec; spec *= spec  // ^32
            let highlight = 70 * spec
            let h = t / (t + haze)
            let cr = mix(s.secondary.r, s.primary.r, m) * shade + highlight
            let cg = mix(s.secondary.g, s.primary.g, m) * shade + highlight
            let cb = mix(s.secondary.b, s.primary.b, m) * shade + highlight
            r[x] = cr + (horizon.r - cr) * h
            gr[x] = cg + (horizon.g - cg) * h
            b[x] = cb + (horizon.b - cb) * h
            inv[x] = 1 / t
        }
    }

    /// Applies the colour gains, clips at 255 and converts row `y` to luma (level 0 of
    /// the luma pyramid); on odd rows, averages each 2×2 block into chroma.
    func finishRow(_ y: Int, red gR: Float, green gG: Float, blue gB: Float) {
        let r = rowR, g = rowG, b = rowB
        let yOut = luma.base.row(y)
        inverseDepth.row(y).update(from: rowInv, count: width)
        for x in 0..<width {
            let rr = min(r[x] * gR, 255), gg = min(g[x] * gG, 255), bb = min(b[x] * gB, 255)
            yOut[x] = 16 + 0.256_788 * rr + 0.504_129 * gg + 0.097_906 * bb
            r[x] = rr; g[x] = gg; b[x] = bb
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
