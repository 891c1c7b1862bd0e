import Foundation
import PoseCastKit
import Testing
@testable import TagTracking

extension Tag {
    /// The project's tag for suites that render for a minute (Tests/TestSupport/TestTags.swift,
    /// which scripts/test reads by name); declared here because this target does not
    /// depend on TestSupport. Remove when it does.
    @Tag fileprivate static var rendering: Self
}

/// Camera calibration (Zhang's method) against ground truth: board corners projected or
/// rendered through a known camera and lens, calibrated, and compared with the truth.
@Suite struct CalibrationTests {
    static let width = 640, height = 480
    /// fx = fy = 457 px (70° across 640 px), principal point off the centre.
    static let truth = PixelIntrinsics(fx: 457, fy: 457, cx: 322, cy: 236)
    static let lens = LensDistortion(k1: -0.12, k2: 0.03, p1: 0.001, p2: -0.0005)

    static func distance(_ a: SIMD2<Double>, _ b: SIMD2<Double>) -> Double { ((a - b) * (a - b)).sum().squareRoot() }

    @Test("distortion: undistort inverts distort to 1e-9 over the picture and beyond its corners, in normalised coordinates and in pixels")
    func distortionRoundTrip() {
        let strong = LensDistortion(k1: -0.3, k2: 0.1, p1: 0.002, p2: -0.001, k3: -0.02)
        for d in [Self.lens, strong, LensDistortion(k1: 0.2, k2: -0.05)] {
            for i in 0...20 {
                for j in 0...20 {
                    let p = SIMD2(Double(i) / 20 * 1.8 - 0.9, Double(j) / 20 * 1.4 - 0.7)
                    let back = d.undistort(normalized: d.distort(normalized: p))
                    #expect(Self.distance(back, p) < 1e-9, "\(d) at \(p): \(back)")
                }
            }
            for pixel in [SIMD2(0.0, 0.0), SIMD2(640, 480), SIMD2(17.5, 401.25), SIMD2(322, 236)] {
                let ray = d.undistort(pixel: pixel, intrinsics: Self.truth)
                let again = d.distort(pixel: ray, intrinsics: Self.truth)
                #expect(Self.distance(again, pixel) < 1e-7)
            }
        }
        // Barrel distortion pulls the picture's corner towards the centre.
        let corner = Self.lens.distort(pixel: SIMD2(0, 0), intrinsics: Self.truth)
        #expect(corner.x > 0 && corner.y > 0)
        #expect(LensDistortion(coefficients: [1, 2, 3]) == nil && LensDistortion(coefficients: [1, 2, 3, 4])?.k3 == 0)
    }

    @Test("homography: recovered from exact points to 1e-9 (4 points or a grid); points on a line refused")
    func homographyFromExactPoints() throws {
        let m: [Double] = [420, -35, 300, 20, 380, 250, 0.12, -0.3, 1]
        let h = Homography(m: m)
        var grid: [SIMD2<Double>] = []
        for i in 0..<5 { for j in 0..<4 { grid.append(SIMD2(Double(i) * 0.07 - 0.14, Double(j) * 0.05 - 0.08)) } }
        let corners: [SIMD2<Double>] = [grid[0], grid[3], grid[16], grid[19]]
        for board in [grid, corners] {
            let picture = board.map { h.apply($0)! }
            let fit = try #require(Homography.fit(board: board, picture: picture))
            for p in grid {
                #expect(Self.distance(h.apply(p)!, fit.apply(p)!) < 1e-9)
            }
            #expect(fit.depth(SIMD2(0, 0)) > 0)
        }
        let line: [SIMD2<Double>] = (0..<6).map { SIMD2(Double($0) * 0.1, Double($0) * 0.05) }
        #expect(Homography.fit(board: line, picture: line.map { h.apply($0)! }) == nil)
    }

