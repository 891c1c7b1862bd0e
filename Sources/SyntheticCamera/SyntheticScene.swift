#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PoseCastKit

/// A colour in display levels (0–255 per channel, as the camera would record it for a
/// surface facing straight up, in nominal exposure and white balance).
public struct SceneColor: Sendable, Hashable {
    public var red: Float, green: Float, blue: Float
    public init(_ red: Float, _ green: Float, _ blue: Float) { self.red = red; self.green = green; self.blue = blue }

    /// True for the hues reserved for annotation markers (magenta, pink, purple: red and
    /// blue both clearly above green). No part of a synthetic scene may use them, so a
    /// test can find markers in a decoded frame by colour alone.
    public var isMarkerHue: Bool { min(red, blue) - green > 30 }
}

/// How a box face alternates between its two colours.
public enum SurfacePattern: Sendable, Hashable {
    /// Parallel stripes along the face's horizontal axis, `period` metres per pair.
    case stripes(period: Float)
    /// A checkerboard of squares `period / 2` metres wide.
    case checks(period: Float)
}

/// A box standing on the ground, turned about the vertical axis.
public struct SceneBox: Sendable, Hashable {
    public var name: String
    /// Centre of the bottom face (usually on the ground, y = 0).
    public var baseCenter: Vector3
    /// Extent along the box's own x (width), y (height) and z (depth) axes, metres.
    public var size: Vector3
    /// Rotation about world +y, degrees (counter-clockwise seen from above).
    public var yawDegrees: Float
    public var primary: SceneColor
    public var secondary: SceneColor
    public var pattern: SurfacePattern

    public init(name: String, baseCenter: Vector3, size: Vector3, yawDegrees: Float,
                primary: SceneColor, secondary: SceneColor, pattern: SurfacePattern) {
        self.name = name; self.baseCenter = baseCenter; self.size = size; self.yawDegrees = yawDegrees
        self.primary = primary; self.secondary = secondary; self.pattern = pattern
    }

    /// The box's centre (half way up).
    public var center: Vector3 { baseCenter + Vector3(0, size.y / 2, 0) }

    var yawCosSin: (cos: Float, sin: Float) {
        let a = yawDegrees * .pi / 180
        return (cos(a), sin(a))
    }

    /// World direction → box frame.
    func toLocal(_ v: Vector3) -> Vector3 {
        let (c, s) = yawCosSin
        return Vector3(c * v.x - s * v.z, v.y, s * v.x + c * v.z)
    }

    /// Box-frame direction → world.
    func toWorld(_ v: Vector3) -> Vector3 {
        let (c, s) = yawCosSin
        return Vector3(c * v.x + s * v.z, v.y, -s * v.x + c * v.z)
    }

    /// The four top corners, counter-clockwise seen from above starting at the box-frame
    /// (−x, −z) corner; feature names `<name>.top.0` … `<name>.top.3`.
    public var topCorners: [Vector3] {
        let hx = size.x / 2, hz = size.z / 2
        return [(-hx, -hz), (-hx, hz), (hx, hz), (hx, -hz)].map { x, z in
            baseCenter + toWorld(Vector3(x, size.y, z))
        }
    }
}

/// A sphere with a two-colour "beach ball" pattern: four segments about the vertical
/// axis crossed by thin latitude bands.
public struct SceneSphere: Sendable, Hashable {
    public var name: String
    public var center: Vector3
    public var radius: Float
    public var primary: SceneColor
    public var secondary: SceneColor
    /// Light/dark latitude band pairs per unit of the normal's y component (higher is finer).
    public var bandFrequency: Float

    public init(name: String, center: Vector3, radius: Float, primary: SceneColor, secondary: SceneColor,
                bandFrequency: Float = 6) {
        self.name = name; self.center = center; self.radius = radius
        self.primary = primary; self.secondary = secondary; self.bandFrequency = bandFrequency
    }
}

