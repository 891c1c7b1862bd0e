/// A point or direction in the right-handed, y-up world frame (metres).
public struct Vector3: Sendable, Hashable, Codable {
    public var x: Float, y: Float, z: Float
    public init(_ x: Float, _ y: Float, _ z: Float) { self.x = x; self.y = y; self.z = z }
    public static let zero = Vector3(0, 0, 0)
}

/// A rotation as a unit quaternion (x, y, z, w), camera-to-world.
public struct Quaternion: Sendable, Hashable, Codable {
    public var x: Float, y: Float, z: Float, w: Float
    public init(x: Float, y: Float, z: Float, w: Float) { self.x = x; self.y = y; self.z = z; self.w = w }
    public static let identity = Quaternion(x: 0, y: 0, z: 0, w: 1)
    public var norm: Float { (x * x + y * y + z * z + w * w).squareRoot() }
}

/// Pinhole intrinsics normalised to the image: `fx`, `cx` divided by the width,
/// `fy`, `cy` by the height (origin top-left), so they hold at any resolution.
public struct CameraIntrinsics: Sendable, Hashable, Codable {
    public var fx: Float, fy: Float, cx: Float, cy: Float
    public init(fx: Float, fy: Float, cx: Float, cy: Float) { self.fx = fx; self.fy = fy; self.cx = cx; self.cy = cy }

    /// Intrinsics of a centred pinhole camera with the given horizontal field of view.
    public init(horizontalFOVDegrees fov: Float, aspect: Float) {
        let fxNorm = 0.5 / tan(fov * .pi / 360)
        self.init(fx: fxNorm, fy: fxNorm * aspect, cx: 0.5, cy: 0.5)
    }
}

/// What the publisher knew about a frame's pose when it was captured.
public struct PoseFlags: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The pose came from an older tracker sample than the frame (not fresh).
    public static let late = PoseFlags(rawValue: 1 << 0)
    /// No pose was available: position and orientation are placeholders, never use them.
    public static let missing = PoseFlags(rawValue: 1 << 1)
    /// Bits a version-1 reader understands; any other bit set is rejected.
    public static let known: PoseFlags = [.late, .missing]
}

/// The camera pose of one video frame, as carried in its RTP packets.
public struct FramePose: Sendable, Hashable, Codable {
    public var flags: PoseFlags
    /// Publisher-assigned, increasing by one per captured frame (wraps at 2^32).
    public var frameID: UInt32
    /// Host wall-clock time of capture, nanoseconds since the Unix epoch.
    public var captureTimeNanos: UInt64
    public var position: Vector3
    public var orientation: Quaternion
    public var intrinsics: CameraIntrinsics
    /// Opaque application bytes (at most `PoseWireFormat.maxApplicationBytes`).
    public var applicationData: [UInt8]

    public init(flags: PoseFlags = [], frameID: UInt32, captureTimeNanos: UInt64,
                position: Vector3, orientation: Quaternion, intrinsics: CameraIntrinsics,
                applicationData: [UInt8] = []) {
        self.flags = flags; self.frameID = frameID; self.captureTimeNanos = captureTimeNanos
        self.position = position; self.orientation = orientation; self.intrinsics = intrinsics
        self.applicationData = applicationData
    }

    /// True when every field is identical bit for bit (`==` on floats treats -0 and 0 alike).
    public func isBitwiseIdentical(to other: FramePose) -> Bool {
        flags == other.flags && frameID == other.frameID && captureTimeNanos == other.captureTimeNanos
            && floatBits == other.floatBits && applicationData == other.applicationData
    }

    private var floatBits: [UInt32] {
        [position.x, position.y, position.z, orientation.x, orientation.y, orientation.z, orientation.w,
         intrinsics.fx, intrinsics.fy, intrinsics.cx, intrinsics.cy].map(\.bitPattern)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
