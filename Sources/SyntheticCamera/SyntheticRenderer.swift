import Imaging
import PoseCastKit

/// The synthetic AR camera: renders a `SyntheticScene` from a camera pose through a
/// simulated lens into I420 (BT.601 limited range), and keeps the depth of every pixel
/// of the last frame.
///
/// One frame is made in three passes, all on the calling thread:
/// 1. **Shading**, row by row at full resolution. A pixel's ray direction is affine in
///    its column, so the ground hit costs one division; each object is only tested
///    inside its projected screen rectangle, nearest hit wins (objects occlude each
///    other and the ground). The pass writes linear luma, 2×2-averaged chroma and the
///    inverse depth of every pixel; exposure, gain and white balance scale the colour
///    before it clips at 255 (the sensor's full well).
/// 2. **Defocus pyramids** of luma and both chroma planes (`BlurPyramid`).
/// 3. **Compositing**: each pixel's circle of confusion, `aperture·|1/focus − 1/depth|`,
///    picks a blend of two adjacent pyramid levels; sensor noise from a fixed tile at a
///    per-frame offset is added; values are clamped to the legal ranges (Y 16–235,
///    Cb/Cr 16–240) and written to the caller's planes.
///
/// Sharpness therefore falls smoothly and monotonically with defocus on both sides of
/// the true depth, which is what a software autofocus climbs.
///
/// Not thread-safe: one renderer per thread (it reuses its buffers every frame). Output
/// depends only on the scene, size, camera, lens and frame index.
public final class SyntheticRenderer {
    public let scene: SyntheticScene
    public let width: Int
    public let height: Int

    let luma: BlurPyramid
    let cb: BlurPyramid
    let cr: BlurPyramid
    /// 1/z-depth per pixel of the last frame (0 for sky).
    let inverseDepth: FloatPlane
    /// 1/z-depth of the top-left pixel of each 2×2 block (drives chroma defocus).
    let inverseDepthHalf: FloatPlane
    /// One shading row of linear RGB, and 2-row RGB sums at half width for chroma.
    let rowR, rowG, rowB, rowInv: UnsafeMutablePointer<Float>
    let sumR, sumG, sumB: UnsafeMutablePointer<Float>
    /// One row of blur levels, and one of blended values (compositing).
    let levelRow: UnsafeMutablePointer<Float>
    let accumulator: UnsafeMutablePointer<Float>
    let noise: NoiseTile
    let groundSamples: GroundSamples
    let lighting: Lighting
    var boxes: [BoxPrim]
    /// Box faces turned towards the camera, this frame.
    var boxFaces: [BoxFacePrim] = []
    var spheres: [SpherePrim]
    var discs: [DiscPrim]
    var shadows: [ContactShadowPrim]

    /// Blur levels per pyramid (0…5): level 5 stands for a 40 px radius in the pyramid's own
    /// pixels; larger circles of confusion are drawn at that.
    static let levelCount = 6