/// A flat coloured disc lying on the ground (y = 0): a tap target.
public struct SceneDisc: Sendable, Hashable {
    public var name: String
    /// Centre on the ground (y is 0).
    public var center: Vector3
    public var radius: Float
    public var color: SceneColor

    public init(name: String, x: Float, z: Float, radius: Float, color: SceneColor) {
        self.name = name; self.center = Vector3(x, 0, z); self.radius = radius; self.color = color
    }
}

/// The ground plane y = 0: a checkerboard of square tiles in two tones under a slow
/// mottling, so the floor is not perfectly periodic.
public struct GroundStyle: Sendable, Hashable {
    /// Side of one tile, metres.
    public var tileSize: Float
    public var light: SceneColor
    public var dark: SceneColor
    /// Relative brightness amplitude of the mottling (±), in blotches about `mottleScale`
    /// metres across.
    public var mottle: Float
    public var mottleScale: Float

    public init(tileSize: Float = 0.25, light: SceneColor = SceneColor(158, 154, 146),
                dark: SceneColor = SceneColor(102, 99, 94), mottle: Float = 0.14, mottleScale: Float = 0.8) {
        self.tileSize = tileSize; self.light = light; self.dark = dark
        self.mottle = mottle; self.mottleScale = mottleScale
    }
}

/// A named point of the scene whose image position tests and benchmarks can check.
public struct SceneFeature: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// The centre of a ground disc (y = 0).
        case discCenter
        /// A top corner of a box.
        case boxTopCorner
    }
    public var name: String
    public var position: Vector3
    public var kind: Kind
}

/// What kind of surface a ray met.
public enum SceneSurfaceKind: Sendable, Hashable {
    case ground, disc, box, sphere
}

/// The first surface along a ray: exact ground truth for a tap.
public struct SceneHit: Sendable, Hashable {
    /// Distance along the ray from its origin, metres.
    public var distance: Float
    public var point: Vector3
    /// Unit normal of the surface, facing the ray's origin side.
    public var normal: Vector3
    /// The object's name (`"ground"` for the floor).
    public var name: String
    public var kind: SceneSurfaceKind
}

/// A known 3D scene: a tiled ground plane y = 0 under a sky, with boxes, spheres and
/// coloured discs at known positions. The renderer draws it; `intersect` gives the
/// exact surface under any ray, so the video and its ground truth always agree.
public struct SyntheticScene: Sendable, Hashable {
    public var ground: GroundStyle
    /// Sky colour at the horizon (also the haze far ground fades into).
    public var horizon: SceneColor
    /// Sky colour straight up.
    public var zenith: SceneColor
    /// Unit direction towards the sun (lights the boxes and spheres).
    public var sunDirection: Vector3
    /// Distance (metres) at which haze has blended half way to the horizon colour.
    public var hazeDistance: Float
    public var boxes: [SceneBox]
    public var spheres: [SceneSphere]
    public var discs: [SceneDisc]

    public init(ground: GroundStyle = GroundStyle(), horizon: SceneColor = SceneColor(196, 207, 216),
                zenith: SceneColor = SceneColor(104, 146, 204), sunDirection: Vector3 = Vector3(-0.35, 0.85, 0.4),
                hazeDistance: Float = 60, boxes: [SceneBox] = [], spheres: [SceneSphere] = [], discs: [SceneDisc] = []) {
        self.ground = ground; self.horizon = horizon; self.zenith = zenith
        self.sunDirection = sunDirection.normalized; self.hazeDistance = hazeDistance
        self.boxes = boxes; self.spheres = spheres; self.discs = discs
    }

