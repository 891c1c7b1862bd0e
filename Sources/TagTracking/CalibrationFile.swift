import Foundation
import PoseCastKit

/// A camera's calibration as `posecast-calibrate` writes it and the publisher's
/// `--intrinsics` reads it: the intrinsics in pixels of the picture size it was
/// calibrated at (`PixelIntrinsics`' convention: a pixel's centre at +0.5), the lens
/// distortion (`LensDistortion`, OpenCV's order), and how well it fitted.
///
///     {"width":640,"height":480,"fx":457.1,"fy":457.0,"cx":322.2,"cy":236.1,
///      "distortion":[-0.12,0.03,0.001,-0.0005,0],"rms_px":0.08,"views":20}
///
/// `distortion` may be left out (a pinhole) or hold 4 numbers (k3 = 0); `rms_px` and
/// `views` are for people and may be left out.
public struct CalibrationFile: Sendable, Hashable {
    public var width: Int, height: Int
    public var intrinsics: PixelIntrinsics
    public var distortion: LensDistortion
    /// The corners' rms reprojection error at calibration (pixels), when known.
    public var rmsPx: Double?
    /// The views it was calibrated from, when known.
    public var views: Int?

    public init(width: Int, height: Int, intrinsics: PixelIntrinsics, distortion: LensDistortion = .none,
                rmsPx: Double? = nil, views: Int? = nil) {
        self.width = width; self.height = height; self.intrinsics = intrinsics; self.distortion = distortion
        self.rmsPx = rmsPx; self.views = views
    }

