import ArgumentParser
import Foundation
import Imaging
import PoseCastKit
import SyntheticCamera
import TagTracking

/// The tag tracker against ground truth: frames of the synthetic scene rendered along a
/// trajectory with AprilTags painted on its ground (`TagRenderer.paint`, hidden where a
/// nearer object stands), the camera's pose found from each (`TagDetector`,
/// `TagPoseSolver`) and compared with the pose it was rendered from.
struct Tags: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Track AprilTags in the synthetic scene along a trajectory against ground truth; prints a JSON summary.")

    @Option var width = 640
    @Option var height = 480
    @Option(help: "Frames, 1/30 s apart along the path.") var frames = 300
    @Option(help: "The trajectory: orbit, walk or shake (docs/POSE_SOURCES.md).") var path = "orbit"
    @Option(help: "A tag map (JSON; docs/POSE_SOURCES.md); default: the scene's tag field, six 40 cm tags on the ground.")
    var map: String?
    @Option(help: "Quads are searched on a picture this many times smaller (1: full size).") var decimate: Float = 2
    @Option(help: "Write one JSON line per frame here (time, error, tags, ms, the searches, each tag's ring contrast, the worst tap).") var framesOut: String?
    @Option(help: "Write a frame, tags painted, here as a PPM (the first, or --picture-at's).") var picture: String?
    @Option(help: "The time along the path (seconds) of the frame --picture writes.") var pictureAt: Double = 0

    /// The angle of the rotation from `a` to `b`, in degrees, from the relative
    /// rotation's vector part (exact for small angles, where acos of the dot is not).
    static func degreesBetween(_ a: Quaternion, _ b: Quaternion) -> Double {
        let r = a.conjugate * b
        let v = (Double(r.x) * Double(r.x) + Double(r.y) * Double(r.y) + Double(r.z) * Double(r.z)).squareRoot()
        return 2 * atan2(v, abs(Double(r.w))) * 180 / .pi
    }

    func validate() throws {
        guard frames > 0 else { throw ValidationError("--frames must be positive") }
        guard ["orbit", "walk", "shake"].contains(path) else { throw ValidationError("--path is orbit, walk or shake, not \(path)") }
        guard decimate >= 1, decimate <= 8 else { throw ValidationError("--decimate must be 1…8") }
    }

    func run() throws {
        let map = try self.map.map { try TagMap.load(path: $0) } ?? TagMap.sceneField
        guard let trajectory = try PoseSourceSpec.parse(path).trajectory() else { throw ValidationError("\(path) has no trajectory") }
        let renderer = try SyntheticRenderer(width: width, height: height)
        let painter = TagRenderer(map: map)
        let detector = try TagDetector(threads: 1, decimate: decimate)
        let intrinsics = SyntheticRenderer.defaultIntrinsics(width: width, height: height)
        var track = TagTrack(map: map, intrinsics: intrinsics, width: width, height: height)
        let discs = SyntheticScene.standard.features.filter { $0.kind == .discCenter }
        var image = try I420Image(width: width, height: height)
        let out = framesOut.flatMap { FileManager.default.createFile(atPath: $0, contents: nil) ? FileHandle(forWritingAtPath: $0) : nil }
        defer { try? out?.close() }

        var positionErrors: [Double] = [], angleErrors: [Double] = [], times: [Double] = [], solveTimes: [Double] = []
        var measuredErrors: [Double] = [], predictedErrors: [Double] = [], tapErrors: [Double] = []
        // The worst tap placed with a pose measured from the frame's own tags (not predicted).
        var measuredTapMax = 0.0
        // Measured poses resting on a tag 1 to 3 m away (the range the targets are set for).
        var nearErrors: [(cm: Double, degrees: Double)] = []
        var inView = 0, inViewWithPose = 0, inViewMeasured = 0, posesWithoutTag = 0, wrongPoses = 0, tagsUsed = 0
        var lost: [TagTrack.Reason: Int] = [:]
        for i in 0..<frames {
            let t = Double(i) / 30
            guard let rigid = trajectory.pose(at: t) else { continue }
            let truth = CameraModel(position: rigid.position, orientation: rigid.orientation, intrinsics: intrinsics)
            var visible: [Int] = []
            var sightings: [TagSighting] = []
            var searched: [String] = []
            var frameTapMax: Double?
            var ms = 0.0
            try image.withPlanes { planes in
                try renderer.render(camera: truth, lens: LensState(), frameIndex: UInt64(i), into: planes)
                let depth = { (x: Int, y: Int) in renderer.depthAt(x: x, y: y) }
                painter.paint(into: planes, camera: truth, sceneDepth: depth)
                visible = painter.tagsInView(camera: truth, width: width, height: height, sceneDepth: depth)
                searched = track.searches(at: UInt64((t * 1e9).rounded())).map { $0.map { $0.coarser ? "coarse" : "box" } } ?? ["whole"]
                let start = MonotonicClock.nanos()
                sightings = track.sightings(at: UInt64((t * 1e9).rounded())) { search in
                    (try? detector.detect(grey: UnsafePointer(planes.y), width: width, height: height, stride: planes.yStride,
                                          intrinsics: intrinsics, region: search.region, coarser: search.coarser)) ?? []
                }
                ms = Double(MonotonicClock.nanos() - start) / 1e6
            }
            if i == Int((pictureAt * 30).rounded()), let picture { try Data(image.ppm()).write(to: URL(fileURLWithPath: picture)) }
            let detectMs = ms
            let start = MonotonicClock.nanos()
            let result = track.update(sightings, nanos: UInt64((t * 1e9).rounded()))
            ms += Double(MonotonicClock.nanos() - start) / 1e6
            solveTimes.append(ms - detectMs)
            times.append(ms)
            var camera: CameraModel?, measured = false, usedTags: [Int] = [], range: Double?
            switch result {
            case .measured(let fix):
                camera = fix.camera; measured = true; usedTags = fix.tags
                // How far the tags it rests on are: the nearest one's centre from the camera.
                range = fix.tags.compactMap { map.tags[$0] }.map { Double($0.position.distance(to: truth.position)) }.min()
            case .predicted(let predicted, _): camera = predicted
            case .lost(let reason): lost[reason, default: 0] += 1
            }
            if !visible.isEmpty {
                inView += 1
                if camera != nil { inViewWithPose += 1 }
                if measured { inViewMeasured += 1 }
            }
            var error: (cm: Double, degrees: Double)?
            if let camera {
                let cm = Double(camera.position.distance(to: truth.position)) * 100
                let degrees = Self.degreesBetween(camera.orientation, truth.orientation)
                error = (cm, degrees)
                positionErrors.append(cm); angleErrors.append(degrees)
                if measured { measuredErrors.append(cm) } else { predictedErrors.append(cm) }
                if let range, (1...3).contains(range) { nearErrors.append((cm, degrees)) }
                tagsUsed += usedTags.count
                // No tag wholly in view, yet a pose: right only if it rests on a tag at the edge.
                if visible.isEmpty && cm > 5 { posesWithoutTag += 1 }
                if cm > 5 { wrongPoses += 1 }
                // The expert's taps on the discs in view, placed on the ground with this pose
                // and seen with the true one: how far from the disc's centre they land.
                for disc in discs {
                    guard let seen = truth.project(disc.position), seen.isInImage,
                          renderer.depthAt(x: min(Int(seen.point.x * Float(width)), width - 1), y: min(Int(seen.point.y * Float(height)), height - 1))
                            >= seen.depth * 0.98 - 0.01,
                          case let ray = camera.ray(through: seen.point), let distance = try? Plane.ground.intersect(ray),
                          let back = truth.project(ray.origin + ray.direction * distance) else { continue }
                    let dx = Double(back.point.x - seen.point.x) * Double(width), dy = Double(back.point.y - seen.point.y) * Double(height)
                    tapErrors.append((dx * dx + dy * dy).squareRoot())
                    frameTapMax = max(frameTapMax ?? 0, tapErrors.last!)
                    if measured { measuredTapMax = max(measuredTapMax, tapErrors.last!) }
                }
            }
            if let out {
                var line: [String: Any] = ["t": (t * 1000).rounded() / 1000, "tags_in_view": visible, "ms": (ms * 100).rounded() / 100,
                                           "tags_used": usedTags, "searched": searched,
                                           "rings": Dictionary(sightings.map { (String($0.id), ($0.ringContrast * 100).rounded() / 100) }) { a, _ in a }]
                switch result {
                case .measured: line["pose"] = "measured"
                case .predicted: line["pose"] = "predicted"
                case .lost(let reason): line["pose"] = reason.rawValue
                }
                if let range { line["range_m"] = (range * 100).rounded() / 100 }
                if let frameTapMax { line["tap_px_max"] = (frameTapMax * 100).rounded() / 100 }
                if let error { line["error_cm"] = (error.cm * 1000).rounded() / 1000; line["error_deg"] = (error.degrees * 1000).rounded() / 1000 }
                out.write(try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) + Data("\n".utf8))
            }
        }
        func percentile(_ values: [Double], _ p: Double) -> Double? {
            guard !values.isEmpty else { return nil }
            let sorted = values.sorted()
            return sorted[min(Int((Double(sorted.count - 1) * p).rounded()), sorted.count - 1)]
        }
        func round(_ v: Double?, _ places: Double = 100) -> Any { v.map { ($0 * places).rounded() / places } ?? NSNull() }
        let summary: [String: Any] = [
            "path": path, "width": width, "height": height, "frames": frames, "decimate": Double(decimate),
            "frames_tag_in_view": inView, "frames_with_pose": positionErrors.count,
            "in_view_with_pose_pct": round(inView > 0 ? 100 * Double(inViewWithPose) / Double(inView) : nil, 10),
            "in_view_measured_pct": round(inView > 0 ? 100 * Double(inViewMeasured) / Double(inView) : nil, 10),
            "frames_predicted": predictedErrors.count, "frames_lost": lost.map { [$0.key.rawValue: $0.value] }.reduce(into: [:]) { $0.merge($1) { a, _ in a } },
            "error_cm_p95_measured": round(percentile(measuredErrors, 0.95), 1000),
            "poses_1to3m": nearErrors.count, "error_cm_p95_1to3m": round(percentile(nearErrors.map(\.cm), 0.95), 1000),
            "error_deg_p95_1to3m": round(percentile(nearErrors.map(\.degrees), 0.95), 1000),
            "error_cm_max_predicted": round(predictedErrors.max(), 1000),
            "taps": tapErrors.count, "tap_error_px_p50": round(percentile(tapErrors, 0.5)), "tap_error_px_p95": round(percentile(tapErrors, 0.95)),
            "tap_error_px_max": round(tapErrors.max()), "tap_error_px_max_measured": round(tapErrors.isEmpty ? nil : measuredTapMax),
            "poses_without_tag_in_view": posesWithoutTag, "wrong_poses": wrongPoses,
            "tags_per_pose": round(positionErrors.isEmpty ? nil : Double(tagsUsed) / Double(positionErrors.count)),
            "error_cm_p50": round(percentile(positionErrors, 0.5), 1000), "error_cm_p95": round(percentile(positionErrors, 0.95), 1000),
            "error_deg_p50": round(percentile(angleErrors, 0.5), 1000), "error_deg_p95": round(percentile(angleErrors, 0.95), 1000),
            "ms_p50": round(percentile(times, 0.5)), "ms_p95": round(percentile(times, 0.95)),
            "solve_ms_p50": round(percentile(solveTimes, 0.5)),
        ]
        print(String(decoding: try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys]), as: UTF8.self))
    }
}