    /// The board's corners as a camera with `intrinsics` and `distortion` sees them
    /// (those inside the picture), as views: calibration's input without the detector.
    static func projectedViews(_ cameras: [CameraModel], board: TagMap, intrinsics: PixelIntrinsics,
                               distortion: LensDistortion) throws -> [CalibrationView] {
        let corners = try board.boardCorners()
        return cameras.enumerated().map { i, camera in
            var b: [SIMD2<Double>] = [], p: [SIMD2<Double>] = [], tags: [Int] = []
            for (id, points) in corners.sorted(by: { $0.key < $1.key }) {
                let pixels = points.map { q -> SIMD2<Double> in
                    // The project's camera looks down −Z with y up; normalised coordinates have y down.
                    let c = camera.toCamera(Vector3(Float(q.x), Float(q.y), 0))
                    let n = SIMD2(Double(c.x) / Double(-c.z), Double(-c.y) / Double(-c.z))
                    return intrinsics.pixel(distortion.distort(normalized: n))
                }
                guard pixels.allSatisfy({ $0.x > 0 && $0.y > 0 && $0.x < Double(width) && $0.y < Double(height) }) else { continue }
                b += points; p += pixels; tags.append(id)
            }
            return CalibrationView(name: "view \(i + 1)", board: b, pixels: p, tags: tags)
        }
    }

    static func cameras(_ count: Int, seed: UInt64 = 37) -> [CameraModel] {
        SyntheticCalibration.cameras(count: count, board: .defaultBoard, intrinsics: truth.normalized(width: width, height: height),
                                     width: width, height: height, seed: seed)
    }

    @Test("exact corners from 20 views: intrinsics and distortion recovered to rounding, rms under 1e-4 px (the corners were projected in Float)")
    func exactCorners() throws {
        let views = try Self.projectedViews(Self.cameras(20), board: .defaultBoard, intrinsics: Self.truth, distortion: Self.lens)
        let result = try CameraCalibration.calibrate(views, width: Self.width, height: Self.height)
        let k = result.intrinsics
        #expect(abs(k.fx - 457) < 1e-4 && abs(k.fy - 457) < 1e-4 && abs(k.cx - 322) < 1e-4 && abs(k.cy - 236) < 1e-4, "\(k)")
        let d = result.distortion
        #expect(abs(d.k1 + 0.12) < 1e-6 && abs(d.k2 - 0.03) < 1e-6 && abs(d.p1 - 0.001) < 1e-7 && abs(d.p2 + 0.0005) < 1e-7, "\(d)")
        #expect(result.rmsPx < 1e-4 && result.views.count == 20 && result.skipped.isEmpty, "rms \(result.rmsPx) px")
    }