    /// The calibration in the file at `path`.
    public static func load(path: String) throws(CalibrationFileError) -> CalibrationFile {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .unreadable(path: path, error.localizedDescription)
        }
        return try decode(data, path: path)
    }

    /// The calibration in `data` (JSON as above), every field checked; `path` names the
    /// file in errors.
    public static func decode(_ data: Data, path: String? = nil) throws(CalibrationFileError) -> CalibrationFile {
        struct Raw: Decodable {
            var width: Int?, height: Int?
            var fx: Double?, fy: Double?, cx: Double?, cy: Double?
            var distortion: [Double]?
            var rms_px: Double?
            var views: Int?
        }
        let raw: Raw
        do { raw = try JSONDecoder().decode(Raw.self, from: data) } catch {
            throw .badJSON(path: path, "\(error)")
        }
        func need<T>(_ value: T?, _ field: String) throws(CalibrationFileError) -> T {
            guard let value else { throw .badField(path: path, field: field, "missing") }
            return value
        }
        let width = try need(raw.width, "width"), height = try need(raw.height, "height")
        guard width > 0 else { throw .badField(path: path, field: "width", "\(width) is not a positive number of pixels") }
        guard height > 0 else { throw .badField(path: path, field: "height", "\(height) is not a positive number of pixels") }
        let fx = try need(raw.fx, "fx"), fy = try need(raw.fy, "fy"), cx = try need(raw.cx, "cx"), cy = try need(raw.cy, "cy")
        for (field, f) in [("fx", fx), ("fy", fy)] where !(f.isFinite && f > 0) {
            throw .badField(path: path, field: field, "\(f) is not a positive focal length in pixels")
        }
        guard cx.isFinite, cx > 0, cx < Double(width) else {
            throw .badField(path: path, field: "cx", "\(cx) is not inside the picture (0…\(width))")
        }
        guard cy.isFinite, cy > 0, cy < Double(height) else {
            throw .badField(path: path, field: "cy", "\(cy) is not inside the picture (0…\(height))")
        }
        var distortion = LensDistortion.none
        if let c = raw.distortion {
            guard let d = LensDistortion(coefficients: c) else {
                throw .badField(path: path, field: "distortion", "needs 4 or 5 finite numbers [k1, k2, p1, p2, k3], not \(c)")
            }
            distortion = d
        }
        if let rms = raw.rms_px, !(rms.isFinite && rms >= 0) {
            throw .badField(path: path, field: "rms_px", "\(rms) is not a distance in pixels")
        }
        return CalibrationFile(width: width, height: height, intrinsics: PixelIntrinsics(fx: fx, fy: fy, cx: cx, cy: cy),
                               distortion: distortion, rmsPx: raw.rms_px, views: raw.views)
    }

    /// The file's JSON, one line, fields in the documented order.
    public var json: String {
        var fields = ["\"width\":\(width)", "\"height\":\(height)", "\"fx\":\(intrinsics.fx)", "\"fy\":\(intrinsics.fy)",
                      "\"cx\":\(intrinsics.cx)", "\"cy\":\(intrinsics.cy)",
                      "\"distortion\":[\(distortion.coefficients.map { "\($0)" }.joined(separator: ","))]"]
        if let rmsPx { fields.append("\"rms_px\":\(rmsPx)") }
        if let views { fields.append("\"views\":\(views)") }
        return "{" + fields.joined(separator: ",") + "}\n"
    }

    /// Writes the file at `path` atomically (a new file renamed over the old), so a
    /// publisher starting meanwhile reads the old calibration or the new, never half.
    public func write(to path: String) throws(CalibrationFileError) {
        do { try Data(json.utf8).write(to: URL(fileURLWithPath: path), options: .atomic) } catch {
            throw .unwritable(path: path, error.localizedDescription)
        }
    }

    /// The intrinsics in pixels of a capture of `width` × `height`: the calibrated ones
    /// scaled, for a capture with the same aspect (the same sensor area read out at
    /// another size). A capture of another aspect is cropped from the sensor, which moves
    /// the principal point by an amount no file can know, so it is refused.
    public func intrinsics(width w: Int, height h: Int, path: String? = nil) throws(CalibrationFileError) -> PixelIntrinsics {
        let sx = Double(w) / Double(width), sy = Double(h) / Double(height)
        guard w > 0, h > 0, abs(sx / sy - 1) < 0.01 else {
            throw .otherAspect(path: path, calibrated: "\(width)x\(height)", capture: "\(w)x\(h)")
        }
        return PixelIntrinsics(fx: intrinsics.fx * sx, fy: intrinsics.fy * sy, cx: intrinsics.cx * sx, cy: intrinsics.cy * sy)
    }

    /// The intrinsics normalised to the picture (the project's `CameraIntrinsics`), for
    /// a capture of `width` × `height` with the calibrated aspect.
    public func normalizedIntrinsics(width w: Int, height h: Int, path: String? = nil) throws(CalibrationFileError) -> CameraIntrinsics {
        try intrinsics(width: w, height: h, path: path).normalized(width: w, height: h)
    }
}

/// Why a calibration file was refused.
public enum CalibrationFileError: Error, Sendable, Hashable, CustomStringConvertible {
    case unreadable(path: String, String)
    case badJSON(path: String?, String)
    case badField(path: String?, field: String, String)
    case unwritable(path: String, String)
    case otherAspect(path: String?, calibrated: String, capture: String)

    public var description: String {
        func name(_ path: String?) -> String { "calibration file" + (path.map { " " + $0 } ?? "") }
        return switch self {
        case .unreadable(let path, let why): "\(name(path)): cannot be read: \(why)"
        case .badJSON(let path, let why):
            "\(name(path)): not a calibration ({\"width\", \"height\", \"fx\", \"fy\", \"cx\", \"cy\", \"distortion\"}): \(why)"
        case .badField(let path, let field, let why): "\(name(path)): \"\(field)\": \(why)"
        case .unwritable(let path, let why): "\(name(path)): cannot be written: \(why)"
        case .otherAspect(let path, let calibrated, let capture):
            "\(name(path)): calibrated at \(calibrated), which is not the shape of a \(capture) capture (a cropped mode needs its own calibration)"
        }
    }
}
