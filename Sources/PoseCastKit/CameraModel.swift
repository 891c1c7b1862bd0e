/// Where a world point lands in a frame.
public struct Projection: Sendable, Hashable {
    /// Normalised image point (may lie outside [0, 1] when the point is off-screen).
    public var point: NormalizedPoint
    /// Distance in front of the camera along its optical axis (metres, > 0).
    public var depth: Float
    /// True when `point` lies inside the image.
    public var isInImage: Bool { point.isInImage }
}

/// A pinhole camera at a pose: the one camera model of the project (publisher overlay,
/// subscriber taps, synthetic camera, benchmarks). Conventions as in docs/POSE_WIRE_FORMAT.md:
/// right-handed world, y up; camera looks down −Z with +Y up; image points normalised
/// to [0, 1] from the top-left; intrinsics normalised to the image size.
public struct CameraModel: Sendable, Hashable {
    public var position: Vector3
    /// Camera-to-world rotation.
    public var orientation: Quaternion
    public var intrinsics: CameraIntrinsics
    /// Points closer than this in front of the camera count as behind it.
    public static let nearPlane: Float = 1e-3

    public init(position: Vector3, orientation: Quaternion, intrinsics: CameraIntrinsics) {
        self.position = position; self.orientation = orientation; self.intrinsics = intrinsics
    }

    /// The camera of a frame; nil when the frame's pose is flagged missing.
    public init?(pose: FramePose) {
        guard !pose.flags.contains(.missing) else { return nil }
        self.init(position: pose.position, orientation: pose.orientation, intrinsics: pose.intrinsics)
    }

    /// World → camera coordinates (camera looks down −Z).
    public func toCamera(_ world: Vector3) -> Vector3 { orientation.inverseRotate(world - position) }
    /// Camera → world coordinates.
    public func toWorld(_ camera: Vector3) -> Vector3 { orientation.rotate(camera) + position }

    /// The image point of a world point; nil when it is behind (or on) the camera plane.
    public func project(_ world: Vector3) -> Projection? {
        let c = toCamera(world)
        let depth = -c.z
        guard depth > Self.nearPlane, depth.isFinite else { return nil }
        let k = intrinsics
        return Projection(point: NormalizedPoint(x: k.cx + k.fx * c.x / depth, y: k.cy - k.fy * c.y / depth),
                          depth: depth)
    }

    /// The world point seen at `point` whose depth along the optical axis is `depth`.
    public func unproject(_ point: NormalizedPoint, depth: Float) -> Vector3 {
        let k = intrinsics
        return toWorld(Vector3((point.x - k.cx) / k.fx * depth, -(point.y - k.cy) / k.fy * depth, -depth))
    }

    /// The world ray from the camera centre through `point`.
    public func ray(through point: NormalizedPoint) -> CameraRay {
        let k = intrinsics
        let dir = Vector3((point.x - k.cx) / k.fx, -(point.y - k.cy) / k.fy, -1).normalized
        return CameraRay(origin: position, direction: orientation.rotate(dir))
    }

    /// Pixel coordinates (x right, y down, pixel centres at +0.5) of a normalised point.
    public static func pixel(_ p: NormalizedPoint, width: Int, height: Int) -> (x: Float, y: Float) {
        (p.x * Float(width), p.y * Float(height))
    }
}
