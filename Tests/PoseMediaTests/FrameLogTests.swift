import Foundation
import PoseMedia

import Testing

@Suite("frame log")
struct FrameLogTests {
    @Test("writes one JSON object per frame, nulls for what a frame lacks")
    func linesParse() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("framelog-\(UInt64.random(in: 0...UInt64.max)).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try FrameLog(path: path)
        log.record(EncodedFrameTiming(frameID: 7, captureNanos: 1_000_000_000, encoderInNanos: 1_004_000_000,
                                      encoderOutNanos: 1_009_500_000, encodedBytes: 1234, poseHash: 0xabc))
        log.record(ShownFrameTiming(frameID: 7, captureNanos: 1_000_000_000, poseHash: 0xabc, decoderInNanos: 1_010_000_000,
                                    decodedNanos: 1_011_250_000, shownNanos: 1_012_000_000))
        log.record(ShownFrameTiming(shownNanos: 2_000_000_000))
        log.close()
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3)
        let objects = try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects[0]["frameId"] as? Int == 7)
        #expect(objects[0]["encodeMs"] as? Double == 5.5)
        #expect(objects[0]["encodedBytes"] as? Int == 1234)
        #expect(objects[0]["poseHash"] as? String == "0000000000000abc")
        #expect(objects[1]["latencyMs"] as? Double == 12)
        #expect(objects[1]["decodeMs"] as? Double == 1.25)
        #expect(objects[1]["poseHash"] as? String == "0000000000000abc")
        #expect(objects[2]["frameId"] is NSNull)
        #expect(objects[2]["latencyMs"] is NSNull)
        #expect(objects[2]["shownNs"] as? Int == 2_000_000_000)
    }

    @Test("names the path when it cannot be written")
    func unwritablePath() {
        #expect(throws: FrameLogError.self) { try FrameLog(path: "/nonexistent-dir/frames.jsonl") }
    }
}
