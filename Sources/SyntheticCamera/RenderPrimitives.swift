import PoseCastKit

// The scene in the form the row loops use: plain Float fields, no strings, no arrays,
// one struct type per kind of primitive so each loop is specialised.

/// Inclusive pixel rectangle; empty when `x0 > x1` or `y0 > y1`.
struct ScreenRect {
    var x0: Int, x1: Int, y0: Int, y1: Int
    static let empty = ScreenRect(x0: 1, x1: 0, y0: 1, y1: 0)
    var isEmpty: Bool { x0 > x1 || y0 > y1 }
    @inline(__always) func covers(row y: Int) -> Bool { y >= y0 && y <= y1 && x0 <= x1 }

    /// Pixels whose centres may see any part of the convex hull of `points` in front of
    /// the camera, with a pixel of margin. Points behind the near plane are replaced by
    /// where the segments joining them to points in front cross it (every pair, a
    /// superset of the hull's edges), so a hull reaching behind the camera is bounded by
    /// its visible part; one wholly behind is empty.
    static func bounding(_ points: [Vector3], camera: CameraModel, width: Int, height: Int) -> ScreenRect {
        let near = 2 * CameraModel.nearPlane
        let local = points.map(camera.toCamera)  // camera looks down −z
        let front = local.filter { -$0.z >= near }
        guard !front.isEmpty else { return .empty }
        var visible = front
        for b in local where -b.z < near {
            for f in front {
                let t = (-near - f.z) / (b.z - f.z)  // f.z ≤ −near < b.z
                visible.append(f + (b - f) * t)
            }
        }
        let k = camera.intrinsics
        var minX = Float.infinity, maxX = -Float.infinity, minY = Float.infinity, maxY = -Float.infinity
        for c in visible {
            let depth = max(-c.z, near)
            let px = (k.cx + k.fx * c.x / depth) * Float(width), py = (k.cy - k.fy * c.y / depth) * Float(height)
            minX = min(minX, px); maxX = max(maxX, px); minY = min(minY, py); maxY = max(maxY, py)
        }
        guard minX.isFinite, maxX.isFinite, minY.isFinite, maxY.isFinite else {
            return ScreenRect(x0: 0, x1: width - 1, y0: 0, y1: height - 1)
        }
        // Pixel i's centre is at i + 0.5.
        let x0 = max(Int(max(minX - 1.5, -1).rounded(.down)), 0)
        let x1 = min(Int(min(maxX + 0.5, Float(width + 1)).rounded(.up)), width - 1)
        let y0 = max(Int(max(minY - 1.5, -1).rounded(.down)), 0)
        let y1 = min(Int(min(maxY + 0.5, Float(height + 1)).rounded(.up)), height - 1)
        return ScreenRect(x0: x0, x1: x1, y0: y0, y1: y1)
    }
}

/// RGB in display levels.
struct RGB {
    var r: Float, g: Float, b: Float
    init(_ c: SceneColor) { r = c.red; g = c.green; b = c.blue }
    init(r: Float, g: Float, b: Float) { self.r = r; self.g = g; self.b = b }
}

/// Sun and sky lighting: surfaces facing straight up get factor 1 (scene colours are
/// defined that way); others `ambient + direct·max(0, n·sun)` relative to that.
struct Lighting {
    var sun: Vector3
    var ambient: Float
    var direct: Float

    init(sun: Vector3) {
        self.sun = sun
        let up = max(sun.y, 0)
        let norm = 1 / (0.45 + 0.55 * up)
        ambient = 0.45 * norm; direct = 0.55 * norm
    }

    @inline(__always)
    func factor(nx: Float, ny: Float, nz: Float) -> Float {
        let d = nx * sun.x + ny * sun.y + nz * sun.z
        return ambient + direct * (d > 0 ? d : 0)
    }
}

struct BoxPrim {
    var cx: Float, cy: Float, cz: Float
    var hx: Float, hy: Float, hz: Float
    var cosYaw: Float, sinYaw: Float
    var primary: RGB, secondary: RGB
    var inversePeriod: Float
    var stripes: Bool
    /// Lighting factor of the faces whose box-frame normal is ±x, ±y, ±z.
    var shadeXPlus: Float, shadeXMinus: Float, shadeYPlus: Float, shadeYMinus: Float, shadeZPlus: Float, shadeZMinus: Float
    /// Per frame: camera origin in the box frame, haze at the box's depth (taken as
    /// constant over the box).
    var ox: Float = 0, oy: Float = 0, oz: Float = 0
    var haze: Float = 0

