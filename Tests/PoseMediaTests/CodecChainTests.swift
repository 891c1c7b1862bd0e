@testable import PoseMedia
import PoseCastKit
import RTCSession
import Synchronization
import TestSupport
import Testing

/// Component test: the pose meta crosses encoder → payloader (+extension) →
/// depayloader → decoder in one pipeline, no network, no webrtcbin.
@Suite("codec chain without network")
struct CodecChainTests {
    @Test("every decoded frame carries its own pose", arguments: VideoCodec.allCases)
    func metaSurvivesCodecChain(codec: VideoCodec) async throws {
        let frames = 90
        let generator = PoseGenerator()
        let sent = Mutex<[UInt32: FramePose]>([:])
        let received = Mutex<[DecodedFrame]>([])
        let chain = try OfflineCodecChain(codec: codec, frames: frames, poseSource: { id, t in
            generator.pose(frameID: id, captureTimeNanos: t)
        }, onAttached: { pose in sent.withLock { $0[pose.frameID] = pose } },
           onFrame: { frame in received.withLock { $0.append(frame) } })
        try await withTimeout(30, "end of stream") { try await chain.run() }

        let decoded = received.withLock { $0 }
        let poses = sent.withLock { $0 }
        let bad = decoded.filter { frame in
            guard let pose = frame.pose, let original = poses[pose.frameID] else { return true }
            return !pose.isBitwiseIdentical(to: original) || frame.stampedFrameID != pose.frameID
        }
        print("[\(codec) offline] frames sent: \(poses.count), decoded: \(decoded.count), mismatches: \(bad.count)")
        #expect(poses.count == frames)
        #expect(decoded.count == frames)
        #expect(bad.isEmpty)
    }

    @Test("OpenH264 as the H.264 encoder (the option beside x264): every frame decodes with its own pose")
    func openH264Chain() async throws {
        let sent = Mutex<[UInt32: FramePose]>([:])
        let received = Mutex<[DecodedFrame]>([])
        let generator = PoseGenerator()
        let chain = try OfflineCodecChain(codec: .h264, frames: 60, poseSource: { id, t in
            generator.pose(frameID: id, captureTimeNanos: t)
        }, onAttached: { pose in sent.withLock { $0[pose.frameID] = pose } },
           onFrame: { frame in received.withLock { $0.append(frame) } }, h264Encoder: .openh264)
        try await withTimeout(30, "end of stream") { try await chain.run() }
        let decoded = received.withLock { $0 }, poses = sent.withLock { $0 }
        #expect(decoded.count == 60)
        #expect(decoded.allSatisfy { f in f.pose.map { p in poses[p.frameID].map { p.isBitwiseIdentical(to: $0) } ?? false } ?? false })
        #expect(decoded.allSatisfy { $0.stampedFrameID == $0.pose?.frameID })
    }

    @Test("the H.264 level the offer declares holds the frame size, macroblock rate and bitrate")
    func h264Levels() {
        #expect(VideoCodec.levelIDC(width: 640, height: 480, fps: 30, bitrateKbps: 2000) == 30)
        #expect(VideoCodec.levelIDC(width: 1280, height: 720, fps: 30, bitrateKbps: 2000) == 31)
        // Tiny frames at a high rate: the bitrate decides (level 1.1 carries 192 kbit/s).
        #expect(VideoCodec.levelIDC(width: 64, height: 64, fps: 120, bitrateKbps: 2000) == 20)
        #expect(VideoCodec.levelIDC(width: 64, height: 64, fps: 120, bitrateKbps: 150) == 11)
        #expect(VideoCodec.h264.profileLevelID(width: 640, height: 480, fps: 30, bitrateKbps: 2000) == "42e01e")
        #expect(VideoCodec.vp8.profileLevelID(width: 640, height: 480, fps: 30, bitrateKbps: 2000) == nil)
        #expect(VideoCodec.levelString(30) == "3" && VideoCodec.levelString(31) == "3.1" && VideoCodec.levelString(11) == "1.1")
    }

    @Test("encoder options: set when the element takes them, a precise error when not")
    func encoderOptions() throws {
        try GStreamer.initialize()
        #expect(EncoderOption("cpu-used=12") == EncoderOption(name: "cpu-used", value: "12"))
        #expect(EncoderOption("a=b=c") == EncoderOption(name: "a", value: "b=c"))
        #expect(EncoderOption("=3") == nil && EncoderOption("cpu-used") == nil)
        let vp8 = try VideoCodec.vp8.makeEncoder(bitrateKbps: 800, keyframeInterval: 300)
        try VideoCodec.vp8.apply([EncoderOption(name: "cpu-used", value: "12"), EncoderOption(name: "end-usage", value: "vbr")], to: vp8)
        #expect(vp8.int("cpu-used") == 12)
        func message(_ option: String) -> String {
            do throws(RTCError) { try VideoCodec.vp8.apply([EncoderOption(option)!], to: vp8); return "" } catch { return "\(error)" }
        }
        #expect(message("nosuch=1").contains("vp8enc has no property nosuch"))
        #expect(message("cpu-used=99").contains("outside the range of vp8enc's cpu-used"))
        #expect(message("threads=many").contains("vp8enc's threads takes a"))
        #expect(vp8.int("cpu-used") == 12, "a refused value leaves the property as it was")
        // x264: the options go to the x264enc inside its bin, and so does the bitrate.
        let x264 = try VideoCodec.h264.makeEncoder(bitrateKbps: 800, keyframeInterval: 300, h264Encoder: .x264)
        try VideoCodec.h264.apply([EncoderOption(name: "threads", value: "2")], to: x264)
        VideoCodec.h264.setBitrate(650, on: x264)
        let inner = VideoCodec.h264.encoderElement(of: x264)
        #expect(inner.name == "x264" && inner.int("threads") == 2)
        #expect(inner.int("bitrate") == 650)   // kbit/s for x264enc
    }

    @Test("a corrupt pose element is rejected and counted while the frame still plays")
    func corruptPoseStillPlays() async throws {
        let received = Mutex<[DecodedFrame]>([])
        let chain = try OfflineCodecChain(codec: .vp8, frames: 30, poseSource: { id, t in
            PoseGenerator().pose(frameID: id, captureTimeNanos: t)
        }, onAttached: nil, onFrame: { frame in received.withLock { $0.append(frame) } },
           corruptEveryNth: 3)
        try await withTimeout(30, "end of stream") { try await chain.run() }
        let decoded = received.withLock { $0 }
        #expect(decoded.count == 30)
        #expect(decoded.filter { $0.poseError != nil }.count == 10)
        #expect(decoded.filter { $0.pose != nil }.count == 20)
        #expect(chain.rejections.byReason == ["unsupportedVersion": 10])
    }
}
