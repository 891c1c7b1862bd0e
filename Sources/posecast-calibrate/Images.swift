import ArgumentParser
import Foundation
import PoseCastKit
import TagTracking

/// Calibration from pictures of a printed board.
struct Images: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Calibrate from pictures of a tag board; writes the calibration file the publisher's --intrinsics reads.",
        discussion: """
            PICTURES are binary greyscale PGM (P5) files, all of one size: the package has no PNG or JPEG \
            decoder. Convert with `ffmpeg -i photo.jpg -pix_fmt gray photo.pgm`. Take 15-25 pictures at the \
            capture size the publisher will use, the board tilted 10-45° in different directions, near and \
            far, and pushed into the picture's corners and edges. Prints one JSON line: the calibration, \
            each picture's error, the pictures left out and why.
            """)

    @Option(help: "The board's tag map (JSON, as `posecast-calibrate board` writes it).") var board: String
    @Option(help: "Write the calibration here (JSON).") var out: String
    @Flag(help: "Fit k3 too (wide-angle lenses).") var fitK3 = false
    @Option(help: "Quads are searched on a picture this many times smaller (1: full size, finds the smallest tags).")
    var decimate: Float = 1
    @Argument(help: "The pictures (PGM).") var pictures: [String]

    func validate() throws {
        guard !pictures.isEmpty else { throw ValidationError("no pictures given") }
        guard decimate >= 1, decimate <= 4 else { throw ValidationError("--decimate must be 1…4") }
    }

    func run() throws {
        let map = try TagMap.load(path: board)
        let corners: [Int: [SIMD2<Double>]]
        do { corners = try map.boardCorners() } catch { throw ValidationError("\(board): \(error)") }
        let detector = try TagDetector(threads: 2, decimate: decimate)
        var views: [CalibrationView] = []
        var size: (width: Int, height: Int)?
        for path in pictures {
            let picture = try GreyPicture.read(path: path)
            if let size, size != (picture.width, picture.height) {
                throw PictureError(path: path, reason: "\(picture.width)×\(picture.height), but the first picture is "
                                   + "\(size.width)×\(size.height): calibrate one capture size at a time")
            }
            size = (picture.width, picture.height)
            let guess = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: Float(picture.width) / Float(picture.height))
            let sightings = try picture.pixels.withUnsafeBufferPointer {
                try detector.detect(grey: $0.baseAddress!, width: picture.width, height: picture.height, stride: picture.width,
                                    intrinsics: guess)
            }
            views.append(CalibrationView(name: path, sightings: sightings, boardCorners: corners,
                                         width: picture.width, height: picture.height))
        }
        guard let size else { return }
        let result = try CameraCalibration.calibrate(views, width: size.width, height: size.height,
                                                     options: CalibrationOptions(fitK3: fitK3))
        try result.file.write(to: out)
        let summary: [String: Any] = [
            "out": out, "width": size.width, "height": size.height,
            "fx": rounded(result.intrinsics.fx, 3), "fy": rounded(result.intrinsics.fy, 3),
            "cx": rounded(result.intrinsics.cx, 3), "cy": rounded(result.intrinsics.cy, 3),
            "distortion": result.distortion.coefficients.map { rounded($0, 6) },
            "rms_px": rounded(result.rmsPx, 4), "iterations": result.iterations,
            "views": result.views.map { ["picture": $0.name, "rms_px": rounded($0.rmsPx, 4), "corners": $0.corners] as [String: Any] },
            "skipped": result.skipped.map { ["picture": $0.name, "reason": $0.reason] },
        ]
        print(try jsonLine(summary))
    }
}

/// `value` to `digits` decimals, for readable JSON.
func rounded(_ value: Double, _ digits: Int) -> Double {
    let scale = pow(10, Double(digits))
    return (value * scale).rounded() / scale
}

/// One JSON line, keys sorted.
func jsonLine(_ object: [String: Any]) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
}
