import Foundation
@testable import PoseMedia
import RTCSession
import Testing
import TestSupport

/// Pictures decoded by a one-shot pipeline: a good file at its size, and bad files
/// (corrupt, truncated, empty, missing) refused with a reason that names the file, fast,
/// not after the whole timeout.
@Suite("picture decoder")
struct PictureDecoderTests {
    /// A 64×48 PNG (or another size, or a JPEG) written by GStreamer's own encoder.
    static func writePNG(_ path: String, width: Int = 64, height: Int = 48, encoder: String = "pngenc") throws {
        let pipeline = try Pipeline(launch: "videotestsrc num-buffers=1 ! video/x-raw,width=\(width),height=\(height) ! \(encoder) ! filesink name=out",
                                    name: "png-writer")
        pipeline.element(named: "out")?.set("location", path)
        try pipeline.play()
        let deadline = Date().addingTimeInterval(5)
        while ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) < 100, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: 0.2)
        pipeline.stop()
    }

    @Test("the size a PNG's or a JPEG's header states, read before decoding; other bytes state none")
    func header() throws {
        let dir = NSTemporaryDirectory() + "headers-\(UUID().uuidString)/"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.writePNG(dir + "a.png", width: 320, height: 240)
        try Self.writePNG(dir + "b.jpg", width: 176, height: 144, encoder: "jpegenc")
        #expect(PictureHeader.read(dir + "a.png") == PictureHeader(width: 320, height: 240))
        #expect(PictureHeader.read(dir + "b.jpg") == PictureHeader(width: 176, height: 144))
        #expect(PictureHeader.parse(Array("GIF89a".utf8)) == nil)
        #expect(PictureHeader.parse([0xFF, 0xD8, 0xFF, 0xC0, 0x00]) == nil, "a start-of-frame cut short states nothing")
        #expect(PictureHeader(width: 8000, height: 6000).decodeTimeLimit == .seconds(17))
        #expect(PictureHeader(width: 640, height: 480).decodeTimeLimit < .seconds(6))
    }

    @Test("corrupt, truncated, empty and missing files are refused for their own reason, naming the file, not by the timeout")
    func bad() throws {
        let dir = NSTemporaryDirectory() + "pictures-\(UUID().uuidString)/"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.writePNG(dir + "good.png")
        let good = try Data(contentsOf: URL(fileURLWithPath: dir + "good.png"))
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: URL(fileURLWithPath: dir + "corrupt.png"))
        try good.prefix(good.count / 2).write(to: URL(fileURLWithPath: dir + "truncated.png"))
        try Data().write(to: URL(fileURLWithPath: dir + "empty.png"))
        for name in ["corrupt.png", "truncated.png", "empty.png", "missing.png"] {
            let started = Date()
            do {
                _ = try PictureDecoder.decode(dir + name)
                Issue.record("\(name) decoded")
            } catch {
                let seconds = Date().timeIntervalSince(started)
                print("picture decoder: \(name) refused in \(String(format: "%.2f", seconds)) s: \(error)")
                #expect(error.description.contains(dir + name), "\(error)")
                // Refused by what the decoder said, not by waiting out the 5 s timeout: the
                // reason tells, whatever the machine's load; how long decodebin takes to
                // give up on a file depends on it.
                #expect(!error.description.contains("no picture decoded within"), "\(name) waited out the timeout: \(error)")
                #expect(seconds < 5, "\(name) took \(seconds) s to refuse")
            }
        }
    }
}

/// A 48-megapixel picture: a few seconds of both cores to write and decode, so it runs
/// with the rendering suites, not beside the quick ones' timed webrtcbin pairs.
@Suite("picture decoder: a large picture", .tags(.rendering))
struct LargePictureTests {
    @Test("an 8000×6000 PNG is read (its time limit by its size); a header stating 20000×20000 is refused at once, saying the size")
    func huge() throws {
        let dir = NSTemporaryDirectory() + "huge-\(UUID().uuidString)/"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try PictureDecoderTests.writePNG(dir + "huge.png", width: 8000, height: 6000)
        let started = Date()
        let image = try PictureDecoder.decode(dir + "huge.png")
        print("picture decoder: 8000×6000 PNG decoded in \(String(format: "%.2f", Date().timeIntervalSince(started))) s")
        #expect(image.width == 8000 && image.height == 6000)
        // The good file's IHDR rewritten to 20000×20000 (its checksum no longer matches:
        // the refusal must come from the size, before any decoder reads it).
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "huge.png")).prefix(4096))
        bytes.replaceSubrange(16..<24, with: [0, 0, 0x4E, 0x20, 0, 0, 0x4E, 0x20])
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "bomb.png"))
        do {
            _ = try PictureDecoder.decode(dir + "bomb.png")
            Issue.record("a 20000×20000 header was decoded")
        } catch {
            #expect(error.description.contains(dir + "bomb.png") && error.description.contains("20000×20000"), "\(error)")
        }
    }

    @Test("a PNG decodes at its own size")
    func good() throws {
        let path = NSTemporaryDirectory() + "picture-\(UUID().uuidString).png"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try PictureDecoderTests.writePNG(path)
        let image = try PictureDecoder.decode(path)
        #expect(image.width == 64 && image.height == 48)
    }
}
