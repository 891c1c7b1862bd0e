import CameraControl
import Testing

/// The capture mode chosen for the size and rate the publisher sends, against the modes
/// of a UVC webcam of the common kind (raw YUYV slow at large sizes, MJPEG at 30 fps up
/// to 1080p).
@Suite("capture format choice")
struct CaptureFormatChoiceTests {
    typealias Rate = CaptureMode.Rate
    static func raw(_ w: Int, _ h: Int, _ rates: [Int]) -> CaptureMode {
        CaptureMode(encoding: .raw(format: "YUY2"), width: w, height: h, rates: rates.map { Rate($0) })
    }
    static func mjpeg(_ w: Int, _ h: Int, _ rates: [Int]) -> CaptureMode {
        CaptureMode(encoding: .mjpeg, width: w, height: h, rates: rates.map { Rate($0) })
    }
    /// Raw 640×480 and smaller at 30 fps, 1280×720 at 10, 1920×1080 at 5; MJPEG at 30 to 1080p.
    static let webcam: [CaptureMode] = [
        raw(1920, 1080, [5]), raw(1280, 720, [10, 5]), raw(960, 720, [15, 10]), raw(800, 600, [24, 20, 15]),
        raw(640, 480, [30, 24, 15]), raw(640, 360, [30, 15]), raw(320, 240, [30]),
        mjpeg(1920, 1080, [30, 24, 15]), mjpeg(1280, 720, [30, 24, 15]), mjpeg(960, 720, [30]),
        mjpeg(800, 600, [30]), mjpeg(640, 480, [30]), mjpeg(640, 360, [30]),
        CaptureMode(encoding: .other(mediaType: "video/x-h264"), width: 1920, height: 1080, rates: [Rate(30)]),
    ]

    @Test("1280×720 at 30 fps: MJPEG, because raw gives only 10 fps there")
    func mjpegWhereRawIsSlow() throws {
        let choice = try #require(CaptureFormatChoice.choose(from: Self.webcam, width: 1280, height: 720, fps: 30))
        #expect(choice.mode == Self.mjpeg(1280, 720, [30, 24, 15]))
        #expect(choice.rate == Rate(30))
        #expect(choice.reason.contains("raw YUY2 gives 10 fps"))
        #expect(!choice.scaled(width: 1280, height: 720))
    }

    @Test("640×480 and 640×360 at 30 fps: raw at the exact size (nothing to decode)", arguments: [(640, 480), (640, 360)])
    func rawWhereItIsFastEnough(_ size: (Int, Int)) throws {
        let choice = try #require(CaptureFormatChoice.choose(from: Self.webcam, width: size.0, height: size.1, fps: 30))
        #expect(choice.mode.encoding == .raw(format: "YUY2"))
        #expect(choice.mode.width == size.0 && choice.mode.height == size.1)
    }

    @Test("1080p at 30 fps: MJPEG; at 5 fps raw is enough")
    func largest() throws {
        let fast = try #require(CaptureFormatChoice.choose(from: Self.webcam, width: 1920, height: 1080, fps: 30))
        #expect(fast.mode.encoding == .mjpeg && fast.mode.width == 1920)
        let slow = try #require(CaptureFormatChoice.choose(from: Self.webcam, width: 1920, height: 1080, fps: 5))
        #expect(slow.mode.encoding == .raw(format: "YUY2") && slow.mode.width == 1920 && slow.rate == Rate(5))
    }

    @Test("raw 800×600 at 24 fps asks the device for 24, not its fastest 30 of another mode")
    func lowestRateThatServes() throws {
        let choice = try #require(CaptureFormatChoice.choose(from: Self.webcam, width: 800, height: 600, fps: 24))
        #expect(choice.mode == Self.raw(800, 600, [24, 20, 15]) && choice.rate == Rate(24))
    }

    @Test("a size the camera does not offer: the smallest mode that covers it at the same aspect, scaled down")
    func coveringSize() throws {
        let choice = try #require(CaptureFormatChoice.choose(from: Self.webcam, width: 720, height: 540, fps: 30))
        // 800×600 MJPEG (4:3, covers) rather than 1280×720 (16:9) or raw 800×600 at 24 fps.
        #expect(choice.mode == Self.mjpeg(800, 600, [30]))
        #expect(choice.scaled(width: 720, height: 540) && choice.reason.contains("scaled to 720x540"))
    }

    @Test("no mode reaches the rate: the fastest that covers the size, and the reason says so")
    func nothingFastEnough() throws {
        let choice = try #require(CaptureFormatChoice.choose(from: Self.webcam, width: 1280, height: 720, fps: 60))
        #expect(choice.mode.encoding == .mjpeg && choice.mode.width == 1280 && choice.rate == Rate(30))
        #expect(choice.reason.contains("no mode reaches 60 fps"))
    }

    @Test("29.97 fps serves 30, asked back as the device's own fraction")
    func ntscRate() throws {
        let modes = [CaptureMode(encoding: .raw(format: "NV12"), width: 1280, height: 720, rates: [Rate(30000, 1001), Rate(15)])]
        let choice = try #require(CaptureFormatChoice.choose(from: modes, width: 1280, height: 720, fps: 30))
        #expect(choice.rate == Rate(30000, 1001))
    }

    @Test("a camera that gives only H.264, or nothing, has no choice")
    func nothingUsable() {
        #expect(CaptureFormatChoice.choose(from: [Self.webcam.last!], width: 640, height: 480, fps: 30) == nil)
        #expect(CaptureFormatChoice.choose(from: [], width: 640, height: 480, fps: 30) == nil)
    }

    @Test("a camera smaller than asked: its largest fast mode, scaled up, and said")
    func smallCamera() throws {
        let choice = try #require(CaptureFormatChoice.choose(from: [Self.raw(640, 480, [30]), Self.raw(320, 240, [30])],
                                                             width: 1280, height: 720, fps: 30))
        #expect(choice.mode.width == 640 && choice.reason.contains("scaled up"))
    }
}
