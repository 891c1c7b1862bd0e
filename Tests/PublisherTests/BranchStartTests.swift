import PoseCastKit
import Publisher
import RTCSession
import TestSupport
import Testing

/// The start-up stall: a subscriber's branch linked to the tee before its
/// queue was running made the tee's next push fail with FLUSHING, which paused the
/// encoder queue's and the source's tasks for good while the pipeline stayed PLAYING.
@Suite("publisher branches", .serialized)
struct BranchStartTests {
    /// A started publisher of 64×64 test frames at `fps` (fast frames, little CPU).
    static func tinyPublisher(fps: Int) async throws -> PublisherMedia {
        var config = PublisherMediaConfig()
        config.source = .test(pattern: "ball")
        config.width = 64; config.height = 64; config.fps = fps
        let publisher = try PublisherMedia(config: config, poseSource: PublisherInputTests.poses)
        try await publisher.start()
        return publisher
    }

    @Test("branches added and removed while frames flow fast never stop the source")
    func branchesWhileFramesFlow() async throws {
        let publisher = try await Self.tinyPublisher(fps: 120)
        defer { publisher.stop() }
        var kept: [WebRTCPeer] = []
        for i in 0..<240 {
            let before = publisher.stats.framesTagged
            let peer = try await publisher.addPeer(name: "branch\(i)")
            // At least two frames through the tee after each link: a stalled source stops here.
            try await waitUntil(5, "frames to flow after branch \(i) was added",
                                progress: { "\(publisher.stats.framesTagged - before) frames" }) {
                publisher.stats.framesTagged >= before + 2
            }
            if i % 16 == 0 { kept.append(peer) } else { publisher.removePeer(peer) }
        }
        for peer in kept { publisher.removePeer(peer) }
        let before = publisher.stats.framesTagged
        try await waitUntil(5, "frames to flow after every branch left",
                            progress: { "\(publisher.stats.framesTagged - before) frames" }) {
            publisher.stats.framesTagged >= before + 30
        }
    }
}
