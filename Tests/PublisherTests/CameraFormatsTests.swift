import CameraControl
import Foundation
import Publisher
import RTCSession
import Testing

/// A webcam's modes read from its caps as `v4l2src` reports them, and the capture chain
/// for the choice.
@Suite("camera formats")
struct CameraFormatsTests {
    /// `gst-device-monitor-1.0 Video/Source` of a 1080p UVC webcam of the common kind
    /// (one line per caps structure, as it prints them): raw YUY2 slow above 640×480,
    /// MJPEG at 30 fps up to 1080p, an H.264 stream the publisher does not use.
    static let recordedCaps = """
        video/x-raw, format=(string)YUY2, width=(int)1920, height=(int)1080, pixel-aspect-ratio=(fraction)1/1, framerate=(fraction)5/1; \
        video/x-raw, format=(string)YUY2, width=(int)1280, height=(int)720, pixel-aspect-ratio=(fraction)1/1, framerate=(fraction){ 10/1, 15/2, 5/1 }; \
        video/x-raw, format=(string)YUY2, width=(int)960, height=(int)720, pixel-aspect-ratio=(fraction)1/1, framerate=(fraction){ 15/1, 10/1, 5/1 }; \
        video/x-raw, format=(string)YUY2, width=(int)640, height=(int)480, pixel-aspect-ratio=(fraction)1/1, framerate=(fraction){ 30/1, 24/1, 20/1, 15/1, 10/1, 5/1 }; \
        video/x-raw, format=(string)YUY2, width=(int)640, height=(int)360, pixel-aspect-ratio=(fraction)1/1, framerate=(fraction){ 30/1, 24/1, 20/1, 15/1, 10/1, 5/1 }; \
        video/x-raw, format=(string)YUY2, width=(int)320, height=(int)240, pixel-aspect-ratio=(fraction)1/1, framerate=(fraction){ 30/1, 24/1, 20/1, 15/1, 10/1, 5/1 }; \
        image/jpeg, width=(int)1920, height=(int)1080, pixel-aspect-ratio=(fraction)1/1, framerate=(fraction){ 30/1, 24/1, 20/1, 15/1, 10/1, 5/1 }; \
        image/jpeg, width=(int)1280, height=(int)720, pixel-aspect-ratio=(fraction)1/1, framerate=(fraction){ 30/1, 24/1, 20/1, 15/1, 10/1, 5/1 }; \
        image/jpeg, width=(int)640, height=(int)480, pixel-aspect-ratio=(fraction)1/1, framerate=(fraction){ 30/1, 24/1, 20/1, 15/1, 10/1, 5/1 }; \
        image/jpeg, width=(int)640, height=(int)480, pixel-aspect-ratio=(fraction)1/1, framerate=(fraction){ 30/1, 24/1, 20/1, 15/1, 10/1, 5/1 }, colorimetry=(string)bt601; \
        video/x-h264, stream-format=(string)byte-stream, alignment=(string)au, width=(int)1920, height=(int)1080, pixel-aspect-ratio=(fraction)1/1, framerate=(fraction){ 30/1, 24/1 }; \
        video/x-raw, format=(string){ NV12, YUY2 }, width=(int)[ 160, 1280, 2 ], height=(int)[ 120, 720, 2 ], framerate=(fraction)[ 1/1, 60/1 ]
        """

    init() throws { try GStreamer.initialize() }

    @Test("the recorded webcam's caps become its modes: lists, duplicates, ranges and other encodings")
    func modes() throws {
        let modes = try #require(CameraFormats.modes(capsText: Self.recordedCaps))
        // 6 raw + 3 MJPEG (the bt601 duplicate once) + H.264 + the stepwise range's largest in 2 formats.
        #expect(modes.count == 12)
        let raw720 = try #require(modes.first { $0.encoding == .raw(format: "YUY2") && $0.width == 1280 && $0.maxRate == 10 })
        #expect(raw720.rates == [.init(10), .init(15, 2), .init(5)])
        #expect(modes.contains(CaptureMode(encoding: .raw(format: "NV12"), width: 1280, height: 720, rates: [.init(60)])))
        #expect(modes.filter { !$0.usable }.map(\.encoding) == [.other(mediaType: "video/x-h264")])
        #expect(CameraFormats.modes(capsText: "not caps at all {") == nil)
    }

    @Test("1280×720 at 30 fps from the recorded list: MJPEG, asked of v4l2src and decoded")
    func mjpegChosen() throws {
        let modes = try #require(CameraFormats.modes(capsText: Self.recordedCaps.components(separatedBy: "; ").dropLast().joined(separator: "; ")))
        let choice = try #require(CaptureFormatChoice.choose(from: modes, width: 1280, height: 720, fps: 30))
        #expect(choice.mode.encoding == .mjpeg && choice.reason.contains("raw YUY2 gives 10 fps"))
        #expect(CameraFormats.capsText(choice) == "image/jpeg,width=1280,height=720,framerate=30/1")
        let raw = try #require(CaptureFormatChoice.choose(from: modes, width: 640, height: 480, fps: 30))
        #expect(CameraFormats.capsText(raw) == "video/x-raw,format=YUY2,width=640,height=480,framerate=30/1")
    }

    @Test("a path that is not a camera is refused by name, not captured from")
    func notACamera() {
        for path in ["/dev/null", "/nonexistent/video9"] {
            do {
                _ = try CameraFormats.probe(device: path)
                Issue.record("\(path) was probed as a camera")
            } catch {
                switch error {
                case .deviceMissing(let named, _): #expect(named == path && path.hasPrefix("/nonexistent"))
                case .invalidArgument(let text): #expect(text.contains(path) && text.contains("not a camera"))
                default: Issue.record("wrong error: \(error)")
                }
            }
        }
    }
}
