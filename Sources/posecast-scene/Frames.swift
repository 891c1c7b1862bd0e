import Imaging
import ArgumentParser
import PoseCastKit
import SyntheticCamera

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Renders frames along the orbit into one file of raw I420 frames, for trying encoders
/// on the synthetic video, e.g.
/// `gst-launch-1.0 filesrc location=orbit.i420 ! rawvideoparse width=640 height=480 format=i420 framerate=30/1 ! vp8enc target-bitrate=2000000 deadline=1 ! webmmux ! filesink location=orbit.webm`.
struct Frames: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write frames along the orbit as raw I420 (for encoder experiments).")

    @Option(help: "Output file (raw I420 frames back to back).") var out: String
    @Option var width = 640
    @Option var height = 480
    @Option var frames = 90
    @Option(help: "Focus distance, metres.") var focus: Float = 3

    func run() throws {
        let renderer = try SyntheticRenderer(width: width, height: height)
        guard let file = fopen(out, "wb") else { throw ValidationError("cannot open \(out) for writing") }
        defer { fclose(file) }
        var image = try I420Image(width: width, height: height)
        for i in 0..<frames {
            let camera = SceneOrbit.camera(angleDegrees: Float(i), width: width, height: height)
            try image.withPlanes { try renderer.render(camera: camera, lens: LensState(focusDistance: focus), frameIndex: UInt64(i), into: $0) }
            guard fwrite(image.bytes, 1, image.bytes.count, file) == image.bytes.count else { throw ValidationError("short write to \(out)") }
        }
    }
}
