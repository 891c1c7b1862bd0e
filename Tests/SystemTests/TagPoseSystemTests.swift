import Foundation
import PoseCastKit
import TagTracking
import Testing
import TestSupport

/// `--pose apriltag` end to end, the path a plain webcam takes: a picture of tags drawn
/// from a known camera pose (`TagRenderer`) is the publisher's camera (`--source image:`);
/// the publisher finds the tags in each frame and sends the pose they give; a headless
/// expert's `pose` command reads the pose of the frame on its screen.
@Suite("system: the camera's pose from AprilTags (--pose apriltag)", .serialized,
       .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/convert"),
                "needs ImageMagick's convert to write the pictures (scripts/setup installs it)"), .tags(.system))
struct TagPoseSystemTests {
    static let width = 640, height = 480

    /// A grey picture written as PNG (ImageMagick from a PGM).
    static func writePNG(_ grey: [UInt8], to path: String) async throws {
        let pgm = path + ".pgm"
        try (Data("P5\n\(width) \(height)\n255\n".utf8) + Data(grey)).write(to: URL(fileURLWithPath: pgm))
        let run = try await ManagedProcess.run("/usr/bin/convert", [pgm, path], timeout: 30)
        #expect(run.status == 0, "convert: \(run.stderr)")
    }

    /// A signaling server, a publisher with `publisherArguments` and a headless expert,
    /// running while `body` does, once the expert has decoded `frames` frames.
    static func withPair<T>(_ publisherArguments: [String], frames: Int, expertArguments: [String] = [],
                            _ body: (_ publisher: ManagedProcess, _ expert: ManagedProcess) async throws -> T) async throws -> T {
        let signaling = try ManagedProcess("posecast-signaling", ["--port", "0"], name: "signaling")
        defer { signaling.signal(SIGTERM) }
        let (listening, _) = try await signaling.waitForLine("listening line", timeout: 20) { $0.hasPrefix("listening ") }
        let url = String(listening.dropFirst("listening ".count))
        let publisher = try ManagedProcess("posecast-publisher", publisherArguments + [
            "--signaling", url, "--json", "--microphone", "none", "--speaker", "none"], name: "publisher (tags)")
        defer { publisher.signal(SIGTERM) }
        try await publisher.waitForEvent("publisher registered", timeout: 20) { $0.is(.signalingConnected) }
        let expert = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url,
                                                                "--microphone", "none", "--speaker", "none"] + expertArguments, name: "expert")
        defer { expert.signal(SIGTERM) }
        try await expert.waitForEvent("\(frames) decoded frames", timeout: 40) { $0.is(.status) && $0.int("frames") >= frames }
        return try await body(publisher, expert)
    }

    /// The pose of the frame on the expert's screen, once it has decoded 30 frames.
    static func poseOnScreen(picture: String, map: String, dir: String) async throws
        -> (pose: [String: Any], publisherStatus: [String: Any]) {
        try await withPair(["--source", "image:\(picture)", "--pose", "apriltag:\(map)", "--hfov", "60"], frames: 30) { publisher, expert in
            let mark = expert.output.count
            expert.send("pose")
            let (pose, _) = try await expert.waitForEvent("the pose of the frame on screen", timeout: 10, after: mark) { $0.is(.pose) }
            let (status, _) = try await publisher.waitForEvent("the publisher's status with tag counts", timeout: 10,
                                                               after: publisher.output.count) { $0.is(.status) && $0["tag_frames"] != nil }
            return (pose, status)
        }
    }

    static func numbers(_ value: Any?) -> [Float] { ((value as? [Any]) ?? []).compactMap { ($0 as? NSNumber)?.floatValue } }

    /// How far the expert's `pose` event puts the camera from `truth`: its position, the
    /// distance in metres and the angle in degrees.
    static func offset(of pose: [String: Any], from truth: CameraModel) throws -> (position: Vector3, metres: Float, degrees: Float) {
        let p = numbers(pose["position"]), q = numbers(pose["orientation"])
        try #require(p.count == 3 && q.count == 4, "\(pose)")
        let position = Vector3(p[0], p[1], p[2])
        let dot = abs(q[0] * truth.orientation.x + q[1] * truth.orientation.y + q[2] * truth.orientation.z + q[3] * truth.orientation.w)
        return (position, position.distance(to: truth.position), 2 * acos(min(1, dot)) * 180 / .pi)
    }

    /// A fresh directory under the system's temporary one (the caller removes it).
    static func temporaryDirectory(_ prefix: String) throws -> String {
        let dir = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString.prefix(8))/"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test("a picture of two tags as the camera: the expert's frames carry the pose the picture was drawn from (within 1 cm and 1°); a picture with no tag: flagged missing, never a made-up pose")
    func tagsInPicture() async throws {
        let dir = try Self.temporaryDirectory("posecast-tags")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let mapJSON = #"{"tags": [{"id": 0, "size": 0.16, "position": [0, 0, 0]}, {"id": 7, "size": 0.12, "position": [0.3, 0, -0.15]}]}"#
        try Data(mapJSON.utf8).write(to: URL(fileURLWithPath: dir + "map.json"))
        let map = try TagMap.decode(Data(mapJSON.utf8))
        let intrinsics = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: Float(Self.width) / Float(Self.height))
        let eye = Vector3(0.08, 0.6, 0.45)
        let truth = CameraModel(position: eye, orientation: .lookAt(eye: eye, target: Vector3(0.1, 0, -0.05)), intrinsics: intrinsics)
        try await Self.writePNG(TagRenderer(map: map).render(camera: truth, width: Self.width, height: Self.height), to: dir + "tags.png")
        try await Self.writePNG([UInt8](repeating: 150, count: Self.width * Self.height), to: dir + "blank.png")

        let (pose, status) = try await Self.poseOnScreen(picture: dir + "tags.png", map: dir + "map.json", dir: dir)
        let (position, off, degrees) = try Self.offset(of: pose, from: truth)
        print("apriltag: the expert's frame \(pose["frameId"] ?? "?") says the camera is \(String(format: "%.1f", off * 1000)) mm "
              + "and \(String(format: "%.2f", degrees))° from where the picture was drawn; the publisher: tags \(status["tags_seen"] ?? "?"), "
              + "\(status["tag_frames_with_pose"] ?? "?") of \(status["tag_frames"] ?? "?") frames with a pose, "
              + "\(status["tag_ms"] ?? "?") ms a frame, corners \(status["tag_error_px"] ?? "?") px")
        #expect(pose.int("flags") == 0, "a found pose is flagged neither late nor missing: \(pose)")
        #expect(off < 0.01 && degrees < 1, "position \(position) vs \(truth.position), \(degrees)°")
        #expect(Set(Self.numbers(status["tags_seen"]).map(Int.init)) == [0, 7])
        #expect(status.int("tag_frames_with_pose") == status.int("tag_frames") && status.int("tag_frames") >= 30)

        let (blank, blankStatus) = try await Self.poseOnScreen(picture: dir + "blank.png", map: dir + "map.json", dir: dir)
        print("apriltag, no tag in view: the expert's pose \(blank), the publisher's \(blankStatus["tag_frames_with_pose"] ?? "?") frames with a pose")
        #expect(PoseFlags(rawValue: UInt8(blank.int("flags"))).contains(.missing), "a frame without tags is flagged missing: \(blank)")
        #expect(blankStatus.int("tag_frames_with_pose") == 0 && blankStatus.int("tag_frames") >= 30)
    }

    /// A PNG read back as grey (ImageMagick to a PGM).
    static func readGrey(_ png: String) async throws -> (grey: [UInt8], width: Int, height: Int) {
        let pgm = png + ".pgm"
        let run = try await ManagedProcess.run("/usr/bin/convert", [png, "-colorspace", "Gray", "-depth", "8", pgm], timeout: 30)
        try #require(run.status == 0, "convert: \(run.stderr)")
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: pgm)))
        // "P5", width, height, maxval, each followed by one whitespace byte.
        var fields: [Int] = [], i = 2, number = 0, inNumber = false
        while fields.count < 3, i < data.count {
            let c = data[i]; i += 1
            if c >= 48 && c <= 57 { number = number * 10 + Int(c - 48); inNumber = true } else if inNumber { fields.append(number); number = 0; inNumber = false }
        }
        try #require(fields.count == 3 && data.count - i == fields[0] * fields[1], "not a PGM of 8-bit grey: \(fields)")
        return (Array(data[i...]), fields[0], fields[1])
    }

    @Test("a webcam's barrel lens, calibrated (--intrinsics FILE with its distortion): the picture the expert sees is undistorted, its tags' corners within 1.5 px of where a pinhole puts them (the lens's own picture: over 4 px), and the pose within 1 cm and 1°")
    func calibratedLens() async throws {
        let dir = try Self.temporaryDirectory("posecast-lens")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Two tags towards the picture's sides, where an ordinary webcam's lens bends most.
        let mapJSON = #"{"tags": [{"id": 0, "size": 0.16, "position": [-0.3, 0, 0]}, {"id": 7, "size": 0.16, "position": [0.3, 0, 0]}]}"#
        try Data(mapJSON.utf8).write(to: URL(fileURLWithPath: dir + "map.json"))
        let map = try TagMap.decode(Data(mapJSON.utf8))
        let intrinsics = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: Float(Self.width) / Float(Self.height))
        let lens = LensDistortion(k1: -0.12, k2: 0.03)
        try CalibrationFile(width: Self.width, height: Self.height, intrinsics: PixelIntrinsics(intrinsics, width: Self.width, height: Self.height),
                            distortion: lens).write(to: dir + "lens.json")
        let eye = Vector3(0, 0.75, 0.35)
        let truth = CameraModel(position: eye, orientation: .lookAt(eye: eye, target: .zero), intrinsics: intrinsics)
        let renderer = TagRenderer(map: map)
        let lensPicture = renderer.render(camera: truth, width: Self.width, height: Self.height, distortion: lens)
        try await Self.writePNG(lensPicture, to: dir + "lens.png")
        let detector = try TagDetector(decimate: 2)
        func corners(_ grey: [UInt8]) throws -> [Int: [SIMD2<Double>]] {
            let found = try grey.withUnsafeBufferPointer {
                try detector.detect(grey: $0.baseAddress!, width: Self.width, height: Self.height, stride: Self.width, intrinsics: intrinsics)
            }
            return Dictionary(found.map { ($0.id, $0.corners) }) { a, _ in a }
        }
        let pinhole = try corners(renderer.render(camera: truth, width: Self.width, height: Self.height))
        func worst(_ seen: [Int: [SIMD2<Double>]]) -> Double {
            seen.flatMap { id, c in zip(c, pinhole[id] ?? []).map { a, b in ((a - b) * (a - b)).sum().squareRoot() } }.max() ?? .infinity
        }
        let lensOffset = worst(try corners(lensPicture))
        try #require(Set(pinhole.keys) == [0, 7] && lensOffset > 4, "the lens must move the corners for this test to mean anything: \(lensOffset) px")

        try await Self.withPair(["--source", "image:\(dir)lens.png", "--pose", "apriltag:\(dir)map.json", "--intrinsics", dir + "lens.json"],
                                frames: 30, expertArguments: ["--snapshots"]) { publisher, expert in
            let mark = expert.output.count
            expert.send("pose")
            let (pose, _) = try await expert.waitForEvent("the pose of the frame on screen", timeout: 10, after: mark) { $0.is(.pose) }
            expert.send("snapshot \(dir)seen.png")
            for _ in 0..<100 where !FileManager.default.fileExists(atPath: dir + "seen.png") { try await Task.sleep(for: .milliseconds(100)) }
            try await Task.sleep(for: .milliseconds(300))
            let seen = try await Self.readGrey(dir + "seen.png")
            try #require(seen.width == Self.width && seen.height == Self.height)
            let sentOffset = worst(try corners(seen.grey))
            let (_, off, degrees) = try Self.offset(of: pose, from: truth)
            print("calibrated lens: the tags' corners in the picture the expert sees are \(String(format: "%.2f", sentOffset)) px from a pinhole's "
                  + "(\(String(format: "%.2f", lensOffset)) px in the lens's own picture); the pose \(String(format: "%.1f", off * 1000)) mm and "
                  + "\(String(format: "%.2f", degrees))° off")
            #expect(sentOffset < 1.5)
            #expect(off < 0.01 && degrees < 1 && pose.int("flags") == 0, "\(pose)")
        }
    }

    @Test("the synthetic camera painting its tag field, --pose apriltag: the expert's frames carry the poses the tags give, 95 % of frames measured")
    func syntheticCameraWithTags() async throws {
        try await Self.withPair(["--source", "synthetic", "--pose", "apriltag", "--scene-path", "walk"], frames: 60) { publisher, expert in
            var measured = 0
            for _ in 0..<5 {
                let mark = expert.output.count
                expert.send("pose")
                let (pose, _) = try await expert.waitForEvent("the pose of the frame on screen", timeout: 10, after: mark) { $0.is(.pose) }
                if pose.int("flags") == 0 { measured += 1 }
                try await Task.sleep(for: .milliseconds(300))
            }
            let (status, _) = try await publisher.waitForEvent("the publisher's status with tag counts", timeout: 10,
                                                               after: publisher.output.count) { $0.is(.status) && $0["tag_frames"] != nil }
            let frames = status.int("tag_frames"), posed = status.int("tag_frames_with_pose")
            print("apriltag on the synthetic camera (walk): \(posed) of \(frames) frames measured, \(status.int("tag_frames_predicted")) predicted, "
                  + "\(status["tag_ms"] ?? "?") ms a frame; \(measured) of 5 frames on the expert's screen with a measured pose")
            // The walk keeps tags of the field in view throughout (bench-tags: 100 % measured).
            #expect(frames >= 60 && Double(posed) >= 0.95 * Double(frames), "\(status)")
            #expect(measured >= 4)
        }
    }

    @Test("a tag map that cannot be used, scene tags without the synthetic camera, a scene path it cannot move along: refused at start with the reason, exit 2 or 64")
    func refusals() async throws {
        let dir = try Self.temporaryDirectory("posecast-tags-bad")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(#"{"tags": [{"id": 3, "size": -1, "position": [0, 0, 0]}]}"#.utf8).write(to: URL(fileURLWithPath: dir + "bad.json"))
        for (arguments, says) in [
            (["--source", "test", "--pose", "apriltag:\(dir)bad.json"], "tag 3: size -1.0 m"),
            (["--source", "test", "--pose", "apriltag:\(dir)missing.json"], "\(dir)missing.json"),
            (["--source", "test", "--scene-tags", "field"], "it needs --source synthetic"),
            (["--source", "synthetic", "--pose", "apriltag", "--scene-path", "stdin"], "--scene-path must be a path"),
        ] {
            let run = try await ManagedProcess.run("posecast-publisher",
                                                   arguments + ["--microphone", "none", "--speaker", "none"], timeout: 30)
            #expect([2, 64].contains(run.status) && (run.stderr + run.stdout).contains(says),
                    "\(arguments): status \(run.status), \(run.stderr.suffix(300))")
        }
    }
}
