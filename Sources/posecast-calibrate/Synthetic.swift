import ArgumentParser
import Foundation
import PoseCastKit
import TagTracking

/// Calibration against ground truth: the default board rendered through a known camera
/// and lens, calibrated, and the result compared with the truth.
struct Synthetic: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Render views of the default board through a known camera and lens, calibrate, compare with the truth.",
        discussion: """
            The views: distances spread over 0.4-1.2 m, tilted 10-45° in random directions, rolled up to ±25°, \
            aimed up to 40 % of the board off its centre so it reaches the picture's edges (repeatable per --seed). \
            Prints one JSON line: truth, found, relative errors of fx, fy, cx, cy, the largest distance \
            between where the true and the found camera put a ray, over the picture (max_disagreement_px), \
            and the same for the distortion alone, both through the true intrinsics (distortion_disagreement_px).
            """)

    @Option var views = 20
    @Option(help: "Picture size, WIDTHxHEIGHT.") var size = "640x480"
    @Option(help: "Horizontal field of view of the true camera (degrees); fy = fx.") var hfov: Double = 70
    @Option(help: "The true principal point in pixels, X,Y (default: 2 px right of and 4 px above the centre).")
    var principal: String?
    @Option(help: "The true distortion, k1,k2,p1,p2,k3 (OpenCV's order).") var distortion = "-0.12,0.03,0.001,-0.0005,0"
    @Option(help: "Rays per pixel are SAMPLES × SAMPLES.") var samples = 2
    @Option var seed: UInt64 = 37
    @Flag(help: "Fit k3 too.") var fitK3 = false
    @Option(help: "Write the calibration here (JSON).") var out: String?
    @Option(help: "Write the rendered views (PGM) and board.json into this directory, for `images`.") var saveViews: String?

    func validate() throws {
        guard (3...200).contains(views) else { throw ValidationError("--views must be 3…200") }
        guard parsedSize != nil else { throw ValidationError("--size is WIDTHxHEIGHT, not \(size)") }
        guard hfov > 10, hfov < 150 else { throw ValidationError("--hfov must be 10…150 degrees") }
        guard LensDistortion(coefficients: numbers(distortion) ?? []) != nil else {
            throw ValidationError("--distortion is k1,k2,p1,p2[,k3], not \(distortion)")
        }
        if let principal { guard numbers(principal)?.count == 2 else { throw ValidationError("--principal is X,Y, not \(principal)") } }
        guard (1...4).contains(samples) else { throw ValidationError("--samples must be 1…4") }
    }

    var parsedSize: (width: Int, height: Int)? {
        let parts = size.split(separator: "x").compactMap { Int($0) }
        return parts.count == 2 && parts.allSatisfy({ (16...8192).contains($0) }) ? (parts[0], parts[1]) : nil
    }

    func numbers(_ text: String) -> [Double]? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) }
        return !parts.isEmpty && parts.allSatisfy { $0 != nil } ? parts.compactMap { $0 } : nil
    }

    func run() throws {
        let (width, height) = parsedSize!
        let lens = LensDistortion(coefficients: numbers(distortion)!)!
        let fx = Double(width) / 2 / tan(hfov * .pi / 360)
        let centre = principal.flatMap(numbers) ?? [Double(width) / 2 + 2, Double(height) / 2 - 4]
        let truth = PixelIntrinsics(fx: fx, fy: fx, cx: centre[0], cy: centre[1])
        let board = TagMap.defaultBoard
        let start = Date()
        let cameras = SyntheticCalibration.cameras(count: views, board: board, intrinsics: truth.normalized(width: width, height: height),
                                                   width: width, height: height, seed: seed)
        let shots = try SyntheticCalibration.shoot(cameras, board: board, distortion: lens, width: width, height: height, samples: samples)
        let rendered = Date()
        if let dir = saveViews {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try Data(board.jsonFile.utf8).write(to: URL(fileURLWithPath: dir + "/board.json"), options: .atomic)
            for (i, shot) in shots.enumerated() {
                try GreyPicture(width: width, height: height, pixels: shot.picture).write(path: dir + String(format: "/view-%02d.pgm", i + 1))
            }
        }
        let result = try CameraCalibration.calibrate(shots.map(\.view), width: width, height: height,
                                                     options: CalibrationOptions(fitK3: fitK3))
        let calibrated = Date()
        if let out { try result.file.write(to: out) }
        let found = result.intrinsics
        func relative(_ a: Double, _ b: Double) -> Double { rounded(abs(a - b) / abs(b) * 100, 4) }
        let disagreement = CameraCalibration.largestDisagreement((truth, lens), (found, result.distortion), width: width, height: height, step: 4)
        // The distortion alone, both through the true intrinsics.
        let distortionOnly = CameraCalibration.largestDisagreement((truth, lens), (truth, result.distortion), width: width, height: height, step: 4)
        let summary: [String: Any] = [
            "size": "\(width)x\(height)", "views": views, "views_used": result.views.count,
            "corners": result.views.reduce(0) { $0 + $1.corners },
            "truth": ["fx": rounded(truth.fx, 3), "fy": rounded(truth.fy, 3), "cx": rounded(truth.cx, 3), "cy": rounded(truth.cy, 3),
                      "distortion": lens.coefficients],
            "found": ["fx": rounded(found.fx, 3), "fy": rounded(found.fy, 3), "cx": rounded(found.cx, 3), "cy": rounded(found.cy, 3),
                      "distortion": result.distortion.coefficients.map { rounded($0, 5) }],
            "error_percent": ["fx": relative(found.fx, truth.fx), "fy": relative(found.fy, truth.fy),
                              "cx": relative(found.cx, truth.cx), "cy": relative(found.cy, truth.cy)],
            "max_disagreement_px": rounded(disagreement, 3), "distortion_disagreement_px": rounded(distortionOnly, 3),
            "rms_px": rounded(result.rmsPx, 4), "worst_view_rms_px": rounded(result.views.map(\.rmsPx).max() ?? 0, 4),
            "iterations": result.iterations,
            "render_s": rounded(rendered.timeIntervalSince(start), 2), "calibrate_s": rounded(calibrated.timeIntervalSince(rendered), 3),
        ]
        print(try jsonLine(summary))
    }
}
