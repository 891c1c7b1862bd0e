/// A plane `normal · p = offset` in world coordinates (normal of unit length).
public struct Plane: Sendable, Hashable, Codable {
    public var normal: Vector3
    public var offset: Float

    /// The plane through `point` with the given normal (normalised here; a zero normal
    /// makes a plane no ray meets).
    public init(normal: Vector3, through point: Vector3 = .zero) {
        self.normal = normal.normalized
        self.offset = self.normal.dot(point)
    }

    /// The ground: y = 0, facing up.
    public static let ground = Plane(normal: Vector3(0, 1, 0))

    /// Signed distance of `p` from the plane (positive on the normal's side).
    public func signedDistance(_ p: Vector3) -> Float { normal.dot(p) - offset }

    /// Distance along `ray` to the plane. Fails when the ray runs parallel to it or meets
    /// it behind the origin.
    public func intersect(_ ray: CameraRay) throws(PlacementError) -> Float {
        let denominator = normal.dot(ray.direction)
        guard abs(denominator) > 1e-6 else { throw .parallelRay }
        let t = (offset - normal.dot(ray.origin)) / denominator
        guard t > CameraModel.nearPlane, t.isFinite else { throw .behindCamera }
        return t
    }
}

/// Why a tap could not be turned into a world point.
public enum PlacementError: Error, Sendable, Hashable, CustomStringConvertible {
    case poseMissing
    case tapOutsideImage(NormalizedPoint)
    case parallelRay
    case behindCamera
    case invalidDepth(Float)
    case missingDepth
    case noPlanes

    public var description: String {
        switch self {
        case .poseMissing: "the frame has no pose (flagged missing), so a tap on it has no world position"
        case .tapOutsideImage(let p): "tap (\(p.x), \(p.y)) is outside the image: x and y must be finite and in [0, 1]"
        case .parallelRay: "the tap's ray runs parallel to every placement plane and never meets one"
        case .behindCamera: "the tap's ray meets the placement plane only behind the camera (looking away from it)"
        case .invalidDepth(let d): "depth \(d) m is not a finite positive distance"
        case .missingDepth: "publisher-depth placement needs the depth at the tap, and none was given"
        case .noPlanes: "plane placement needs at least one plane"
        }
    }
}

/// How a tap becomes a world point.
public enum PlacementMode: Sendable, Hashable {
    /// A fixed distance along the ray (metres).
    case fixedDepth(Float)
    /// The nearest hit among the planes, in front of the camera.
    case planes([Plane])
    /// Depth (along the optical axis, metres) supplied by the publisher for that pixel.
    case publisherDepth
    /// The publisher's depth where its source has depth, else the ground plane (the
    /// subscriber's default): placed here like `groundPlane`, which the publisher uses
    /// when it has no depth.
    case auto

    public static let groundPlane = PlacementMode.planes([.ground])

    /// The world point of a tap on a frame. `.publisherDepth` needs `depth`.
    public func place(_ tap: NormalizedPoint, on pose: FramePose, depth: Float? = nil) throws(PlacementError) -> Vector3 {
        guard tap.isInImage else { throw .tapOutsideImage(tap) }
        guard let camera = CameraModel(pose: pose) else { throw .poseMissing }
        let ray = camera.ray(through: tap)
        switch self {
        case .fixedDepth(let d):
            guard d.isFinite, d > 0 else { throw .invalidDepth(d) }
            return ray.point(atDistance: d)
        case .auto:
            return try PlacementMode.groundPlane.place(tap, on: pose, depth: depth)
        case .publisherDepth:
            guard let d = depth else { throw .missingDepth }
            guard d.isFinite, d > 0 else { throw .invalidDepth(d) }
            return camera.unproject(tap, depth: d)
        case .planes(let planes):
            guard !planes.isEmpty else { throw .noPlanes }
            var best: Float?
            var lastError: PlacementError = .parallelRay
            var sawBehind = false
            for plane in planes {
                do throws(PlacementError) {
                    let t = try plane.intersect(ray)
                    if best == nil || t < best! { best = t }
                } catch {
                    if error == .behindCamera { sawBehind = true }
                    lastError = error
                }
            }
            guard let t = best else { throw sawBehind ? .behindCamera : lastError }
            return ray.point(atDistance: t)
        }
    }
}