    @Test("too few views, views square-on to the camera: the typed errors")
    func refusals() throws {
        let views = try Self.projectedViews(Self.cameras(2), board: .defaultBoard, intrinsics: Self.truth, distortion: Self.lens)
        let empty = CalibrationView(name: "blank.pgm", board: [], pixels: [], tags: [])
        #expect {
            try CameraCalibration.calibrate(views + [empty], width: Self.width, height: Self.height)
        } throws: { error in
            guard case CalibrationError.tooFewViews(2, 3, let skipped) = error else { return false }
            return skipped == ["blank.pgm: 0 of the board's tags found, 4 needed"]
        }
        // Square-on at different distances and rolls: the focal length trades against the distance.
        let square = (0..<5).map { i -> CameraModel in
            let eye = Vector3(Float(i) * 0.02, -0.01, 0.5 + Float(i) * 0.1)
            let roll = Quaternion(axis: Vector3(0, 0, 1), angleRadians: Float(i) * 0.3)
            return CameraModel(position: eye, orientation: roll, intrinsics: Self.truth.normalized(width: Self.width, height: Self.height))
        }
        let flat = try Self.projectedViews(square, board: .defaultBoard, intrinsics: Self.truth, distortion: .none)
        #expect(flat.allSatisfy { $0.tags.count >= 4 })
        #expect {
            try CameraCalibration.calibrate(flat, width: Self.width, height: Self.height)
        } throws: { error in
            guard case CalibrationError.degenerate(let why) = error else { return false }
            return why.contains("square-on")
        }
    }

    @Test("calibration file: written and read back the same, scaled for a capture of the same shape, refused for another shape; every broken field named with the file")
    func calibrationFile() throws {
        let file = CalibrationFile(width: 640, height: 480, intrinsics: PixelIntrinsics(fx: 457.25, fy: 456.5, cx: 322.125, cy: 236.5),
                                   distortion: Self.lens, rmsPx: 0.08, views: 20)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("calibration-\(UUID()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try file.write(to: path)
        #expect(try CalibrationFile.load(path: path) == file)
        #expect(file.json.hasPrefix(#"{"width":640,"height":480,"fx":457.25,"#))
        let hd = try file.intrinsics(width: 1280, height: 960)
        #expect(hd == PixelIntrinsics(fx: 914.5, fy: 913, cx: 644.25, cy: 473))
        #expect(try file.normalizedIntrinsics(width: 1280, height: 960) == PixelIntrinsics(fx: 457.25, fy: 456.5, cx: 322.125, cy: 236.5)
            .normalized(width: 640, height: 480))
        #expect(throws: CalibrationFileError.otherAspect(path: path, calibrated: "640x480", capture: "1280x720")) {
            try file.intrinsics(width: 1280, height: 720, path: path)
        }
        func refusal(_ json: String) -> String {
            do { _ = try CalibrationFile.decode(Data(json.utf8), path: "cam.json"); return "accepted" } catch { return error.description }
        }
        let good = #""width":640,"height":480,"fx":457,"fy":457,"cx":322,"cy":236"#
        #expect(refusal("{\(good)}") == "accepted")
        #expect(refusal("{\(good),\"distortion\":[-0.1,0.01,0,0]}") == "accepted")
        #expect(refusal(#"{"width":640,"height":480,"fx":-457,"fy":457,"cx":322,"cy":236}"#).hasPrefix("calibration file cam.json: \"fx\": -457.0"))
        #expect(refusal(#"{"width":640,"height":480,"fx":457,"fy":0,"cx":322,"cy":236}"#).contains("\"fy\""))
        #expect(refusal(#"{"width":640,"height":480,"fx":457,"fy":457,"cx":700,"cy":236}"#).contains("\"cx\": 700.0 is not inside the picture"))
        #expect(refusal(#"{"width":640,"height":480,"fx":457,"fy":457,"cx":322,"cy":-1}"#).contains("\"cy\""))
        #expect(refusal(#"{"width":0,"height":480,"fx":457,"fy":457,"cx":322,"cy":236}"#).contains("\"width\""))
        #expect(refusal(#"{"width":640,"fx":457,"fy":457,"cx":322,"cy":236}"#).contains("\"height\": missing"))
        #expect(refusal("{\(good),\"distortion\":[1,2]}").contains("\"distortion\": needs 4 or 5"))
        #expect(refusal("{\(good),\"rms_px\":-1}").contains("\"rms_px\""))
        #expect(refusal("[1]").contains("cam.json: not a calibration"))
        do { _ = try CalibrationFile.load(path: "/nonexistent/cam.json"); Issue.record("accepted") } catch {
            #expect(error.description.contains("/nonexistent/cam.json: cannot be read"))
        }
    }

    @Test("board: the default board's 24 tags in the z = 0 plane, read back from its JSON; a tag off the plane refused")
    func board() throws {
        let board = TagMap.defaultBoard
        #expect(board.tags.count == 24 && board.tags[0]!.position.x < board.tags[5]!.position.x
            && board.tags[0]!.position.y > board.tags[18]!.position.y)
        let corners = try board.boardCorners()
        #expect(abs(corners[0]![1].x - corners[0]![0].x - 0.05) < 1e-6)
        #expect(try TagMap.decode(Data(board.jsonFile.utf8)) == board)
        let tilted = try TagMap([.init(id: 1, size: 0.05, position: .zero, orientation: TagMap.faceUp)])
        #expect(throws: TagBoardError.notFlat(id: 1)) { try tilted.boardCorners() }
        #expect(throws: TagBoardError.self) { try TagMap.board(columns: 2, rows: 2, tagSize: 0.05, gap: 0.005) }
    }
}

