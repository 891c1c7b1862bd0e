@testable import Subscriber
import Testing

/// The size the expert's window scales each frame to (`PictureFit`).
@Suite("subscriber: the picture's fit in the window")
struct PictureFitTests {
    @Test("the picture fills the window's width or height with its aspect ratio kept, in whole pixels")
    func letterboxed() {
        #expect(PictureFit(source: (640, 480), window: (640, 480)) == PictureFit(width: 640, height: 480))
        // Wider window: full height, pillarboxed.
        #expect(PictureFit(source: (640, 480), window: (1000, 600)) == PictureFit(width: 800, height: 600))
        // Taller window: full width, letterboxed.
        #expect(PictureFit(source: (640, 480), window: (300, 500)) == PictureFit(width: 300, height: 225))
        // A 320×240 stream in a 400×300 window is scaled up, not shown small.
        #expect(PictureFit(source: (320, 240), window: (400, 300)) == PictureFit(width: 400, height: 300))
        // Rounded to the nearest pixel: 16:9 in 401 × 401.
        #expect(PictureFit(source: (1280, 720), window: (401, 401)) == PictureFit(width: 401, height: 226))
    }

    @Test("non-square pixels are shown at their display aspect ratio")
    func pixelAspect() {
        // 720×576 with 16:15 pixels is 4:3 on screen.
        #expect(PictureFit(source: (720, 576), pixelAspect: (16, 15), window: (800, 800)) == PictureFit(width: 800, height: 600))
    }

    @Test("a degenerate size gives at least one pixel, never zero or a division by zero")
    func degenerate() {
        #expect(PictureFit(source: (0, 0), window: (640, 480)) == PictureFit(width: 640, height: 480))
        #expect(PictureFit(source: (640, 480), window: (0, 0)) == PictureFit(width: 1, height: 1))
        #expect(PictureFit(source: (10_000, 1), window: (640, 480)) == PictureFit(width: 640, height: 1))
        #expect(PictureFit(source: (640, 480), pixelAspect: (0, 1), window: (640, 480)) == PictureFit(width: 640, height: 480))
    }
}
