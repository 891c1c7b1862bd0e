/// A point on the image, normalised to [0, 1] with the origin at the top-left.
public struct NormalizedPoint: Sendable, Hashable, Codable {
    public var x: Float, y: Float
    public init(x: Float, y: Float) { self.x = x; self.y = y }
    /// Finite and inside the image (edges included).
    public var isInImage: Bool { x.isFinite && y.isFinite && (0...1).contains(x) && (0...1).contains(y) }
}

extension Quaternion {
    /// Rotates `v` by this (unit) quaternion.
    public func rotate(_ v: Vector3) -> Vector3 {
        // t = 2 q×v; v' = v + w t + q×t
        let tx = 2 * (y * v.z - z * v.y), ty = 2 * (z * v.x - x * v.z), tz = 2 * (x * v.y - y * v.x)
        return Vector3(v.x + w * tx + (y * tz - z * ty),
                       v.y + w * ty + (z * tx - x * tz),
                       v.z + w * tz + (x * ty - y * tx))
    }
}

/// A world-space ray from the camera centre through an image point.
public struct CameraRay: Sendable, Hashable {
    public var origin: Vector3
    /// Unit direction in world coordinates.
    public var direction: Vector3

    public init(origin: Vector3, direction: Vector3) { self.origin = origin; self.direction = direction }

    /// The ray through `point` of the frame taken with `pose`. Nil when the pose is
    /// flagged missing or the point is not finite.
    public init?(pose: FramePose, through point: NormalizedPoint) {
        guard point.x.isFinite, point.y.isFinite, let camera = CameraModel(pose: pose) else { return nil }
        self = camera.ray(through: point)
    }

    /// The point `distance` metres along the ray (the fixed-depth placement).
    public func point(atDistance distance: Float) -> Vector3 { origin + direction * distance }
}
