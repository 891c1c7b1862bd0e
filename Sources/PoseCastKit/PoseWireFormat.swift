/// Encoding of `FramePose` into one RTP header-extension element (docs/POSE_WIRE_FORMAT.md).
///
/// Layout, little-endian, 58 fixed bytes then optional application bytes:
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 1 | version (1) |
/// | 1 | 1 | flags (bit 0 late, bit 1 missing; others must be 0) |
/// | 2 | 4 | frame id (u32) |
/// | 6 | 8 | capture time, ns since Unix epoch (u64) |
/// | 14 | 12 | position x, y, z (f32, metres) |
/// | 26 | 16 | orientation x, y, z, w (f32, unit quaternion) |
/// | 42 | 16 | intrinsics fx, fy, cx, cy (f32, normalised) |
/// | 58 | 0…197 | application bytes |
public enum PoseWireFormat {
    public static let version: UInt8 = 1
    /// The RTP header extension's URI in SDP (`a=extmap:ID URI`). The C shim registers the
    /// extension under the same string (PCG_POSE_EXT_URI, which `PoseHeaderExtension.uri`
    /// is; PoseExtensionFuzzTests checks the two agree): the session logic reads answers
    /// for it without GStreamer.
    public static let headerExtensionURI = "urn:x-posecast:rtp-hdrext:pose:1"
    public static let fixedSize = 58
    /// A two-byte RTP header extension element holds at most 255 bytes: the size of
    /// `ElementStorage`, whose arity the compiler checks against the C shim's
    /// PCG_POSE_MAX_BYTES (PoseMedia/PoseLimitCheck.swift).
    public static let maxElementSize = MemoryLayout<ElementStorage>.size
    public static let maxApplicationBytes = maxElementSize - fixedSize
    /// One element's bytes as a fixed-size tuple: 255 `UInt8`s (17 rows of 15).
    public typealias ElementStorage = (
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
    )
    /// How far the quaternion norm may stray from 1 (f32 rounding is ~1e-7).
    public static let unitTolerance: Float = 1e-3

    public static func encode(_ pose: FramePose) throws(PoseWireError) -> [UInt8] {
        try validate(pose)
        var out = [UInt8]()
        out.reserveCapacity(fixedSize + pose.applicationData.count)
        out.append(version)
        out.append(pose.flags.rawValue)
        append(pose.frameID, to: &out)
        append(pose.captureTimeNanos, to: &out)
        for f in [pose.position.x, pose.position.y, pose.position.z,
                  pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w,
                  pose.intrinsics.fx, pose.intrinsics.fy, pose.intrinsics.cx, pose.intrinsics.cy] {
            append(f.bitPattern, to: &out)
        }
        out.append(contentsOf: pose.applicationData)
        return out
    }

    public static func decode(_ bytes: some Collection<UInt8>) throws(PoseWireError) -> FramePose {
        let b = Array(bytes)
        guard b.count >= fixedSize else { throw .wrongLength(b.count) }
        guard b.count <= maxElementSize else { throw .wrongLength(b.count) }
        guard b[0] == version else { throw .unsupportedVersion(b[0]) }
        let flags = PoseFlags(rawValue: b[1])
        guard flags.isSubset(of: .known) else { throw .reservedFlags(b[1]) }
        func f32(_ at: Int) -> Float { Float(bitPattern: read(UInt32.self, b, at)) }
        let pose = FramePose(
            flags: flags,
            frameID: read(UInt32.self, b, 2),
            captureTimeNanos: read(UInt64.self, b, 6),
            position: Vector3(f32(14), f32(18), f32(22)),
            orientation: Quaternion(x: f32(26), y: f32(30), z: f32(34), w: f32(38)),
            intrinsics: CameraIntrinsics(fx: f32(42), fy: f32(46), cx: f32(50), cy: f32(54)),
            applicationData: Array(b[fixedSize...]))
        try validate(pose)
        return pose
    }

    /// The rules both directions enforce, so nothing invalid is ever sent or accepted.
    static func validate(_ pose: FramePose) throws(PoseWireError) {
        guard pose.flags.isSubset(of: .known) else { throw .reservedFlags(pose.flags.rawValue) }
        guard pose.applicationData.count <= maxApplicationBytes else {
            throw .applicationDataTooLong(pose.applicationData.count)
        }
        let named: [(String, Float)] = [
            ("position.x", pose.position.x), ("position.y", pose.position.y), ("position.z", pose.position.z),
            ("orientation.x", pose.orientation.x), ("orientation.y", pose.orientation.y),
            ("orientation.z", pose.orientation.z), ("orientation.w", pose.orientation.w),
            ("intrinsics.fx", pose.intrinsics.fx), ("intrinsics.fy", pose.intrinsics.fy),
            ("intrinsics.cx", pose.intrinsics.cx), ("intrinsics.cy", pose.intrinsics.cy),
        ]
        for (name, value) in named where !value.isFinite { throw .nonFinite(field: name) }
        let norm = pose.orientation.norm
        guard abs(norm - 1) <= unitTolerance else { throw .notUnitQuaternion(norm: norm) }
        guard pose.intrinsics.fx > 0, pose.intrinsics.fy > 0 else {
            throw .invalidIntrinsics(fx: pose.intrinsics.fx, fy: pose.intrinsics.fy)
        }
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    private static func read<T: FixedWidthInteger>(_: T.Type, _ b: [UInt8], _ at: Int) -> T {
        var v: T = 0
        for i in (0..<MemoryLayout<T>.size).reversed() { v = v << 8 | T(b[at + i]) }
        return v
    }
}

/// Why a pose could not be encoded or was rejected on decoding.
public enum PoseWireError: Error, Hashable, Sendable, CustomStringConvertible {
    case wrongLength(Int)
    case unsupportedVersion(UInt8)
    case reservedFlags(UInt8)
    case nonFinite(field: String)
    case notUnitQuaternion(norm: Float)
    case invalidIntrinsics(fx: Float, fy: Float)
    case applicationDataTooLong(Int)

    /// A stable short name, used as the counter key.
    public var reason: String {
        switch self {
        case .wrongLength: "wrongLength"
        case .unsupportedVersion: "unsupportedVersion"
        case .reservedFlags: "reservedFlags"
        case .nonFinite: "nonFinite"
        case .notUnitQuaternion: "notUnitQuaternion"
        case .invalidIntrinsics: "invalidIntrinsics"
        case .applicationDataTooLong: "applicationDataTooLong"
        }
    }

    public var description: String {
        switch self {
        case .wrongLength(let n):
            "pose element is \(n) bytes; expected \(PoseWireFormat.fixedSize)…\(PoseWireFormat.maxElementSize)"
        case .unsupportedVersion(let v): "pose wire version \(v) is not supported (this reader knows \(PoseWireFormat.version))"
        case .reservedFlags(let f): "pose flags 0x\(String(f, radix: 16)) set reserved bits"
        case .nonFinite(let field): "pose field \(field) is not finite"
        case .notUnitQuaternion(let n): "orientation is not a unit quaternion (norm \(n))"
        case .invalidIntrinsics(let fx, let fy): "intrinsics focal lengths must be > 0 (fx \(fx), fy \(fy))"
        case .applicationDataTooLong(let n):
            "application data is \(n) bytes; at most \(PoseWireFormat.maxApplicationBytes) fit in one element"
        }
    }
}