    /// Prepares a renderer for `width`×`height` frames (even, at least 16 each way).
    public init(scene: SyntheticScene = .standard, width: Int, height: Int) throws(SyntheticCameraError) {
        do throws(ImagingError) { try I420Planes.validate(width: width, height: height) } catch { throw .image(error) }
        self.scene = scene; self.width = width; self.height = height
        let cw = width / 2, ch = height / 2
        luma = BlurPyramid(width: width, height: height, levelCount: Self.levelCount)
        cb = BlurPyramid(width: cw, height: ch, levelCount: Self.levelCount)
        cr = BlurPyramid(width: cw, height: ch, levelCount: Self.levelCount)
        inverseDepth = FloatPlane(width: width, height: height)
        inverseDepthHalf = FloatPlane(width: cw, height: ch)
        func buffer(_ n: Int) -> UnsafeMutablePointer<Float> {
            let p = UnsafeMutablePointer<Float>.allocate(capacity: n + 8)
            p.initialize(repeating: 0, count: n + 8)
            return p
        }
        rowR = buffer(width); rowG = buffer(width); rowB = buffer(width); rowInv = buffer(width)
        sumR = buffer(cw); sumG = buffer(cw); sumB = buffer(cw)
        levelRow = buffer(width); accumulator = buffer(width)
        noise = NoiseTile(seed: 0x5EED_0F_5E45_0125, rowLength: width)
        groundSamples = GroundSamples(width: width)
        let lighting = Lighting(sun: scene.sunDirection.normalized)
        self.lighting = lighting
        boxes = scene.boxes.map { BoxPrim($0, lighting: lighting) }
        spheres = scene.spheres.map(SpherePrim.init)
        discs = scene.discs.map(DiscPrim.init)
        shadows = scene.boxes.map { box in
            let (c, s) = box.yawCosSin
            return ContactShadowPrim(cx: box.baseCenter.x, cz: box.baseCenter.z, cosYaw: c, sinYaw: s,
                                     hx: box.size.x / 2, hz: box.size.z / 2, round: false, reach: 0.22, strength: 0.4)
        } + scene.spheres.filter { $0.center.y - $0.radius < 0.05 }.map { s in
            ContactShadowPrim(cx: s.center.x, cz: s.center.z, cosYaw: 1, sinYaw: 0,
                              hx: s.radius * 0.35, hz: s.radius * 0.35, round: true, reach: s.radius * 0.9, strength: 0.45)
        }
    }

    deinit {
        for p in [rowR, rowG, rowB, rowInv, sumR, sumG, sumB, levelRow, accumulator] { p.deallocate() }
    }

    /// Intrinsics of the camera the demo and benchmarks use: a centred pinhole with a
    /// 60° horizontal field of view and square pixels.
    public static func defaultIntrinsics(width: Int, height: Int) -> CameraIntrinsics {
        CameraIntrinsics(horizontalFOVDegrees: 60, aspect: Float(width) / Float(height))
    }

    /// Renders the scene as seen by `camera` through `lens` into `planes`. The noise
    /// pattern depends on `frameIndex` only, so the same inputs give the same bytes.
    public func render(camera: CameraModel, lens: LensState, frameIndex: UInt64,
                       into planes: I420Planes) throws(SyntheticCameraError) {
        guard planes.width == width, planes.height == height else {
            throw .sizeMismatch(expectedWidth: width, expectedHeight: height, width: planes.width, height: planes.height)
        }
        try lens.validate()
        let camera = try Self.checked(camera)
        let geometry = FrameGeometry(camera: camera, width: width, height: height)
        prepareFrame(camera: camera)
        let gains = lens.whiteBalanceGains
        let signal = lens.exposure * lens.gain
        for y in 0..<height {
            shadeRow(y, geometry)
            finishRow(y, red: signal * gains.red, green: signal, blue: signal * gains.blue)
        }
        luma.build(); cb.build(); cr.build()
        composite(lens: lens, frameIndex: frameIndex, into: planes)
    }

    /// Renders into a new image (convenience for tests and tools; allocates).
    public func render(camera: CameraModel, lens: LensState = LensState(), frameIndex: UInt64 = 0) throws(SyntheticCameraError) -> I420Image {
        var image: I420Image
        do throws(ImagingError) { image = try I420Image(width: width, height: height) } catch { throw .image(error) }
        var failure: SyntheticCameraError?
        image.withPlanes { planes in
            do throws(SyntheticCameraError) { try render(camera: camera, lens: lens, frameIndex: frameIndex, into: planes) } catch { failure = error }
        }
        if let failure { throw failure }
        return image
    }

    /// Z-depth (metres along the optical axis) of pixel (x, y) in the last frame;
    /// `+infinity` for sky (and before the first frame).
    public func depthAt(x: Int, y: Int) -> Float {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel (\(x), \(y)) is outside the \(width)×\(height) frame")
        let inv = inverseDepth.data[y * width + x]
        return inv > 0 ? 1 / inv : .infinity
    }

