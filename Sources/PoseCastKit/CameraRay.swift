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

    /// The ray through `point` of the frame taken with `pose`: camera looks down −Z
    /// with +Y up, image y grows downwards. Nil when the pose is flagged missing.
    public init?(pose: FramePose, through point: NormalizedPoint) {
        guard !pose.flags.contains(.missing), point.x.isFinite, point.y.isFinite else { return nil }
        let k = pose.intrinsics
        let camera = Vector3((point.x - k.cx) / k.fx, -(point.y - k.cy) / k.fy, -1)
        let n = (camera.x * camera.x + camera.y * camera.y + camera.z * camera.z).squareRoot()
        let world = pose.orientation.rotate(Vector3(camera.x / n, camera.y / n, camera.z / n))
        origin = pose.position
        direction = world
    }

    /// The point `distance` metres along the ray (the fixed-depth placement).
    public func point(atDistance distance: Float) -> Vector3 {
        Vector3(origin.x + direction.x * distance, origin.y + direction.y * distance, origin.z + direction.z * distance)
    }
}
