import Foundation
import PoseCastKit
import Synchronization

/// Calibration's ground truth: a board photographed by a known camera through a known
/// lens, from poses a person calibrating would take (near and far, tilted, the board
/// pushed to the picture's edges and corners where distortion shows most). The
/// calibration tests and `posecast-calibrate synthetic` both use it.
public enum SyntheticCalibration {
    /// One rendered view.
    public struct Shot: Sendable {
        public var camera: CameraModel
        public var picture: [UInt8]
        public var view: CalibrationView
    }

    /// `count` camera poses looking at `board` (lying as `TagMap.board` lays it), each
    /// `distance` metres from its centre, tilted `tilt` degrees from square-on in a
    /// direction of its own, rolled up to ±30°, and turned so the board's centre lands
    /// anywhere in the picture, its edges and corners included, where distortion shows
    /// most; poses that would see fewer than 8 tags whole are drawn again. Distances are
    /// spread evenly over the range (one per slice, jittered), so every set has near and
    /// far views. Repeatable for a `seed`.
    public static func cameras(count: Int, board: TagMap, intrinsics: CameraIntrinsics, width: Int, height: Int,
                               distance: ClosedRange<Double> = 0.4...1.2, tilt: ClosedRange<Double> = 10...45,
                               seed: UInt64 = 37) -> [CameraModel] {
        var rng = SplitMix64(seed: seed)
        let renderer = TagRenderer(map: board)
        var out: [CameraModel] = []
        for i in 0..<count {
            for _ in 0..<500 {
                let d = distance.lowerBound + (distance.upperBound - distance.lowerBound) * (Double(i) + rng.nextUnitDouble()) / Double(count)
                let theta = (tilt.lowerBound + (tilt.upperBound - tilt.lowerBound) * rng.nextUnitDouble()) * .pi / 180
                let phi = 2 * .pi * rng.nextUnitDouble()
                let roll = (rng.nextUnitDouble() * 60 - 30) * .pi / 180
                // Where the board's centre lands, normalised; the camera turns by the
                // angles that put it there.
                let (u, v) = (rng.nextUnitDouble(), rng.nextUnitDouble())
                let yaw = atan((u - Double(intrinsics.cx)) / Double(intrinsics.fx))
                let pitch = atan((v - Double(intrinsics.cy)) / Double(intrinsics.fy))
                let eye = Vector3(Float(sin(theta) * cos(phi)), Float(sin(theta) * sin(phi)), Float(cos(theta))) * Float(d)
                let orientation = Quaternion.lookAt(eye: eye, target: .zero)
                    * Quaternion(axis: Vector3(0, 0, 1), angleRadians: Float(roll))
                    * Quaternion(axis: Vector3(0, 1, 0), angleRadians: Float(yaw))
                    * Quaternion(axis: Vector3(1, 0, 0), angleRadians: Float(pitch))
                let candidate = CameraModel(position: eye, orientation: orientation, intrinsics: intrinsics)
                if renderer.tagsInView(camera: candidate, width: width, height: height, minSidePx: 16).count >= 8 {
                    out.append(candidate); break
                }
            }
        }
        return out
    }

    /// Each camera's picture of `board` through `distortion` (`samples` × `samples` rays
    /// a pixel), and the board's corners found in it: both cores, one detector each.
    public static func shoot(_ cameras: [CameraModel], board: TagMap, distortion: LensDistortion, width: Int, height: Int,
                             samples: Int = 2) throws -> [Shot] {
        let corners = try board.boardCorners()
        let renderer = { var r = TagRenderer(map: board); r.samples = samples; return r }()
        let shots = Mutex<[Int: Result<Shot, TagTrackingError>]>([:])
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, cameras.count))
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let detector: TagDetector
            do throws(TagTrackingError) { detector = try TagDetector() } catch {
                shots.withLock { $0[-1 - worker] = .failure(error) }; return
            }
            for i in stride(from: worker, to: cameras.count, by: workers) {
                let camera = cameras[i]
                let picture = renderer.render(camera: camera, width: width, height: height, distortion: distortion)
                let result = Result { () throws(TagTrackingError) -> Shot in
                    let sightings = try picture.withUnsafeBufferPointer { buffer throws(TagTrackingError) in
                        try detector.detect(grey: buffer.baseAddress!, width: width, height: height, stride: width,
                                            intrinsics: camera.intrinsics)
                    }
                    let view = CalibrationView(name: "view \(i + 1)", sightings: sightings, boardCorners: corners,
                                               width: width, height: height)
                    return Shot(camera: camera, picture: picture, view: view)
                }
                shots.withLock { $0[i] = result }
            }
        }
        return try shots.withLock { all in
            if let failure = all.first(where: { $0.key < 0 }) { _ = try failure.value.get() }
            return try (0..<cameras.count).map { try all[$0]!.get() }
        }
    }
}