/// The requirement: calibration from 20 synthetic views, rendered through the lens and
/// found by the AprilTag detector, recovers fx, fy, cx, cy within 1 % and the
/// distortion it was rendered with.
@Suite(.tags(.rendering)) struct CalibrationRenderedTests {
    @Test("20 rendered views at 640×480 through k1 = −0.12, k2 = 0.03: fx, fy, cx, cy within 1 %, the distortion's pixels within 0.5 px over the picture")
    func twentyRenderedViews() throws {
        let (width, height) = (CalibrationTests.width, CalibrationTests.height)
        let truth = CalibrationTests.truth, lens = CalibrationTests.lens
        let start = Date()
        let shots = try SyntheticCalibration.shoot(CalibrationTests.cameras(20), board: .defaultBoard, distortion: lens,
                                                   width: width, height: height, samples: 2)
        let rendered = Date()
        let result = try CameraCalibration.calibrate(shots.map(\.view), width: width, height: height)
        let k = result.intrinsics, d = result.distortion
        let errors = [k.fx / truth.fx, k.fy / truth.fy, k.cx / truth.cx, k.cy / truth.cy].map { abs($0 - 1) * 100 }
        // The distortion judged by what it does to pixels: where the found and the true
        // distortion put each ray of the picture, both through the true intrinsics.
        let distortion = CameraCalibration.largestDisagreement((truth, lens), (truth, d), width: width, height: height, step: 4)
        // The whole camera the same way: dominated by the principal point, the intrinsic
        // 1500 corners seen to 0.1 px pin down least (a few tenths of a pixel), and which
        // a pose solved from tags absorbs as a small turn of the camera.
        let camera = CameraCalibration.largestDisagreement((truth, lens), (k, d), width: width, height: height, step: 4)
        print("calibration from \(result.views.count) rendered views (\(result.views.reduce(0) { $0 + $1.corners }) corners): "
              + String(format: "fx %.2f fy %.2f cx %.2f cy %.2f (errors %.3f %.3f %.3f %.3f %%), ", k.fx, k.fy, k.cx, k.cy,
                       errors[0], errors[1], errors[2], errors[3])
              + String(format: "k1 %.4f k2 %.4f p1 %.5f p2 %.5f, rms %.3f px; distortion within %.3f px, camera within %.3f px; ",
                       d.k1, d.k2, d.p1, d.p2, result.rmsPx, distortion, camera)
              + String(format: "render %.1f s, calibrate %.2f s", rendered.timeIntervalSince(start), Date().timeIntervalSince(rendered)))
        #expect(result.views.count == 20)
        #expect(errors.allSatisfy { $0 < 1 }, "\(errors) %")
        #expect(distortion < 0.5, "the distortion found puts a ray \(distortion) px from where the true one does")
        #expect(camera < 2, "the camera found puts a ray \(camera) px from where the true one does")
        // Each coefficient within what would, alone, move the picture's corner (r² ≈ 0.77)
        // by about 1.3 px: 457 · 0.88 · 0.77 · 0.004 for k1, 457 · 0.88 · 0.59 · 0.006 for
        // k2. The two trade against each other, so the pixels above are the real check.
        #expect(abs(d.k1 - lens.k1) < 0.004 && abs(d.k2 - lens.k2) < 0.006, "k1 \(d.k1), k2 \(d.k2)")
        #expect(abs(d.p1 - lens.p1) < 0.0005 && abs(d.p2 - lens.p2) < 0.0005, "p1 \(d.p1), p2 \(d.p2)")
        #expect(result.rmsPx < 0.2)
    }
}