    init(_ box: SceneBox, lighting: Lighting) {
        let c = box.center
        cx = c.x; cy = c.y; cz = c.z
        hx = box.size.x / 2; hy = box.size.y / 2; hz = box.size.z / 2
        (cosYaw, sinYaw) = box.yawCosSin
        primary = RGB(box.primary); secondary = RGB(box.secondary)
        switch box.pattern {
        case .stripes(let p): inversePeriod = 1 / p; stripes = true
        case .checks(let p): inversePeriod = 1 / p; stripes = false
        }
        func shade(_ n: Vector3) -> Float {
            let w = box.toWorld(n)
            return lighting.factor(nx: w.x, ny: w.y, nz: w.z)
        }
        shadeXPlus = shade(Vector3(1, 0, 0)); shadeXMinus = shade(Vector3(-1, 0, 0))
        shadeYPlus = shade(Vector3(0, 1, 0)); shadeYMinus = shade(Vector3(0, -1, 0))
        shadeZPlus = shade(Vector3(0, 0, 1)); shadeZMinus = shade(Vector3(0, 0, -1))
    }

    /// World direction → box frame (same as `SceneBox.toLocal`).
    @inline(__always)
    func local(_ x: Float, _ y: Float, _ z: Float) -> (Float, Float, Float) {
        (cosYaw * x - sinYaw * z, y, sinYaw * x + cosYaw * z)
    }

    /// Lighting factor of the face whose box-frame normal is `sign` along `axis`.
    func shade(axis: Int, sign: Float) -> Float {
        switch axis {
        case 0: sign > 0 ? shadeXPlus : shadeXMinus
        case 1: sign > 0 ? shadeYPlus : shadeYMinus
        default: sign > 0 ? shadeZPlus : shadeZMinus
        }
    }
}

/// A box face that faces the camera this frame. A convex box's front faces do not
/// overlap on screen, so each pixel meets at most one of them: no slab test, no
/// min/max per pixel — the ray meets the face's plane at t = offset / (direction along
/// the axis), and the hit is on the face when both in-plane coordinates are within the
/// half extents.
struct BoxFacePrim {
    /// Index into the renderer's boxes.
    var box: Int
    /// The face's normal axis (0 x, 1 y, 2 z, in the box frame) and its texture axes:
    /// x faces map (z, y), y faces (x, z), z faces (x, y).
    var axis: Int, uAxis: Int, vAxis: Int
    var hu: Float, hv: Float
    /// Plane coordinate minus the camera's along the axis (negative: the camera is
    /// outside, on the face's side); t = offset / direction component.
    var offset: Float
    var shade: Float
    var rect: ScreenRect

    /// The texture axes of the faces normal to `axis`.
    static func textureAxes(_ axis: Int) -> (u: Int, v: Int) { axis == 0 ? (2, 1) : (axis == 1 ? (0, 2) : (0, 1)) }
}

/// Component `i` of a triple.
@inline(__always)
func component(_ v: (Float, Float, Float), _ i: Int) -> Float { i == 0 ? v.0 : (i == 1 ? v.1 : v.2) }

struct SpherePrim {
    var cx: Float, cy: Float, cz: Float, radius: Float
    var primary: RGB, secondary: RGB
    var bandFrequency: Float
    /// Per frame: camera origin minus centre, |oc|² − r², the highlight's half vector
    /// (sun and view direction, taken once per sphere), screen bounds.
    var ocx: Float = 0, ocy: Float = 0, ocz: Float = 0, c: Float = 0
    var hx: Float = 0, hy: Float = 1, hz: Float = 0
    var haze: Float = 0
    var rect = ScreenRect.empty

    init(_ s: SceneSphere) {
        cx = s.center.x; cy = s.center.y; cz = s.center.z; radius = s.radius
        primary = RGB(s.primary); secondary = RGB(s.secondary); bandFrequency = s.bandFrequency
    }
}

/// A disc painted on the ground.
struct DiscPrim {
    var cx: Float, cz: Float, radius: Float
    var color: RGB
    /// Per frame: the colour through the haze at the disc's depth, 1 / the pixel's
    /// footprint on the ground there (edge anti-aliasing), screen bounds.
    var hazed: RGB
    var inverseFootprint: Float = 1
    var rect = ScreenRect.empty

    init(_ d: SceneDisc) { cx = d.center.x; cz = d.center.z; radius = d.radius; color = RGB(d.color); hazed = color }
}

/// Soft contact shadow on the ground around an object's footprint, darkening by
/// `strength·k²` where k falls from 1 at the footprint to 0 `reach` metres out: for a
/// box, k = 1 − d²/reach² with d the distance to its (rotated) rectangle; for a sphere,
/// k = 1 − (r² − R²)/((R + reach)² − R²) with r the distance to its centre (no square
/// roots either way).
struct ContactShadowPrim {
    var cx: Float, cz: Float
    var cosYaw: Float, sinYaw: Float
    /// Footprint half extents (box), or the radius in both (round).
    var hx: Float, hz: Float
    var round: Bool
    var reach: Float
    var strength: Float
    var rect = ScreenRect.empty

    /// Ground points bounding the darkened area (for the screen rectangle).
    var boundingPoints: [Vector3] {
        let r = (round ? hx : (hx * hx + hz * hz).squareRoot()) + reach
        return [Vector3(cx - r, 0, cz - r), Vector3(cx + r, 0, cz - r), Vector3(cx - r, 0, cz + r), Vector3(cx + r, 0, cz + r)]
    }
}