    /// A copy of the last frame's depth, one value per `scale`×`scale` block (the block's
    /// centre pixel), for the publisher to keep with the frame.
    public func copyDepthMap(scale: Int = 4) throws(SyntheticCameraError) -> DepthMap {
        guard scale >= 1 else { throw .invalidScale(scale) }
        let mw = (width + scale - 1) / scale, mh = (height + scale - 1) / scale
        var values = [Float](repeating: .infinity, count: mw * mh)
        let inv = inverseDepth.data
        values.withUnsafeMutableBufferPointer { out in
            for j in 0..<mh {
                let py = min(j * scale + scale / 2, height - 1)
                for i in 0..<mw {
                    let px = min(i * scale + scale / 2, width - 1)
                    let v = inv[py * width + px]
                    out[j * mw + i] = v > 0 ? 1 / v : .infinity
                }
            }
        }
        return DepthMap(width: mw, height: mh, scale: scale, imageWidth: width, imageHeight: height, values: values)
    }

    private static func checked(_ camera: CameraModel) throws(SyntheticCameraError) -> CameraModel {
        guard camera.position.isFinite, camera.orientation.isFinite, camera.orientation.norm > 1e-6 else {
            throw .invalidCamera(reason: "position and orientation must be finite and the quaternion non-zero")
        }
        let k = camera.intrinsics
        guard k.fx.isFinite, k.fy.isFinite, k.cx.isFinite, k.cy.isFinite, k.fx > 0, k.fy > 0 else {
            throw .invalidCamera(reason: "intrinsics must be finite with fx, fy > 0")
        }
        var c = camera
        c.orientation = camera.orientation.normalized
        return c
    }

    /// Screen rectangles and camera-relative constants of every primitive for this frame.
    private func prepareFrame(camera: CameraModel) {
        let o = camera.position
        let haze = scene.hazeDistance
        func hazeAt(_ p: Vector3) -> Float {
            let z = max(-camera.toCamera(p).z, 0)
            return z / (z + haze)
        }
        boxFaces.removeAll(keepingCapacity: true)
        for i in boxes.indices {
            let box = scene.boxes[i]
            let local = boxes[i].local(o.x - boxes[i].cx, o.y - boxes[i].cy, o.z - boxes[i].cz)
            (boxes[i].ox, boxes[i].oy, boxes[i].oz) = local
            boxes[i].haze = hazeAt(box.center)
            let half = (boxes[i].hx, boxes[i].hy, boxes[i].hz)
            for axis in 0..<3 {
                for sign: Float in [-1, 1] where sign * component(local, axis) > component(half, axis) {
                    let (ua, va) = BoxFacePrim.textureAxes(axis)
                    let hu = component(half, ua), hv = component(half, va)
                    var corners: [Vector3] = []
                    for (cu, cv) in [(-hu, -hv), (hu, -hv), (hu, hv), (-hu, hv)] {
                        var p: [Float] = [0, 0, 0]
                        p[axis] = sign * component(half, axis); p[ua] = cu; p[va] = cv
                        corners.append(box.center + box.toWorld(Vector3(p[0], p[1], p[2])))
                    }
                    let rect = ScreenRect.bounding(corners, camera: camera, width: width, height: height)
                    guard !rect.isEmpty else { continue }
                    boxFaces.append(BoxFacePrim(box: i, axis: axis, uAxis: ua, vAxis: va, hu: hu, hv: hv,
                                                offset: sign * component(half, axis) - component(local, axis),
                                                shade: boxes[i].shade(axis: axis, sign: sign), rect: rect))
                }
            }
        }
        for i in spheres.indices {
            let s = scene.spheres[i]
            let oc = o - s.center
            spheres[i].ocx = oc.x; spheres[i].ocy = oc.y; spheres[i].ocz = oc.z
            spheres[i].c = oc.dot(oc) - s.radius * s.radius
            // Highlight direction: half way between the sun and the direction to the camera.
            let h = (lighting.sun + oc.normalized).normalized
            spheres[i].hx = h.x; spheres[i].hy = h.y; spheres[i].hz = h.z
            spheres[i].haze = hazeAt(s.center)
            var corners: [Vector3] = []
            for dx in [-s.radius, s.radius] { for dy in [-s.radius, s.radius] { for dz in [-s.radius, s.radius] {
                corners.append(s.center + Vector3(dx, dy, dz))
            } } }
            spheres[i].rect = spheres[i].c > 0
                ? ScreenRect.bounding(corners, camera: camera, width: width, height: height) : .empty
        }
        let horizon = RGB(scene.horizon)
        let pixelSize = 1 / (camera.intrinsics.fx * Float(width))
        for i in discs.indices {
            let d = discs[i], r = d.radius
            let centre = Vector3(d.cx, 0, d.cz)
            let h = hazeAt(centre)
            discs[i].hazed = RGB(r: d.color.r + (horizon.r - d.color.r) * h, g: d.color.g + (horizon.g - d.color.g) * h,
                                 b: d.color.b + (horizon.b - d.color.b) * h)
            // Footprint on the ground at the centre: the pixel's width there, stretched by
            // the grazing angle (geometric mean of the across- and along-view extents).
            let toDisc = centre - o
            let z = max(-camera.toCamera(centre).z, nearDepth)
            let grazing = max(abs(toDisc.y) / max(toDisc.length, 1e-6), 1e-3)
            discs[i].inverseFootprint = 1 / (z * pixelSize / grazing.squareRoot())
            discs[i].rect = ScreenRect.bounding(
                [Vector3(d.cx - r, 0, d.cz - r), Vector3(d.cx + r, 0, d.cz - r),
                 Vector3(d.cx - r, 0, d.cz + r), Vector3(d.cx + r, 0, d.cz + r)],
                camera: camera, width: width, height: height)
        }
        for i in shadows.indices {
            shadows[i].rect = ScreenRect.bounding(shadows[i].boundingPoints, camera: camera, width: width, height: height)
        }
    }
}

