import PoseCastKit

// The scene in the form the row loops use: plain Float fields, no strings, no arrays,
// one struct type per kind of primitive so each loop is specialised.

/// Inclusive pixel rectangle; empty when `x0 > x1` or `y0 > y1`.
struct ScreenRect {
    var x0: Int, x1: Int, y0: Int, y1: Int
    static let empty = ScreenRect(x0: 1, x1: 0, y0: 1, y1: 0)
    var isEmpty: Bool { x0 > x1 || y0 > y1 }
    @inline(__always) func covers(row y: Int) -> Bool { y >= y0 && y <= y1 && x0 <= x1 }

    /// Pixels whose centres may see any of `points`' convex hull, with a pixel of margin;
    /// the whole image when a point is behind the camera (conservative).
    static func bounding(_ points: [Vector3], camera: CameraModel, width: Int, height: Int) -> ScreenRect {
        var minX = Float.infinity, maxX = -Float.infinity, minY = Float.infinity, maxY = -Float.infinity
        for p in points {
            guard let pr = camera.project(p) else { return ScreenRect(x0: 0, x1: width - 1, y0: 0, y1: height - 1) }
            let (px, py) = CameraModel.pixel(pr.point, width: width, height: height)
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
    /// Per frame: camera origin in the box frame and screen bounds.
    var ox: Float = 0, oy: Float = 0, oz: Float = 0
    var rect = ScreenRect.empty

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

    /// Box-frame direction → world.
    @inline(__always)
    func world(_ x: Float, _ y: Float, _ z: Float) -> (Float, Float, Float) {
        (cosYaw * x + sinYaw * z, y, -sinYaw * x + cosYaw * z)
    }
}

struct SpherePrim {
    var cx: Float, cy: Float, cz: Float, radius: Float
    var primary: RGB, secondary: RGB
    var bandFrequency: Float
    /// Per frame: camera origin minus centre, |oc|² − r², the highlight's half vector
    /// (sun and view direction, taken once per sphere), screen bounds.
    var ocx: Float = 0, ocy: Float = 0, ocz: Float = 0, c: Float = 0
    var hx: Float = 0, hy: Float = 1, hz: Float = 0
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
    var rect = ScreenRect.empty

    init(_ d: SceneDisc) { cx = d.center.x; cz = d.center.z; radius = d.radius; color = RGB(d.color) }
}

/// Soft contact shadow on the ground around an object's footprint (a rotated rectangle
/// for boxes, a circle for spheres): darkening falls off over `reach` metres.
struct ContactShadowPrim {
    var cx: Float, cz: Float
    var cosYaw: Float, sinYaw: Float
    /// Footprint half extents (box) or radius in `hx` with `hz` = −1 (round).
    var hx: Float, hz: Float
    var reach: Float
    var strength: Float
    var rect = ScreenRect.empty

    /// Ground points bounding the darkened area (for the screen rectangle).
    var boundingPoints: [Vector3] {
        let r = (hz < 0 ? hx : (hx * hx + hz * hz).squareRoot()) + reach
        return [Vector3(cx - r, 0, cz - r), Vector3(cx + r, 0, cz - r), Vector3(cx - r, 0, cz + r), Vector3(cx + r, 0, cz + r)]
    }
}

/// Small random tables the ground texture reads: a brightness offset per tile and a
/// lattice of values for the slow mottling (both 64 × 64, wrapping), in [−1, 1].
final class GroundTextures {
    static let size = 64
    let tileVariation: UnsafeMutablePointer<Float>
    let mottle: UnsafeMutablePointer<Float>

    init(seed: UInt64) {
        let n = Self.size * Self.size
        var rng = SplitMix64(seed: seed)
        tileVariation = .allocate(capacity: n)
        mottle = .allocate(capacity: n)
        for i in 0..<n { tileVariation[i] = rng.nextUnit() * 2 - 1 }
        for i in 0..<n { mottle[i] = rng.nextUnit() * 2 - 1 }
    }

    deinit { tileVariation.deallocate(); mottle.deallocate() }
}
