import Imaging
import PoseCastKit

/// The tags of a map as a pinhole camera sees them: grey pictures of the tags alone on a
/// plain background, or the tags painted into a rendered frame where nothing nearer hides
/// them. Ground truth for the tracker's tests and benchmarks. Each pixel is the mean of
/// `samples` × `samples` rays through it, so the tags' edges are antialiased as a lens
/// blurs them.
public struct TagRenderer: Sendable {
    public var map: TagMap
    public var background: UInt8 = 150
    public var samples: Int = 3
    /// Printed white and black, as a camera sees paper (not the sensor's full range).
    public var white: Float = 215, black: Float = 35

    private let tags: [(TagMap.Tag, TagPattern)]

    public init(map: TagMap) {
        self.map = map
        tags = map.tags.values.sorted { $0.id < $1.id }.compactMap { tag in TagPattern(id: tag.id).map { (tag, $0) } }
    }

    /// The picture (`width` × `height` bytes, rows `width` apart) `camera` takes, through
    /// a lens with `distortion` when given: a real lens bends the pinhole's rays, so each
    /// sample's pixel is undistorted to find the ray it sees.
    public func render(camera: CameraModel, width: Int, height: Int, distortion: LensDistortion? = nil) -> [UInt8] {
        var out = [UInt8](repeating: background, count: width * height)
        let n = max(samples, 1)
        let pixels = PixelIntrinsics(camera.intrinsics, width: width, height: height)
        for y in 0..<height {
            for x in 0..<width {
                var sum: Float = 0
                for (sx, sy) in offsets(n) {
                    var point = NormalizedPoint(x: (Float(x) + sx) / Float(width), y: (Float(y) + sy) / Float(height))
                    if let distortion, !distortion.isNone {
                        let p = distortion.undistort(pixel: SIMD2(Double(x) + Double(sx), Double(y) + Double(sy)), intrinsics: pixels)
                        point = NormalizedPoint(x: Float(p.x / Double(width)), y: Float(p.y / Double(height)))
                    }
                    let ray = camera.ray(through: point)
                    sum += nearestHit(ray, among: tags)?.value ?? Float(background)
                }
                out[y * width + x] = UInt8(max(0, min(255, (sum / Float(n * n)).rounded())))
            }
        }
        return out
    }

    /// Paints the tags into a rendered frame: where a tag's sample is nearer than what
    /// the frame shows there (`sceneDepth(x, y)`, metres along the optical axis; a little
    /// slack for a tag lying on the surface it is drawn on), its value replaces the
    /// frame's luma, and its chroma goes grey. Returns the pixels touched.
    ///
    /// Fast enough for every frame of a live camera (the publisher's synthetic camera):
    /// each tag's plane is put in the camera's frame once, and a sample's ray meets it in
    /// a few multiplications (no world-space ray per sample).
    @discardableResult
    public func paint(into planes: I420Planes, camera: CameraModel, sceneDepth: (Int, Int) -> Float) -> Int {
        let (width, height) = (planes.width, planes.height)
        let n = max(samples, 1)
        let k = camera.intrinsics
        let (fx, fy, cx, cy) = (k.fx * Float(width), k.fy * Float(height), k.cx * Float(width), k.cy * Float(height))
        let subpixels = offsets(n)
        var painted = 0
        for (tag, pattern) in tags {
            guard let box = bounds(of: tag, pattern: pattern, camera: camera, width: width, height: height) else { continue }
            // The tag's centre, face normal and axes in the camera's frame (looking down −Z, y up).
            let centre = camera.toCamera(tag.position)
            let normal = camera.orientation.inverseRotate(tag.orientation.rotate(Vector3(0, 0, 1)))
            let axisX = camera.orientation.inverseRotate(tag.orientation.rotate(Vector3(1, 0, 0)))
            let axisY = camera.orientation.inverseRotate(tag.orientation.rotate(Vector3(0, 1, 0)))
            let reach = normal.dot(centre)
            for y in box.y0..<box.y1 {
                for x in box.x0..<box.x1 {
                    var covered = 0
                    var sum: Float = 0
                    let limit = sceneDepth(x, y) * 1.02 + 0.005
                    for (sx, sy) in subpixels {
                        // The sample's ray, scaled so its depth along the axis is 1.
                        let ray = Vector3((Float(x) + sx - cx) / fx, -(Float(y) + sy - cy) / fy, -1)
                        let facing = normal.dot(ray)
                        guard abs(facing) > 1e-6 else { continue }
                        let depth = reach / facing
                        guard depth > 0, depth <= limit else { continue }
                        let offset = ray * depth - centre
                        guard let value = pattern.value(atX: offset.dot(axisX), y: offset.dot(axisY), size: tag.size) else { continue }
                        covered += 1; sum += value == 0 ? black : white
                    }
                    guard covered > 0 else { continue }
                    painted += 1
                    let share = Float(covered) / Float(n * n)
                    let old = Float(planes.y[y * planes.yStride + x])
                    planes.y[y * planes.yStride + x] = UInt8(max(0, min(255, (sum / Float(n * n) + old * (1 - share)).rounded())))
                    if x % 2 == 0, y % 2 == 0 {
                        let c = (y / 2) * planes.uStride + x / 2, d = (y / 2) * planes.vStride + x / 2
                        planes.u[c] = UInt8((Float(planes.u[c]) * (1 - share) + 128 * share).rounded())
                        planes.v[d] = UInt8((Float(planes.v[d]) * (1 - share) + 128 * share).rounded())
                    }
                }
            }
        }
        return painted
    }

