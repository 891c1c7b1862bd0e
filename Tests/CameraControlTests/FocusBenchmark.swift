import CameraControl
import Foundation
import PoseCastKit
import SyntheticCamera
import TestSupport
import Testing
import Imaging

/// The autofocus benchmark `scripts/bench-focus` runs: tap-to-lock-focus on the simulated
/// camera at many depths, each from a defocused start, plus the cost of `process` at
/// 1280×720. Skipped unless POSECAST_BENCH_FOCUS_OUT names the JSON-lines file to write.
/// POSECAST_BENCH_FOCUS_QUICK=1 (`scripts/bench-focus --quick`): the first 3 taps and 3
/// timed frames per mode, the same code in seconds.
@Suite(.tags(.rendering)) struct FocusBenchmark {
    static let output = ProcessInfo.processInfo.environment["POSECAST_BENCH_FOCUS_OUT"]
    static let quick = ProcessInfo.processInfo.environment["POSECAST_BENCH_FOCUS_QUICK"] == "1"

    struct Tap {
        var camera: CameraModel
        var point: NormalizedPoint
    }

    /// Taps on every object of the standard scene from several viewpoints, far and near,
    /// and on the ground near and far.
    static func taps(width: Int, height: Int) throws -> [Tap] {
        let scene = SyntheticScene.standard
        var cameras: [CameraModel] = stride(from: Float(0), to: 360, by: 60).map {
            SimulatedRig.orbitCamera(degrees: $0, width: width, height: height)
        }
        // Close-ups: objects half a metre to a metre away.
        cameras.append(SimulatedRig.camera(eye: Vector3(-0.9, 0.9, 0.2), target: Vector3(-0.9, 0.3, -0.7), width: width, height: height))
        cameras.append(SimulatedRig.camera(eye: Vector3(0.1, 0.6, 0.7), target: Vector3(0, 0.3, 0), width: width, height: height))
        cameras.append(SimulatedRig.camera(eye: Vector3(0.9, 0.5, 1.6), target: Vector3(0.75, 0.2, 1.05), width: width, height: height))
        let objects = scene.boxes.map { ($0.name, $0.center) } + scene.spheres.map { ($0.name, $0.center) }
        var taps: [Tap] = []
        for camera in cameras {
            for (name, centre) in objects {
                guard let p = camera.project(centre), p.point.x > 0.05, p.point.x < 0.95, p.point.y > 0.05, p.point.y < 0.95,
                      scene.intersect(camera.ray(through: p.point))?.name == name else { continue }
                taps.append(Tap(camera: camera, point: p.point))
            }
        }
        // The ground near the bottom of the frame and far up it, from two orbit views.
        for degrees in [Float(30), 200] {
            let camera = SimulatedRig.orbitCamera(degrees: degrees, width: width, height: height)
            for p in [NormalizedPoint(x: 0.3, y: 0.92), NormalizedPoint(x: 0.7, y: 0.12)] { taps.append(Tap(camera: camera, point: p)) }
        }
        return taps
    }

    @Test(.enabled(if: FocusBenchmark.output != nil)) func focusBenchmark() throws {
        let path = try #require(Self.output)
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let file = try #require(FileHandle(forWritingAtPath: path))
        defer { try? file.close() }
        func write(_ object: [String: Any]) throws {
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            file.write(data + Data("\n".utf8))
        }

        let (width, height) = (640, 480)
        let taps = try Self.taps(width: width, height: height)
        #expect(taps.count >= 20)
        for (index, tap) in taps.prefix(Self.quick ? 3 : taps.count).enumerated() {
            let probe = try SimulatedRig(width: width, height: height, camera: tap.camera)
            let truth = try #require(probe.trueDepth(at: tap.point))
            let truthLens = SimulatedCameraBackend.lensPosition(focusDistance: truth.depth)
            // Defocused start: the end of the range farther from the truth.
            let start = truthLens < 0.5 ? 1.0 : 0.0
            let rig = try SimulatedRig(width: width, height: height,
                                       lens: LensState(focusDistance: Float(SimulatedCameraBackend.focusDistance(lensPosition: start))),
                                       camera: tap.camera)
            try rig.meter.focus(point: tap.point, mode: .tapToLockFocus)
            var trace: [[String: Any]] = []
            var converged: Int?
            for frame in 1...30 {
                let s = try rig.step()
                trace.append(["type": "trace", "tap": index, "frame": frame, "state": s.focus.state.rawValue,
                              "sharpness": s.focus.measure ?? 0,
                              "lens_position": SimulatedCameraBackend.lensPosition(focusDistance: Double(rig.renderedLens.focusDistance))])
                if s.focus.state != .metering {
                    if s.focus.state == .converged { converged = frame }
                    break
                }
            }
            let area = MeteringArea(mode: .spot, point: tap.point)
            let peak = try rig.peakSharpness(area: area, near: truthLens)
            let final = rig.meter.status.lensPosition ?? start
            let reached = try rig.sharpness(lensPosition: final, area: area)
            try write(["type": "tap", "tap": index, "object": truth.name, "depth": truth.depth, "truth_lens": truthLens,
                       "start_lens": start, "final_lens": final, "peak_lens": peak.position,
                       "frames_to_converge": converged.map { $0 as Any } ?? NSNull(),
                       "peak_ratio": reached / peak.sharpness, "tap_x": Double(tap.point.x), "tap_y": Double(tap.point.y)])
            if index == 0 {
                for var t in trace {
                    t["peak_sharpness"] = peak.sharpness
                    try write(t)
                }
            }
        }

        // The cost of process() per frame at 1280×720, per metering mode.
        let big = try SimulatedRig(width: 1280, height: 720)
        try big.step()
        for mode in MeteringMode.allCases {
            big.meter.setMeteringMode(mode)
            var micros: [Double] = []
            for k in 0..<(Self.quick ? 3 : 300) {
                let t0 = DispatchTime.now().uptimeNanoseconds
                _ = big.image.withFrameView { big.meter.process(frame: $0, frameId: UInt32(k), timeNanos: UInt64(k) * 33_333_333) }
                micros.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1000)
            }
            micros.sort()
            try write(["type": "timing", "mode": mode.rawValue, "width": 1280, "height": 720,
                       "process_us_p50": micros[micros.count / 2], "process_us_p95": micros[micros.count * 95 / 100]])
        }
    }
}
