import Imaging
@testable import CameraControl
import PoseCastKit
import SyntheticCamera
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The metering math on hand-made frames and on renders.
@Suite(.tags(.rendering)) struct RegionMeterTests {
    /// An I420 frame filled by functions of the pixel (luma) and the chroma sample.
    static func frame(width: Int = 640, height: Int = 480, luma: (Int, Int) -> UInt8,
                      u: UInt8 = 128, v: UInt8 = 128) throws -> I420Image {
        var image = try I420Image(width: width, height: height)
        for y in 0..<height { for x in 0..<width { image.bytes[y * width + x] = luma(x, y) } }
        let c = (width / 2) * (height / 2)
        for i in 0..<c { image.bytes[width * height + i] = u; image.bytes[width * height + c + i] = v }
        return image
    }

    @Test(arguments: MeteringMode.allCases)
    func flatFrameMeasuresExactly(mode: MeteringMode) throws {
        let image = try Self.frame(luma: { _, _ in 100 }, u: 140, v: 120)
        for point in [NormalizedPoint(x: 0.5, y: 0.5), NormalizedPoint(x: 0, y: 0), NormalizedPoint(x: 1, y: 1)] {
            let m = image.withFrameView { RegionMeter.measure($0, area: MeteringArea(mode: mode, point: point)) }
            #expect(m.brightness == 100)
            #expect(m.gradientEnergy == 0)
            #expect(m.sharpness == 0)
            #expect(abs(m.meanU - 12) < 1e-9)
            #expect(abs(m.meanV + 8) < 1e-9)
            #expect(m.colorCast > 0, "more Cb than Cr is a blue cast")
        }
    }

    @Test func neutralGreyHasNoCast() throws {
        let image = try Self.frame(luma: { x, _ in x < 320 ? 60 : 200 })
        let m = image.withFrameView { RegionMeter.measure($0, area: MeteringArea(mode: .uniform)) }
        #expect(abs(m.colorCast) < 1e-9)
        #expect(abs(m.brightness - 130) < 0.5)
    }

    @Test func regionsAreClampedInsideTheImage() {
        let (w, h) = (640, 480)
        let side = Int((MeteringArea.spotFraction * Double(w)).rounded())
        let corner = MeteringArea(mode: .spot, point: NormalizedPoint(x: 0, y: 0)).pixelRect(width: w, height: h)
        #expect(corner == PixelRect(x: 0, y: 0, width: side, height: side))
        let far = MeteringArea(mode: .spot, point: NormalizedPoint(x: 1, y: 1)).pixelRect(width: w, height: h)
        #expect(far == PixelRect(x: w - side, y: h - side, width: side, height: side))
        let edge = MeteringArea(mode: .weighted, point: NormalizedPoint(x: 0.98, y: 0.5)).pixelRect(width: w, height: h)
        #expect(edge.maxX == w && edge.width == 160 && edge.height == 160)
        let middle = MeteringArea(mode: .spot, point: NormalizedPoint(x: 0.5, y: 0.5)).pixelRect(width: w, height: h)
        #expect(abs(Double(middle.x + middle.width / 2) - 320) <= 1 && abs(Double(middle.y + middle.height / 2) - 240) <= 1)
        #expect(MeteringArea(mode: .uniform, point: NormalizedPoint(x: 0.1, y: 0.9)).pixelRect(width: w, height: h)
                == PixelRect(x: 0, y: 0, width: w, height: h))
        let rect = MeteringArea(mode: .spot, point: NormalizedPoint(x: 0, y: 1)).normalizedRect(width: w, height: h)
        #expect(rect.x == 0 && abs(rect.y + rect.height - 1) < 1e-6)
    }

    @Test func weightedFavoursTheCentre() throws {
        // A bright square the size of the weighted area's middle half, on a dark frame.
        let image = try Self.frame(luma: { x, y in abs(x - 320) < 40 && abs(y - 240) < 40 ? 200 : 40 })
        let weighted = image.withFrameView { RegionMeter.measure($0, area: MeteringArea(mode: .weighted)) }
        let square = MeteringArea(mode: .weighted).pixelRect(width: 640, height: 480)
        let plainMean = (Double(80 * 80) * 200 + Double(square.area - 80 * 80) * 40) / Double(square.area)
        #expect(weighted.brightness > plainMean + 20)
        let uniform = image.withFrameView { RegionMeter.measure($0, area: MeteringArea(mode: .uniform)) }
        #expect(uniform.brightness < 50)
    }

    @Test func sharpnessDoesNotDependOnRegionSizeOrExposure() throws {
        // Random dark and light pixels everywhere: every region sees the same texture.
        func dark(_ x: Int, _ y: Int) -> Bool {
            var h = UInt64(x &* 73_856_093 ^ y &* 19_349_663) &* 0x9E37_79B9_7F4A_7C15
            h ^= h >> 29
            return h & 1 == 0
        }
        let image = try Self.frame(luma: { x, y in dark(x, y) ? 40 : 100 })
        let brighter = try Self.frame(luma: { x, y in dark(x, y) ? 64 : 184 })
        let spot = image.withFrameView { RegionMeter.measure($0, area: MeteringArea(mode: .spot)) }
        let weighted = image.withFrameView { RegionMeter.measure($0, area: MeteringArea(mode: .weighted)) }
        let uniform = image.withFrameView { RegionMeter.measure($0, area: MeteringArea(mode: .uniform)) }
        #expect(spot.gradientEnergy > 0)
        #expect(abs(weighted.sharpness / spot.sharpness - 1) < 0.1)
        #expect(abs(uniform.sharpness / spot.sharpness - 1) < 0.1)
        // Twice the signal above black: gradient energy ×4, sharpness the same.
        let twice = brighter.withFrameView { RegionMeter.measure($0, area: MeteringArea(mode: .spot)) }
        #expect(abs(twice.gradientEnergy / spot.gradientEnergy - 4) < 0.2)
        #expect(abs(twice.sharpness / spot.sharpness - 1) < 0.05)
    }

    @Test func inFocusIsSharperThanDefocused() throws {
        let renderer = try SyntheticRenderer(width: 320, height: 240)
        let camera = SimulatedRig.camera(eye: SimulatedRig.eye, target: SimulatedRig.target, width: 320, height: 240)
        let depth = (SimulatedRig.eye - SimulatedRig.target).length - 0.3  // the ball's near surface
        var values: [Float: Double] = [:]
        for focus: Float in [depth, 1, 0.4, 20] {
            let image = try renderer.render(camera: camera, lens: LensState(focusDistance: focus), frameIndex: 3)
            values[focus] = image.withFrameView { RegionMeter.measure($0, area: MeteringArea(mode: .spot)) }.sharpness
        }
        #expect(values[depth]! > 2 * values[1]!)
        #expect(values[1]! > values[0.4]!)
        #expect(values[depth]! > 1.5 * values[20]!)
    }

    @Test func sceneThumbnailIgnoresNoiseButSeesAnotherView() throws {
        let renderer = try SyntheticRenderer(width: 320, height: 240)
        let a = try renderer.render(camera: SimulatedRig.orbitCamera(degrees: 0, width: 320, height: 240), frameIndex: 1)
        let b = try renderer.render(camera: SimulatedRig.orbitCamera(degrees: 0, width: 320, height: 240), frameIndex: 2)
        let c = try renderer.render(camera: SimulatedRig.orbitCamera(degrees: 90, width: 320, height: 240), frameIndex: 3)
        let brighter = try renderer.render(camera: SimulatedRig.orbitCamera(degrees: 0, width: 320, height: 240),
                                           lens: LensState(exposure: 1.3), frameIndex: 4)
        let ta = a.withFrameView { SceneThumbnail($0) }
        #expect(ta.difference(from: b.withFrameView { SceneThumbnail($0) }) < 0.01)
        #expect(ta.difference(from: brighter.withFrameView { SceneThumbnail($0) }) < 0.03)
        #expect(ta.difference(from: c.withFrameView { SceneThumbnail($0) }) > 0.1)
    }

    /// Median cost of one measurement at 1280×720 (generous bounds: tests share the CPU;
    /// `scripts/bench-focus` reports the real figures).
    @Test func meteringIsCheapAt720p() throws {
        let renderer = try SyntheticRenderer(width: 1280, height: 720)
        let image = try renderer.render(camera: SimulatedRig.orbitCamera(degrees: 30, width: 1280, height: 720), frameIndex: 1)
        func medianMicros(_ mode: MeteringMode) -> Double {
            var times: [Double] = []
            for _ in 0..<41 {
                var t0 = timespec(), t1 = timespec()
                clock_gettime(CLOCK_MONOTONIC, &t0)
                _ = image.withFrameView { RegionMeter.measure($0, area: MeteringArea(mode: mode, point: NormalizedPoint(x: 0.3, y: 0.6))) }
                clock_gettime(CLOCK_MONOTONIC, &t1)
                times.append(Double(t1.tv_sec - t0.tv_sec) * 1e6 + Double(t1.tv_nsec - t0.tv_nsec) / 1e3)
            }
            return times.sorted()[20]
        }
        #expect(medianMicros(.spot) < 1000)
        #expect(medianMicros(.weighted) < 1000)
        #expect(medianMicros(.uniform) < 3000)
    }
}
