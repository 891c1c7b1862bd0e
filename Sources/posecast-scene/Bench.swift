import Imaging
import ArgumentParser
import PoseCastKit
import SyntheticCamera

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Renders frames along the orbit (30°/s at 30 fps) as fast as it can and prints one
/// JSON line of timings. Pin it to a core (`taskset -c 0`) to measure one core.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Time the renderer along the orbit; prints {\"width\",\"height\",\"frames\",\"ms_p50\",\"ms_p95\",\"fps\"}.")

    @Option var width = 1280
    @Option var height = 720
    @Option(help: "Frames to time (after 10 warm-up frames).") var frames = 300
    @Option(help: "Focus distance, metres.") var focus: Float = 3

    func validate() throws {
        guard frames > 0 else { throw ValidationError("--frames must be positive") }
    }

    func run() throws {
        let renderer = try SyntheticRenderer(width: width, height: height)
        var image = try I420Image(width: width, height: height)
        var lens = LensState()
        lens.focusDistance = focus
        var times: [Double] = []
        times.reserveCapacity(frames)
        var total = 0.0
        // 30°/s at 30 fps: one degree per frame.
        let degreesPerFrame: Float = 30 / 30
        for i in -10..<frames {
            let camera = SceneOrbit.camera(angleDegrees: Float(i) * degreesPerFrame, width: width, height: height)
            let start = MonotonicClock.nanos()
            try image.withPlanes { planes in
                try renderer.render(camera: camera, lens: lens, frameIndex: UInt64(bitPattern: Int64(i)), into: planes)
            }
            let elapsed = Double(MonotonicClock.nanos() - start) * 1e-9
            if i >= 0 { times.append(elapsed * 1000); total += elapsed }
        }
        times.sort()
        func percentile(_ p: Double) -> Double { times[min(Int((Double(times.count - 1) * p).rounded()), times.count - 1)] }
        func fixed(_ v: Double) -> String { String(Double((v * 100).rounded()) / 100) }
        print("{\"width\":\(width),\"height\":\(height),\"frames\":\(frames),\"ms_p50\":\(fixed(percentile(0.5))),"
              + "\"ms_p95\":\(fixed(percentile(0.95))),\"fps\":\(fixed(Double(frames) / total))}")
    }
}
