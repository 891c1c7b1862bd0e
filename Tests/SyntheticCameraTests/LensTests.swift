import Imaging
import PoseCastKit
import SyntheticCamera
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The simulated lens and sensor: what tap-to-focus and metering will steer.
@Suite("synthetic camera: defocus, exposure, white balance and noise")
struct LensTests {
    typealias F = RenderFixture

    @Test("circle of confusion follows the thin-lens dioptre gap and scales with width")
    func circleOfConfusion() {
        let lens = LensState(focusDistance: 6)
        #expect(abs(lens.circleOfConfusion(depth: 1.5, imageWidth: 640) - 5) < 1e-4)
        #expect(abs(lens.circleOfConfusion(depth: 1.5, imageWidth: 1280) - 10) < 1e-4)
        #expect(lens.circleOfConfusion(depth: 6, imageWidth: 640) == 0)
        #expect(abs(lens.circleOfConfusion(depth: .infinity, imageWidth: 640) - 10.0 / 6) < 1e-4)
        let d = LensState()
        #expect(d.focusDistance == 3 && d.exposure == 1 && d.gain == 1 && d.whiteBalanceKelvin == 5500 && d.noise == 1.5)
    }

    /// Region around an object's projected centre, with that pixel's true depth.
    static func region(of object: String, camera: CameraModel) throws -> (x: Int, y: Int, depth: Float) {
        let centre = F.scene.boxes.first { $0.name == object }?.center ?? F.scene.spheres.first { $0.name == object }!.center
        let p = try #require(camera.project(centre))
        let (x, y) = F.pixel(p.point)
        let hit = try #require(F.scene.intersect(camera.ray(through: F.point(x: x, y: y))))
        #expect(hit.name == object)
        return (x, y, try #require(camera.project(hit.point)).depth)
    }

    @Test("sharpness peaks where focus equals the object's depth and falls monotonically on each side",
          arguments: [("ball", Float(0)), ("crate", Float(0)), ("tower", Float(300)), ("bench", Float(10))])
    func focusSweep(object: String, degrees: Float) throws {
        let camera = F.orbitCamera(degrees: degrees)
        let renderer = try F.renderer()
        let (x, y, depth) = try Self.region(of: object, camera: camera)
        // Focus from depth/2.5 to 2.5·depth in 6% steps.
        let focuses = (0..<33).map { depth / 2.5 * pow(Float(2.5 * 2.5), Float($0) / 32) }
        let sharpness = try focuses.map { focus in
            let image = try renderer.render(camera: camera, lens: LensState(focusDistance: focus, noise: 0), frameIndex: 3)
            return F.sharpness(image, cx: x, cy: y, radius: 8)
        }
        let best = sharpness.indices.max { sharpness[$0] < sharpness[$1] }!
        #expect(abs(focuses[best] / depth - 1) <= 0.1, "\(object): sharpest at \(focuses[best]) m, depth \(depth) m")
        for i in 0..<best { #expect(sharpness[i] <= sharpness[i + 1] * 1.001, "\(object): not rising at \(focuses[i]) m") }
        for i in best..<(sharpness.count - 1) { #expect(sharpness[i + 1] <= sharpness[i] * 1.001, "\(object): not falling at \(focuses[i]) m") }
        #expect(sharpness[best] > 2 * sharpness[0] && sharpness[best] > 2 * sharpness[sharpness.count - 1],
                "\(object): defocus barely changes sharpness: \(sharpness)")
    }

    @Test("with sensor noise the sharpness peak stays at the object's depth")
    func focusSweepWithNoise() throws {
        let camera = F.orbitCamera(degrees: 0)
        let renderer = try F.renderer()
        let (x, y, depth) = try Self.region(of: "ball", camera: camera)
        let focuses = (0..<21).map { depth / 2 * pow(Float(4), Float($0) / 20) }
        let sharpness = try focuses.enumerated().map { i, focus in
            F.sharpness(try renderer.render(camera: camera, lens: LensState(focusDistance: focus), frameIndex: UInt64(i)),
                        cx: x, cy: y, radius: 8)
        }
        let best = sharpness.indices.max { sharpness[$0] < sharpness[$1] }!
        #expect(abs(focuses[best] / depth - 1) <= 0.1)
    }

    @Test("an object at 1.5 m is visibly blurred with focus at 6 m (default aperture)")
    func defaultApertureBlursNearObjects() throws {
        let crate = F.box("crate")
        let camera = F.lookingAt(crate.center, from: crate.center + Vector3(0.35, 0.75, 1.65))
        let renderer = try F.renderer()
        let (x, y, depth) = try Self.region(of: "crate", camera: camera)
        #expect(abs(depth - 1.5) < 0.2, "depth \(depth)")
        let sharp = F.sharpness(try renderer.render(camera: camera, lens: LensState(focusDistance: depth, noise: 0)), cx: x, cy: y, radius: 10)
        let blurred = F.sharpness(try renderer.render(camera: camera, lens: LensState(focusDistance: 6, noise: 0)), cx: x, cy: y, radius: 10)
        #expect(blurred < sharp / 5, "sharp \(sharp), blurred \(blurred)")
    }

    @Test("doubling the exposure doubles the brightness (before clipping)")
    func exposure() throws {
        let renderer = try F.renderer()
        let camera = F.orbitCamera(degrees: 45)
        let dim = F.means(try renderer.render(camera: camera, lens: LensState(exposure: 0.25, noise: 0)))
        let bright = F.means(try renderer.render(camera: camera, lens: LensState(exposure: 0.5, noise: 0)))
        #expect(abs(bright.y / dim.y - 2) < 0.03, "luma \(dim.y) → \(bright.y)")
        // Analogue gain brightens the same way.
        let gained = F.means(try renderer.render(camera: camera, lens: LensState(exposure: 0.25, gain: 2, noise: 0)))
        #expect(abs(gained.y / bright.y - 1) < 0.01)
        // Overexposure clips at white (235) instead of growing.
        let over = F.means(try renderer.render(camera: camera, lens: LensState(exposure: 8, noise: 0)))
        #expect(over.y > 200 && over.y <= 219.5)
    }

    @Test("white balance: gains are neutral at the scene's 5500 K and swing with kelvin")
    func whiteBalanceGains() {
        let neutral = LensState.whiteBalanceGains(kelvin: 5500)
        #expect(abs(neutral.red - 1) < 1e-5 && abs(neutral.blue - 1) < 1e-5)
        let tungsten = LensState.whiteBalanceGains(kelvin: 3200), shade = LensState.whiteBalanceGains(kelvin: 8000)
        #expect(tungsten.red < 0.8 && tungsten.blue > 1.6)
        #expect(shade.red > 1.05 && shade.blue < 0.9)
        var last = LensState.whiteBalanceGains(kelvin: 2000)
        for k in stride(from: Float(2500), through: 12000, by: 500) {
            let g = LensState.whiteBalanceGains(kelvin: k)
            #expect(g.red > last.red && g.blue < last.blue)
            last = g
        }
    }

    @Test("white balance tints the frame: low kelvin cool (more Cb, less Cr), high kelvin warm")
    func whiteBalanceTint() throws {
        let renderer = try F.renderer()
        let camera = F.orbitCamera(degrees: 100)
        func means(_ kelvin: Float) throws -> (y: Double, u: Double, v: Double) {
            F.means(try renderer.render(camera: camera, lens: LensState(exposure: 0.8, whiteBalanceKelvin: kelvin)))
        }
        let neutral = try means(5500), cool = try means(3200), warm = try means(8000)
        #expect(cool.u > neutral.u + 5 && cool.v < neutral.v - 5, "3200 K: \(cool) vs \(neutral)")
        #expect(warm.u < neutral.u - 2 && warm.v > neutral.v + 2, "8000 K: \(warm) vs \(neutral)")
    }

    /// Standard deviation of the luma difference of two frames that differ only in noise,
    /// over pixels away from the clipping limits, divided by √2.
    static func noiseSigma(_ a: I420Image, _ b: I420Image) -> Double {
        var sum = 0.0, sum2 = 0.0, n = 0.0
        for i in 0..<(a.width * a.height) {
            let p = Int(a.bytes[i]), q = Int(b.bytes[i])
            guard (24...225).contains(p), (24...225).contains(q) else { continue }
            let d = Double(p - q)
            sum += d; sum2 += d * d; n += 1
        }
        let mean = sum / n
        return ((sum2 / n - mean * mean) / 2).squareRoot()
    }

    @Test("sensor noise has the configured sigma, scales with gain, and changes with the frame index",
          arguments: [(Float(1.5), Float(1)), (Float(3), Float(1)), (Float(1.5), Float(2))])
    func noise(sigma: Float, gain: Float) throws {
        let renderer = try F.renderer()
        let camera = F.orbitCamera(degrees: 10)
        let lens = LensState(exposure: 1 / gain, gain: gain, noise: sigma)
        let a = try renderer.render(camera: camera, lens: lens, frameIndex: 100)
        let b = try renderer.render(camera: camera, lens: lens, frameIndex: 101)
        let measured = Self.noiseSigma(a, b)
        // Rounding to 8 bits adds 1/12 of a level² of variance.
        let expected = (Double(sigma * gain) * Double(sigma * gain) + 1.0 / 12).squareRoot()
        #expect(abs(measured / expected - 1) < 0.1, "measured σ \(measured), expected \(expected)")
    }

    @Test("without noise, frames differ in nothing but their pose")
    func noiseless() throws {
        let renderer = try F.renderer()
        let camera = F.orbitCamera(degrees: 10)
        let lens = LensState(noise: 0)
        #expect(try renderer.render(camera: camera, lens: lens, frameIndex: 1) == renderer.render(camera: camera, lens: lens, frameIndex: 2))
    }
}