/// The camera's rays for one frame. The (unnormalised) direction of pixel (x, y)'s
/// centre is `d0 + x·dx + y·dy` in world coordinates, scaled so its component along the
/// optical axis is 1: the ray parameter of a hit *is* its z-depth.
struct FrameGeometry {
    var ox: Float, oy: Float, oz: Float
    var d0x: Float, d0y: Float, d0z: Float
    var dxx: Float, dxy: Float, dxz: Float
    var dyx: Float, dyy: Float, dyz: Float
    /// Width of one pixel at 1 m depth, metres.
    var pixelSize: Float

    init(camera: CameraModel, width: Int, height: Int) {
        let q = camera.orientation, k = camera.intrinsics
        let right = q.rotate(Vector3(1, 0, 0)), up = q.rotate(Vector3(0, 1, 0)), back = q.rotate(Vector3(0, 0, 1))
        let fxPixels = k.fx * Float(width), fyPixels = k.fy * Float(height)
        // Camera-frame direction of pixel (x, y): ((x + 0.5 − cx·W)/fxPixels, −(y + 0.5 − cy·H)/fyPixels, −1).
        let xn0 = (0.5 - k.cx * Float(width)) / fxPixels
        let yn0 = -(0.5 - k.cy * Float(height)) / fyPixels
        let d0 = right * xn0 + up * yn0 - back
        let dx = right * (1 / fxPixels), dy = up * (-1 / fyPixels)
        ox = camera.position.x; oy = camera.position.y; oz = camera.position.z
        d0x = d0.x; d0y = d0.y; d0z = d0.z
        dxx = dx.x; dxy = dx.y; dxz = dx.z
        dyx = dy.x; dyy = dy.y; dyz = dy.z
        pixelSize = 1 / fxPixels
    }
}
