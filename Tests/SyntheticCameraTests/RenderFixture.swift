import Imaging
import PoseCastKit
import SyntheticCamera

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Cameras, renders and image measurements shared by the synthetic-camera tests.
enum RenderFixture {
    static let width = 640
    static let height = 480
    static let scene = SyntheticScene.standard

    /// The orbit of the demo: radius 3 m, 1.6 m up, looking at (0, 0.3, 0).
    static func orbitCamera(degrees: Float, width: Int = width, height: Int = height) -> CameraModel {
        let a = degrees * .pi / 180
        return lookingAt(Vector3(0, 0.3, 0), from: Vector3(3 * sin(a), 1.6, 3 * cos(a)), width: width, height: height)
    }

    static func lookingAt(_ target: Vector3, from eye: Vector3, width: Int = width, height: Int = height) -> CameraModel {
        CameraModel(position: eye, orientation: .lookAt(eye: eye, target: target),
                    intrinsics: SyntheticRenderer.defaultIntrinsics(width: width, height: height))
    }

    static func renderer(width: Int = width, height: Int = height) throws -> SyntheticRenderer {
        try SyntheticRenderer(scene: scene, width: width, height: height)
    }

    static func disc(_ name: String) -> SceneDisc { scene.discs.first { $0.name == name }! }
    static func box(_ name: String) -> SceneBox { scene.boxes.first { $0.name == name }! }

    /// Normalised image point of pixel (x, y)'s centre.
    static func point(x: Int, y: Int, width: Int = width, height: Int = height) -> NormalizedPoint {
        NormalizedPoint(x: (Float(x) + 0.5) / Float(width), y: (Float(y) + 0.5) / Float(height))
    }

    /// The pixel holding a normalised point.
    static func pixel(_ p: NormalizedPoint, width: Int = width, height: Int = height) -> (x: Int, y: Int) {
        (Int(p.x * Float(width)), Int(p.y * Float(height)))
    }

    /// A scene colour as seen through the haze at depth z (what the renderer draws for a
    /// surface facing up, at nominal exposure).
    static func hazed(_ c: SceneColor, depth z: Float) -> SceneColor {
        let h = z / (z + scene.hazeDistance), sky = scene.horizon
        return SceneColor(c.red + (sky.red - c.red) * h, c.green + (sky.green - c.green) * h, c.blue + (sky.blue - c.blue) * h)
    }

    static func distance(_ a: SceneColor, _ b: SceneColor) -> Float {
        max(abs(a.red - b.red), abs(a.green - b.green), abs(a.blue - b.blue))
    }

    /// A pixel's RGB levels (`I420Image.rgb`) compared with a scene colour.
    static func distance(_ a: (red: Float, green: Float, blue: Float), _ b: SceneColor) -> Float {
        distance(SceneColor(a.red, a.green, a.blue), b)
    }

    /// Gradient energy (sum of squared horizontal and vertical luma differences) of the
    /// square of half-size `radius` around (cx, cy): the autofocus sharpness measure.
    static func sharpness(_ image: I420Image, cx: Int, cy: Int, radius: Int) -> Double {
        var energy = 0.0
        image.bytes.withUnsafeBufferPointer { y in
            let w = image.width
            for py in (cy - radius)..<(cy + radius) {
                for px in (cx - radius)..<(cx + radius) {
                    let c = Double(y[py * w + px])
                    let dx = Double(y[py * w + px + 1]) - c, dy = Double(y[(py + 1) * w + px]) - c
                    energy += dx * dx + dy * dy
                }
            }
        }
        return energy
    }

    /// Mean of the luma plane minus black (16), and of the chroma planes minus 128.
    static func means(_ image: I420Image) -> (y: Double, u: Double, v: Double) {
        let n = image.width * image.height, c = n / 4
        return image.bytes.withUnsafeBufferPointer { b in
            var sy = 0, su = 0, sv = 0
            for i in 0..<n { sy += Int(b[i]) }
            for i in 0..<c { su += Int(b[n + i]); sv += Int(b[n + c + i]) }
            return (Double(sy) / Double(n) - 16, Double(su) / Double(c) - 128, Double(sv) / Double(c) - 128)
        }
    }
}
