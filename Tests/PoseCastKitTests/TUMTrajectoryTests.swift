import Foundation
import PoseCastKit
import Testing

@Suite("TUM trajectory")
struct TUMTrajectoryTests {
    /// Two samples 2 s apart: from the origin, facing our −Z, to (2, 4, −6) turned 90° left.
    let twoSamples = """
        # timestamp tx ty tz qx qy qz qw
        10.0 0 0 0 0 0 0 1
        12.0 2 4 -6 0 0.7071067811865476 0 0.7071067811865476
        """

    @Test("a small file with comments, blank lines, tabs and CRLF parses, quaternions normalised")
    func parses() throws {
        let text = "# ground truth\r\n\r\n1305031102.175304 1.3405 0.6266 1.6575 0.6574 0.6126 -0.2949 -0.3248\r\n"
            + "  # indented comment\n1305031102.211214\t1.3303 0.6256 1.6464 0.6579 0.6161 -0.2932 -0.3189\n"
            + "1305031102.275326 1.3160 0.6254 1.6302 0 0 0 2\n\n"
        let trajectory = try TUMTrajectory(text: text, convention: .opengl)
        #expect(trajectory.samples.count == 3)
        #expect(trajectory.samples[0].timestamp == 1305031102.175304)
        #expect(trajectory.samples[1].pose.position.distance(to: Vector3(1.3303, 0.6256, 1.6464)) < 1e-6)
        #expect(trajectory.samples[2].pose.orientation == .identity)
        for sample in trajectory.samples { #expect(abs(sample.pose.orientation.norm - 1) < 1e-6) }
        #expect(abs(trajectory.duration - 0.100022) < 1e-6)
    }

    @Test("every bad line is named by number and problem", arguments: [
        ("0 0 0 0 0 0 0 1\n\n1 2 3\n", TUMTrajectoryError.wrongFieldCount(line: 3, count: 3), "line 3: expected 8 fields"),
        ("0 0 0 0 0 0 0 1 9\n", .wrongFieldCount(line: 1, count: 9), "found 9"),
        ("# c\n0 a 0 0 0 0 0 1\n", .notANumber(line: 2, field: "tx", text: "a"), "line 2: tx \"a\" is not a number"),
        ("0 0 0 0 0 0 0 1,\n", .notANumber(line: 1, field: "qw", text: "1,"), "qw"),
        ("0 nan 0 0 0 0 0 1\n", .nonFinite(line: 1, field: "tx", text: "nan"), "not finite"),
        ("0 0 0 0 0 0 0 inf\n", .nonFinite(line: 1, field: "qw", text: "inf"), "qw inf"),
        ("0 0 1e39 0 0 0 0 1\n", .nonFinite(line: 1, field: "ty", text: "1e39"), "32-bit float"),
        ("inf 0 0 0 0 0 0 1\n", .nonFinite(line: 1, field: "timestamp", text: "inf"), "timestamp"),
        ("1 0 0 0 0 0 0 1\n1 0 0 0 0 0 0 1\n", .nonIncreasingTimestamp(line: 2, timestamp: 1, previous: 1), "line 2: timestamp 1.0 does not increase"),
        ("5 0 0 0 0 0 0 1\n# c\n4 0 0 0 0 0 0 1\n", .nonIncreasingTimestamp(line: 3, timestamp: 4, previous: 5), "previous sample is at 5.0"),
        ("0 0 0 0 0 0 0 0\n", .zeroQuaternion(line: 1), "line 1: quaternion"),
        ("# only a comment\n\n", .noSamples, "no samples"),
        ("", .noSamples, "no samples"),
    ])
    func rejects(text: String, expected: TUMTrajectoryError, mention: String) {
        let error = #expect(throws: TUMTrajectoryError.self) { try TUMTrajectory(text: text) }
        #expect(error == expected)
        #expect(error?.description.contains(mention) == true, "\(String(describing: error))")
        #expect(error?.line == expected.line)
    }

    @Test("midway between samples: position linear, orientation slerped")
    func interpolation() throws {
        let trajectory = try TUMTrajectory(text: twoSamples, convention: .opengl)
        #expect(trajectory.duration == 2)
        let mid = try #require(trajectory.pose(at: 1))
        #expect(mid.position.distance(to: Vector3(1, 2, -3)) < 1e-6)
        let expected = Quaternion(axis: Vector3(0, 1, 0), angleRadians: .pi / 4)
        #expect(abs(mid.orientation.x - expected.x) + abs(mid.orientation.y - expected.y)
            + abs(mid.orientation.z - expected.z) + abs(mid.orientation.w - expected.w) < 1e-5)
        let quarter = try #require(trajectory.pose(at: 0.5))
        #expect(quarter.position.distance(to: Vector3(0.5, 1, -1.5)) < 1e-6)
        #expect(trajectory.pose(at: 0) == trajectory.samples[0].pose)
    }

