import PoseCastKit

/// Grey pictures of the tags of a map as a pinhole camera sees them, on a plain
/// background: ground truth for the tracker's tests and benchmarks. Each pixel is the
/// mean of `samples` × `samples` rays through it, so the tags' edges are antialiased
/// as a real lens would blur them.
public struct TagRenderer: Sendable {
    public var map: TagMap
    public var background: UInt8 = 150
    public var samples: Int = 3
    /// Printed white and black, as a camera sees paper (not the sensor's full range).
    public var white: Float = 215, black: Float = 35

    private let patterns: [Int: TagPattern]

    public init(map: TagMap) {
        self.map = map
        var patterns: [Int: TagPattern] = [:]
        for id in map.tags.keys { patterns[id] = TagPattern(id: id) }
        self.patterns = patterns
    }

    /// The picture (`width` × `height` bytes, rows `width` apart) `camera` takes.
    public func render(camera: CameraModel, width: Int, height: Int) -> [UInt8] {
        var out = [UInt8](repeating: background, count: width * height)
        let tags = map.tags.values.compactMap { tag in patterns[tag.id].map { (tag, $0) } }
        let n = max(samples, 1)
        let weight = 1 / Float(n * n)
        for y in 0..<height {
            for x in 0..<width {
                var sum: Float = 0
                for sy in 0..<n {
                    for sx in 0..<n {
                        let point = NormalizedPoint(x: (Float(x) + (Float(sx) + 0.5) / Float(n)) / Float(width),
                                                    y: (Float(y) + (Float(sy) + 0.5) / Float(n)) / Float(height))
                        sum += value(camera.ray(through: point), tags)
                    }
                }
                out[y * width + x] = UInt8(max(0, min(255, (sum * weight).rounded())))
            }
        }
        return out
    }

    /// What a ray sees: the nearest tag it meets in front of the camera, else the background.
    private func value(_ ray: CameraRay, _ tags: [(TagMap.Tag, TagPattern)]) -> Float {
        var nearest = Float.infinity
        var seen = Float(background)
        for (tag, pattern) in tags {
            let normal = tag.orientation.rotate(Vector3(0, 0, 1))
            let facing = ray.direction.dot(normal)
            guard abs(facing) > 1e-6 else { continue }
            let distance = (tag.position - ray.origin).dot(normal) / facing
            guard distance > 0, distance < nearest else { continue }
            let local = tag.orientation.inverseRotate(ray.origin + ray.direction * distance - tag.position)
            guard let v = pattern.value(atX: local.x, y: local.y, size: tag.size) else { continue }
            nearest = distance
            seen = v == 0 ? black : white
        }
        return seen
    }
}
