import ArgumentParser
import PoseCastKit
import SyntheticCamera

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Renders one frame from the orbit and writes it as a binary PPM (RGB converted from the
/// I420 the camera produces), for a human to look at.
struct Snapshot: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write one rendered frame as a binary PPM.")

    @Option(help: "Output file (.ppm).") var out: String
    @Option var width = 1280
    @Option var height = 720
    @Option(help: "Orbit angle, degrees (0: camera on +z looking towards −z).") var angle: Float = 0
    @Option(help: "Focus distance, metres.") var focus: Float = 3
    @Option(help: "Aperture: blur radius in pixels (at 640 wide) per dioptre of defocus.") var aperture: Float = 10
    @Option(help: "Linear exposure (1 nominal).") var exposure: Float = 1
    @Option(help: "Analogue gain (1 nominal; scales noise too).") var gain: Float = 1
    @Option(help: "White balance, kelvin (the scene is lit at 5500 K).") var kelvin: Float = 5500
    @Option(help: "Sensor noise sigma, 8-bit levels.") var noise: Float = 1.5
    @Option(help: "Frame index (selects the noise pattern).") var frame: UInt64 = 0

    func run() throws {
        let renderer = try SyntheticRenderer(width: width, height: height)
        let lens = LensState(focusDistance: focus, aperture: aperture, exposure: exposure, gain: gain,
                             whiteBalanceKelvin: kelvin, noise: noise)
        let camera = SceneOrbit.camera(angleDegrees: angle, width: width, height: height)
        let image = try renderer.render(camera: camera, lens: lens, frameIndex: frame)
        let bytes = image.ppm()
        guard let file = fopen(out, "wb") else { throw ValidationError("cannot open \(out) for writing") }
        defer { fclose(file) }
        guard fwrite(bytes, 1, bytes.count, file) == bytes.count else { throw ValidationError("short write to \(out)") }
    }
}