    /// The scene of the demo, tests and benchmarks. Everything lies within 1.6 m of the
    /// origin, so a camera orbiting at radius 3 m, 1.6 m up, looking at (0, 0.3, 0) sees
    /// objects from about 1.5 m to 4.7 m away, with the floor running off to the horizon.
    ///
    /// - boxes: `crate` (0.5 m wooden cube, stripes), `tower` (1.2 m tall blue-grey pillar,
    ///   checks), `bench` (long low green block, checks), `cube` (small yellow/black hazard
    ///   stripes);
    /// - spheres: `ball` (0.3 m radius, white/teal, at the centre of the orbit) and `globe`;
    /// - discs (radius 9 cm, on the ground): `disc.red`, `disc.green`, `disc.blue`,
    ///   `disc.yellow`, `disc.cyan`, `disc.orange`.
    ///
    /// No colour is magenta, pink or purple (`SceneColor.isMarkerHue`).
    public static let standard = SyntheticScene(
        boxes: [
            SceneBox(name: "crate", baseCenter: Vector3(-0.9, 0, -0.7), size: Vector3(0.5, 0.5, 0.5), yawDegrees: 25,
                     primary: SceneColor(176, 116, 62), secondary: SceneColor(118, 74, 38), pattern: .stripes(period: 0.05)),
            SceneBox(name: "tower", baseCenter: Vector3(1.0, 0, -1.1), size: Vector3(0.3, 1.2, 0.3), yawDegrees: -10,
                     primary: SceneColor(84, 104, 136), secondary: SceneColor(196, 204, 212), pattern: .checks(period: 0.08)),
            SceneBox(name: "bench", baseCenter: Vector3(0.75, 0, 1.05), size: Vector3(0.8, 0.3, 0.35), yawDegrees: 60,
                     primary: SceneColor(68, 134, 78), secondary: SceneColor(36, 84, 46), pattern: .checks(period: 0.06)),
            SceneBox(name: "cube", baseCenter: Vector3(-1.2, 0, 1.1), size: Vector3(0.25, 0.25, 0.25), yawDegrees: 40,
                     primary: SceneColor(226, 192, 52), secondary: SceneColor(42, 42, 40), pattern: .stripes(period: 0.06)),
        ],
        spheres: [
            SceneSphere(name: "ball", center: Vector3(0, 0.3, 0), radius: 0.3,
                        primary: SceneColor(232, 232, 226), secondary: SceneColor(24, 138, 138), bandFrequency: 7),
            SceneSphere(name: "globe", center: Vector3(-0.2, 0.2, -1.45), radius: 0.2,
                        primary: SceneColor(238, 150, 58), secondary: SceneColor(246, 240, 228), bandFrequency: 5),
        ],
        discs: [
            SceneDisc(name: "disc.red", x: 0.6, z: 0.3, radius: 0.09, color: SceneColor(214, 36, 30)),
            SceneDisc(name: "disc.green", x: -0.6, z: 0.4, radius: 0.09, color: SceneColor(40, 168, 58)),
            SceneDisc(name: "disc.blue", x: 0.25, z: -0.7, radius: 0.09, color: SceneColor(34, 78, 212)),
            SceneDisc(name: "disc.yellow", x: -0.5, z: -0.1, radius: 0.09, color: SceneColor(236, 206, 30)),
            SceneDisc(name: "disc.cyan", x: 1.3, z: 0.05, radius: 0.09, color: SceneColor(28, 190, 212)),
            SceneDisc(name: "disc.orange", x: -1.3, z: 0.2, radius: 0.09, color: SceneColor(242, 126, 20)),
        ])

    /// Named points: every disc centre (`disc.<colour>`, on the ground) and every box's
    /// top corners (`<box>.top.0` … `.top.3`).
    public var features: [SceneFeature] {
        discs.map { SceneFeature(name: $0.name, position: $0.center, kind: .discCenter) }
            + boxes.flatMap { box in
                box.topCorners.enumerated().map { i, p in SceneFeature(name: "\(box.name).top.\(i)", position: p, kind: .boxTopCorner) }
            }
    }

    /// Every colour the scene uses (for the no-marker-hue check).
    public var palette: [SceneColor] {
        [ground.light, ground.dark, horizon, zenith] + boxes.flatMap { [$0.primary, $0.secondary] }
            + spheres.flatMap { [$0.primary, $0.secondary] } + discs.map(\.color)
    }
}
