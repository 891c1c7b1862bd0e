import PoseCastKit
import Testing

@Suite("pose wire format")
struct PoseWireFormatTests {
    static let sample = FramePose(
        flags: .late, frameID: 0xDEAD_BEEF, captureTimeNanos: 1_763_700_000_123_456_789,
        position: Vector3(1.25, -0.5, 3e-7),
        orientation: Quaternion(x: 0.5, y: -0.5, z: 0.5, w: 0.5),
        intrinsics: CameraIntrinsics(fx: 0.8660254, fy: 1.1547005, cx: 0.5, cy: 0.49),
        applicationData: [1, 2, 3])

    @Test("round trip keeps every field bit for bit")
    func roundTrip() throws {
        let bytes = try PoseWireFormat.encode(Self.sample)
        #expect(bytes.count == PoseWireFormat.fixedSize + 3)
        let decoded = try PoseWireFormat.decode(bytes)
        #expect(decoded.isBitwiseIdentical(to: Self.sample))
        #expect(decoded == Self.sample)
    }

    @Test("negative zero and subnormals survive bit for bit")
    func signedZero() throws {
        var pose = Self.sample
        pose.position = Vector3(-0.0, Float.leastNonzeroMagnitude, -Float.greatestFiniteMagnitude)
        let decoded = try PoseWireFormat.decode(PoseWireFormat.encode(pose))
        #expect(decoded.isBitwiseIdentical(to: pose))
        #expect(decoded.position.x.sign == .minus)
    }

    @Test("layout is little-endian at the documented offsets")
    func layout() throws {
        let bytes = try PoseWireFormat.encode(Self.sample)
        #expect(bytes[0] == 1)
        #expect(bytes[1] == PoseFlags.late.rawValue)
        #expect(Array(bytes[2..<6]) == [0xEF, 0xBE, 0xAD, 0xDE])
        #expect(Array(bytes[14..<18]) == withUnsafeBytes(of: Float(1.25).bitPattern.littleEndian, Array.init))
        #expect(Array(bytes[58...]) == [1, 2, 3])
    }

    @Test("application bytes: up to 197 fit (255-byte element), 198 do not")
    func applicationLimit() throws {
        var pose = Self.sample
        pose.applicationData = Array(repeating: 0xAB, count: PoseWireFormat.maxApplicationBytes)
        let bytes = try PoseWireFormat.encode(pose)
        #expect(bytes.count == 255)
        #expect(try PoseWireFormat.decode(bytes).applicationData.count == 197)
        pose.applicationData.append(0)
        #expect(throws: PoseWireError.applicationDataTooLong(198)) { try PoseWireFormat.encode(pose) }
    }

    @Test("wrong lengths are rejected", arguments: [0, 1, 57, 256, 300])
    func wrongLength(count: Int) throws {
        var bytes = try PoseWireFormat.encode(Self.sample)
        bytes = Array((bytes + Array(repeating: 0, count: 400)).prefix(count))
        #expect(throws: PoseWireError.wrongLength(count)) { try PoseWireFormat.decode(bytes) }
    }

    @Test("unknown versions are rejected", arguments: [UInt8(0), 2, 255])
    func wrongVersion(version: UInt8) throws {
        var bytes = try PoseWireFormat.encode(Self.sample)
        bytes[0] = version
        #expect(throws: PoseWireError.unsupportedVersion(version)) { try PoseWireFormat.decode(bytes) }
    }

    @Test("reserved flag bits are rejected")
    func reservedFlags() throws {
        var bytes = try PoseWireFormat.encode(Self.sample)
        bytes[1] = 0x84
        #expect(throws: PoseWireError.reservedFlags(0x84)) { try PoseWireFormat.decode(bytes) }
    }

    static let floatFields: [(offset: Int, name: String)] = [
        (14, "position.x"), (18, "position.y"), (22, "position.z"),
        (26, "orientation.x"), (30, "orientation.y"), (34, "orientation.z"), (38, "orientation.w"),
        (42, "intrinsics.fx"), (46, "intrinsics.fy"), (50, "intrinsics.cx"), (54, "intrinsics.cy"),
    ]

    @Test("NaN or infinity in any float field is rejected, naming the field",
          arguments: [Float.nan, .infinity, -.infinity, .signalingNaN])
    func nonFinite(value: Float) throws {
        for (offset, name) in Self.floatFields {
            var bytes = try PoseWireFormat.encode(Self.sample)
            withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.replaceSubrange(offset..<offset + 4, with: $0) }
            #expect(throws: PoseWireError.nonFinite(field: name)) { try PoseWireFormat.decode(bytes) }
        }
    }

    @Test("a non-unit quaternion is rejected")
    func notUnit() throws {
        var pose = Self.sample
        pose.orientation = Quaternion(x: 0, y: 0, z: 0, w: 1.01)
        #expect(throws: PoseWireError.self) { try PoseWireFormat.encode(pose) }
        var bytes = try PoseWireFormat.encode(Self.sample)
        withUnsafeBytes(of: Float(0).bitPattern.littleEndian) { bytes.replaceSubrange(38..<42, with: $0) }
        #expect(throws: PoseWireError.self) { try PoseWireFormat.decode(bytes) }
    }

    @Test("non-positive focal lengths are rejected")
    func badIntrinsics() throws {
        var pose = Self.sample
        pose.intrinsics.fy = 0
        #expect(throws: PoseWireError.invalidIntrinsics(fx: pose.intrinsics.fx, fy: 0)) { try PoseWireFormat.encode(pose) }
    }

    @Test("rejections are counted by reason")
    func counting() throws {
        let counter = PoseRejectionCounter()
        for bad in [[UInt8](), [2] + Array(repeating: 0, count: 57)] {
            do { _ = try PoseWireFormat.decode(bad) } catch { counter.record(error) }
        }
        #expect(counter.byReason == ["wrongLength": 1, "unsupportedVersion": 1])
        #expect(counter.total == 2)
    }

    @Test("every error explains itself")
    func descriptions() {
        let all: [PoseWireError] = [.wrongLength(3), .unsupportedVersion(9), .reservedFlags(0x80),
                                    .nonFinite(field: "position.x"), .notUnitQuaternion(norm: 2),
                                    .invalidIntrinsics(fx: 0, fy: 1), .applicationDataTooLong(300)]
        #expect(Set(all.map(\.reason)).count == all.count)
        for error in all { #expect(error.description.count > 20) }
    }
}

@Suite("orbit trajectory")
struct OrbitTrajectoryTests {
    @Test("the camera's −Z axis points at the target, and every pose encodes", arguments: [0.0, 1.3, 4.7, 11.9])
    func looksAtTarget(seconds: Double) throws {
        let orbit = OrbitTrajectory(intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3))
        let pose = orbit.pose(at: seconds, frameID: 1, captureTimeNanos: 2)
        let q = pose.orientation
        // Rotate (0, 0, -1) by q: third column of the rotation matrix, negated.
        let forward = Vector3(-(2 * (q.x * q.z + q.w * q.y)), -(2 * (q.y * q.z - q.w * q.x)), -(1 - 2 * (q.x * q.x + q.y * q.y)))
        let toTarget = orbit.target - pose.position
        let n = (toTarget.x * toTarget.x + toTarget.y * toTarget.y + toTarget.z * toTarget.z).squareRoot()
        let cosine = (forward.x * toTarget.x + forward.y * toTarget.y + forward.z * toTarget.z) / n
        #expect(cosine > 0.99999)
        #expect(abs(q.norm - 1) < 1e-5)
        _ = try PoseWireFormat.encode(pose)
    }
}