    @Test("looping wraps around the duration; without it there is no pose outside the recording")
    func looping() throws {
        let looped = try TUMTrajectory(text: twoSamples, convention: .opengl)
        #expect(looped.loop)
        #expect(looped.pose(at: 2.5) == looped.pose(at: 0.5))
        #expect(looped.pose(at: 41) == looped.pose(at: 1))
        #expect(looped.pose(at: -0.5) == looped.pose(at: 1.5))
        let once = try TUMTrajectory(text: twoSamples, convention: .opengl, loop: false)
        #expect(once.pose(at: 2.5) == nil && once.pose(at: -0.1) == nil && once.pose(at: .nan) == nil)
        #expect(once.pose(at: 2) == once.samples[1].pose && once.pose(at: 1.5) == looped.pose(at: 1.5))
    }

    @Test("playback rate scales time")
    func playbackRate() throws {
        let normal = try TUMTrajectory(text: twoSamples), fast = try TUMTrajectory(text: twoSamples, playbackRate: 2)
        for t in stride(from: 0.0, to: 1, by: 0.1) { #expect(fast.pose(at: t) == normal.pose(at: 2 * t)) }
    }

    @Test("one sample is a still camera when looping, a single instant otherwise")
    func singleSample() throws {
        let looped = try TUMTrajectory(text: "7 1 2 3 0 0 0 1\n", convention: .opengl)
        #expect(looped.duration == 0)
        #expect(looped.pose(at: 0)?.position == Vector3(1, 2, 3) && looped.pose(at: 100)?.position == Vector3(1, 2, 3))
        let once = try TUMTrajectory(text: "7 1 2 3 0 0 0 1\n", convention: .opengl, loop: false)
        #expect(once.pose(at: 0) != nil && once.pose(at: 0.01) == nil)
    }

    @Test("OpenCV axes: an identity TUM pose looks down world +Z with image-up towards world −Y")
    func opencvConvention() throws {
        // An OpenCV camera with identity rotation has its optical axis (+Z) along world +Z and
        // its image-down axis (+Y) along world +Y. Ours looks down its −Z with +Y up, so the
        // converted pose must send our (0, 0, −1) to world +Z and our (0, 1, 0) to world −Y.
        let opencv = try TUMTrajectory(text: "0 0 0 0 0 0 0 1\n")
        let q = try #require(opencv.pose(at: 0)).orientation
        #expect(q.rotate(Vector3(0, 0, -1)).distance(to: Vector3(0, 0, 1)) < 1e-6)
        #expect(q.rotate(Vector3(0, 1, 0)).distance(to: Vector3(0, -1, 0)) < 1e-6)
        #expect(q.rotate(Vector3(1, 0, 0)).distance(to: Vector3(1, 0, 0)) < 1e-6)
        let opengl = try TUMTrajectory(text: "0 0 0 0 0 0 0 1\n", convention: .opengl)
        #expect(opengl.pose(at: 0)?.orientation == .identity)
    }

    @Test("OpenCV axes: a camera turned to face world −X still looks along world −X")
    func opencvTurned() throws {
        // OpenCV camera turned −90° about world Y: its optical axis (+Z) points along world −X
        // and its image-down axis (+Y) stays world +Y. Converted, our −Z must point along
        // world −X and our image-up axis (+Y) along world −Y.
        let q = Quaternion(axis: Vector3(0, 1, 0), angleRadians: -.pi / 2)
        let line = "0 0 0 0 \(q.x) \(q.y) \(q.z) \(q.w)\n"
        let converted = try #require(try TUMTrajectory(text: line).pose(at: 0)).orientation
        #expect(converted.rotate(Vector3(0, 0, -1)).distance(to: Vector3(-1, 0, 0)) < 1e-5)
        #expect(converted.rotate(Vector3(0, 1, 0)).distance(to: Vector3(0, -1, 0)) < 1e-5)
    }

    @Test("files: read and parsed, with the path in every error")
    func files() throws {
        let directory = FileManager.default.temporaryDirectory
        let good = directory.appendingPathComponent("tum-good-\(UInt32.random(in: 0...UInt32.max)).txt").path
        let bad = directory.appendingPathComponent("tum-bad-\(UInt32.random(in: 0...UInt32.max)).txt").path
        try twoSamples.write(toFile: good, atomically: true, encoding: .utf8)
        try "0 0 0 0 0 0 0 1\nx\n".write(toFile: bad, atomically: true, encoding: .utf8)
        defer { for path in [good, bad] { try? FileManager.default.removeItem(atPath: path) } }
        #expect(try TUMTrajectory(contentsOfFile: good).samples.count == 2)
        let parseError = #expect(throws: TUMTrajectoryError.self) { try TUMTrajectory(contentsOfFile: bad) }
        #expect(parseError == .inFile(path: bad, .wrongFieldCount(line: 2, count: 1)))
        #expect(parseError?.line == 2 && parseError?.description.hasPrefix("\(bad): line 2") == true)
        let missing = #expect(throws: TUMTrajectoryError.self) { try TUMTrajectory(contentsOfFile: good + ".nope") }
        guard case .unreadable(let path, _)? = missing else {
            Issue.record("expected unreadable, got \(String(describing: missing))")
            return
        }
        #expect(path == good + ".nope" && missing?.line == nil)
    }
}
