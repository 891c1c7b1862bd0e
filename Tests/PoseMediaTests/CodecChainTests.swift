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