    /// The ids of the tags `camera` sees whole: the printed face towards the camera, the
    /// black square at least `minSidePx` pixels across each way, and the whole printed
    /// square (its white ring too: the detector needs the edge all round) in the picture,
    /// in front and, by `sceneDepth` when given, hidden nowhere (a 9 × 9 grid of points
    /// over it is checked).
    public func tagsInView(camera: CameraModel, width: Int, height: Int, minSidePx: Float = 20,
                           sceneDepth: ((Int, Int) -> Float)? = nil) -> [Int] {
        tags.compactMap { tag, pattern in
            let normal = tag.orientation.rotate(Vector3(0, 0, 1))
            guard (camera.position - tag.position).dot(normal) > 0 else { return nil }
            let pixels = Self.corners(of: tag, side: tag.size).compactMap { camera.project($0) }.filter(\.isInImage)
                .map { SIMD2<Float>($0.point.x * Float(width), $0.point.y * Float(height)) }
            guard pixels.count == 4 else { return nil }
            let across = [(pixels[0] - pixels[1]), (pixels[1] - pixels[2]), (pixels[2] - pixels[3]), (pixels[3] - pixels[0])]
                .map { ($0 * $0).sum().squareRoot() }
            guard across.min()! >= minSidePx else { return nil }
            let half = tag.size * Float(pattern.side) / Float(pattern.border) / 2
            for i in 0...8 {
                for j in 0...8 {
                    let local = Vector3(half * (Float(i) / 4 - 1), half * (Float(j) / 4 - 1), 0)
                    guard let seen = camera.project(tag.world(local)), seen.isInImage else { return nil }
                    guard let sceneDepth else { continue }
                    let x = min(Int(seen.point.x * Float(width)), width - 1), y = min(Int(seen.point.y * Float(height)), height - 1)
                    guard seen.depth <= sceneDepth(x, y) * 1.02 + 0.005 else { return nil }
                }
            }
            return tag.id
        }
    }

    /// The world corners of a square of `side` metres centred on a tag, in its plane.
    private static func corners(of tag: TagMap.Tag, side: Float) -> [Vector3] {
        let h = side / 2
        return [Vector3(-h, -h, 0), Vector3(h, -h, 0), Vector3(h, h, 0), Vector3(-h, h, 0)].map { tag.world($0) }
    }

    /// Sample offsets inside a pixel, `n` × `n`.
    private func offsets(_ n: Int) -> [(Float, Float)] {
        (0..<n).flatMap { sy in (0..<n).map { sx in ((Float(sx) + 0.5) / Float(n), (Float(sy) + 0.5) / Float(n)) } }
    }

    /// The pixels a tag's printed square (white ring included) may cover; nil when it is
    /// behind the camera or outside the picture.
    private func bounds(of tag: TagMap.Tag, pattern: TagPattern, camera: CameraModel, width: Int, height: Int)
        -> (x0: Int, y0: Int, x1: Int, y1: Int)? {
        let projected = Self.corners(of: tag, side: tag.size * Float(pattern.side) / Float(pattern.border))
            .compactMap { camera.project($0) }
        guard projected.count == 4 else { return nil }
        let xs = projected.map { $0.point.x * Float(width) }, ys = projected.map { $0.point.y * Float(height) }
        let x0 = max(Int(xs.min()!.rounded(.down)) - 1, 0), x1 = min(Int(xs.max()!.rounded(.up)) + 1, width)
        let y0 = max(Int(ys.min()!.rounded(.down)) - 1, 0), y1 = min(Int(ys.max()!.rounded(.up)) + 1, height)
        return x0 < x1 && y0 < y1 ? (x0, y0, x1, y1) : nil
    }

    /// What a ray sees of the tags: the nearest one's printed value and how far along
    /// the ray it is; nil when it meets none.
    private func nearestHit(_ ray: CameraRay, among tags: [(TagMap.Tag, TagPattern)]) -> (value: Float, distance: Float)? {
        var best: (value: Float, distance: Float)?
        for (tag, pattern) in tags {
            let normal = tag.orientation.rotate(Vector3(0, 0, 1))
            let facing = ray.direction.dot(normal)
            guard abs(facing) > 1e-6 else { continue }
            let distance = (tag.position - ray.origin).dot(normal) / facing
            guard distance > 0, distance < (best?.distance ?? .infinity) else { continue }
            let local = tag.orientation.inverseRotate(ray.origin + ray.direction * distance - tag.position)
            guard let v = pattern.value(atX: local.x, y: local.y, size: tag.size) else { continue }
            best = (v == 0 ? black : white, distance)
        }
        return best
    }
}
