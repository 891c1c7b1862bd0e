import Foundation
@testable import PoseMedia
import RTCSession
import Testing

/// Pictures decoded by a one-shot pipeline: a good file at its size, and bad files
/// (corrupt, truncated, empty, missing) refused with a reason that names the file, fast,
/// not after the whole timeout.
@Suite("picture decoder")
struct PictureDecoderTests {
    /// A 64×48 PNG written by GStreamer's own encoder.
    static func writePNG(_ path: String) throws {
        let pipeline = try Pipeline(launch: "videotestsrc num-buffers=1 ! video/x-raw,width=64,height=48 ! pngenc ! filesink name=out",
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

    @Test("a PNG decodes at its own size")
    func good() throws {
        let path = NSTemporaryDirectory() + "picture-\(UUID().uuidString).png"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.writePNG(path)
        let image = try PictureDecoder.decode(path)
        #expect(image.width == 64 && image.height == 48)
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
