import PoseCastKit
import SyntheticCamera
import Imaging
import Testing

@Suite("synthetic camera: buffers, errors and determinism")
struct RendererAPITests {
    typealias F = RenderFixture

    @Test("odd and too small sizes are rejected", arguments: [(641, 480), (640, 481), (1281, 721)])
    func oddSizes(width: Int, height: Int) {
        #expect(throws: SyntheticCameraError.image(.oddSize(width: width, height: height))) {
            try SyntheticRenderer(width: width, height: height)
        }
        #expect(throws: ImagingError.oddSize(width: width, height: height)) {
            try I420Image(width: width, height: height)
        }
    }

    @Test("frames below 16 pixels a side are rejected")
    func tooSmall() {
        #expect(throws: SyntheticCameraError.image(.tooSmall(width: 8, height: 480, minimum: 16))) {
            try SyntheticRenderer(width: 8, height: 480)
        }
        #expect(throws: SyntheticCameraError.image(.tooSmall(width: 640, height: 0, minimum: 16))) {
            try SyntheticRenderer(width: 640, height: 0)
        }
    }

    @Test("tiny frames render")
    func tiny() throws {
        let renderer = try SyntheticRenderer(width: 16, height: 16)
        let image = try renderer.render(camera: F.orbitCamera(degrees: 0, width: 16, height: 16))
        #expect(image.bytes.count == 16 * 16 * 3 / 2)
    }

    @Test("planes with short strides are rejected; strides longer than a row are honoured")
    func strides() throws {
        var buffer = [UInt8](repeating: 0, count: 64 * 32 * 3)
        try buffer.withUnsafeMutableBufferPointer { b in
            let base = b.baseAddress!
            #expect(throws: ImagingError.strideTooSmall(plane: "Y", stride: 31, minimum: 32)) {
                try I420Planes(y: base, yStride: 31, u: base, uStride: 16, v: base, vStride: 16, width: 32, height: 32)
            }
            #expect(throws: ImagingError.strideTooSmall(plane: "V", stride: 15, minimum: 16)) {
                try I420Planes(y: base, yStride: 32, u: base, uStride: 16, v: base, vStride: 15, width: 32, height: 32)
            }
            // Padded rows: Y stride 48, chroma strides 24; the padding stays untouched.
            base.update(repeating: 0xAB, count: b.count)
            let planes = try I420Planes(y: base, yStride: 48, u: base + 48 * 32, uStride: 24,
                                        v: base + 48 * 32 + 24 * 16, vStride: 24, width: 32, height: 32)
            let renderer = try SyntheticRenderer(width: 32, height: 32)
            let camera = F.orbitCamera(degrees: 0, width: 32, height: 32)
            try renderer.render(camera: camera, lens: LensState(noise: 0), frameIndex: 0, into: planes)
            let packed = try renderer.render(camera: camera, lens: LensState(noise: 0), frameIndex: 0)
            for y in 0..<32 {
                #expect(Array(b[(y * 48)..<(y * 48 + 32)]) == Array(packed.bytes[(y * 32)..<(y * 32 + 32)]))
                #expect(b[y * 48 + 32..<y * 48 + 48].allSatisfy { $0 == 0xAB })
            }
            for y in 0..<16 {
                let u = 48 * 32 + y * 24, v = 48 * 32 + 24 * 16 + y * 24
                #expect(Array(b[u..<(u + 16)]) == Array(packed.bytes[(1024 + y * 16)..<(1024 + y * 16 + 16)]))
                #expect(Array(b[v..<(v + 16)]) == Array(packed.bytes[(1280 + y * 16)..<(1280 + y * 16 + 16)]))
                #expect(b[u + 16..<u + 24].allSatisfy { $0 == 0xAB } && b[v + 16..<v + 24].allSatisfy { $0 == 0xAB })
            }
        }
    }

    @Test("a buffer of another size, an invalid lens or camera, a zero depth-map scale are refused")
    func refusals() throws {
        let renderer = try F.renderer()
        let camera = F.orbitCamera(degrees: 0)
        var small = try I420Image(width: 320, height: 240)
        #expect(throws: SyntheticCameraError.sizeMismatch(expectedWidth: 640, expectedHeight: 480, width: 320, height: 240)) {
            try small.withPlanes { try renderer.render(camera: camera, lens: LensState(), frameIndex: 0, into: $0) }
        }
        #expect(throws: SyntheticCameraError.invalidLens(field: "focusDistance", value: 0, rule: "finite and > 0")) {
            try renderer.render(camera: camera, lens: LensState(focusDistance: 0))
        }
        #expect(throws: SyntheticCameraError.self) { try renderer.render(camera: camera, lens: LensState(exposure: .nan)) }
        #expect(throws: SyntheticCameraError.self) { try renderer.render(camera: camera, lens: LensState(noise: -1)) }
        var broken = camera
        broken.position.x = .infinity
        #expect(throws: SyntheticCameraError.self) { try renderer.render(camera: broken) }
        broken = camera
        broken.intrinsics.fx = 0
        #expect(throws: SyntheticCameraError.self) { try renderer.render(camera: broken) }
        #expect(throws: SyntheticCameraError.invalidScale(0)) { try renderer.copyDepthMap(scale: 0) }
        #expect(SyntheticCameraError.image(.oddSize(width: 3, height: 4)).description.contains("even"))
    }

    @Test("the same inputs give the same bytes, in any renderer; another frame index changes the noise")
    func deterministic() throws {
        let camera = F.orbitCamera(degrees: 77)
        let lens = LensState(focusDistance: 2.2, exposure: 1.1, whiteBalanceKelvin: 4800)
        let a = try F.renderer().render(camera: camera, lens: lens, frameIndex: 42)
        let renderer = try F.renderer()
        _ = try renderer.render(camera: F.orbitCamera(degrees: 5), frameIndex: 1)  // state of an earlier frame must not leak
        let b = try renderer.render(camera: camera, lens: lens, frameIndex: 42)
        #expect(a == b)
        let c = try renderer.render(camera: camera, lens: lens, frameIndex: 43)
        #expect(a != c)
    }

    @Test("before the first frame every depth is infinite")
    func depthBeforeFirstFrame() throws {
        let renderer = try F.renderer()
        #expect(renderer.depthAt(x: 0, y: 0) == .infinity)
        let map = try renderer.copyDepthMap()
        #expect(map.values.allSatisfy { $0 == .infinity })
        #expect(map.depth(at: NormalizedPoint(x: 0.5, y: 0.5)) == nil)
    }

    @Test("views from anywhere render: inside an object, below the ground, straight up or down")
    func oddViews() throws {
        let renderer = try SyntheticRenderer(width: 64, height: 48)
        let eyes = [Vector3(0, 0.3, 0), Vector3(-0.9, 0.25, -0.7), Vector3(0, -1, 2), Vector3(0, 0, 3), Vector3(0.1, 10, 0.1)]
        for eye in eyes {
            for target in [Vector3(0, 0.3, 0.01), Vector3(0, 20, 0), Vector3(0, -5, 0.01), Vector3(3, 1, -2)] {
                let camera = CameraModel(position: eye, orientation: .lookAt(eye: eye, target: target),
                                         intrinsics: SyntheticRenderer.defaultIntrinsics(width: 64, height: 48))
                let image = try renderer.render(camera: camera)
                #expect(image.bytes[0..<(64 * 48)].allSatisfy { (16...235).contains($0) })
                #expect(image.bytes[(64 * 48)...].allSatisfy { (16...240).contains($0) })
            }
        }
    }

    @Test("the PPM snapshot has the right header and size")
    func ppm() throws {
        let image = try SyntheticRenderer(width: 32, height: 16).render(camera: F.orbitCamera(degrees: 0, width: 32, height: 16))
        let ppm = image.ppm()
        #expect(Array(ppm.prefix(13)) == Array("P6\n32 16\n255\n".utf8))
        #expect(ppm.count == 13 + 32 * 16 * 3)
    }
}
