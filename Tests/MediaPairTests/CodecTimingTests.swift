import PoseCastKit
import PoseMedia
import Publisher
import Subscriber
import RTCSession
import Synchronization
import TestSupport
import Testing

/// Per-frame codec timing over a real webrtcbin pair in one process (640×480@30 VP8):
/// every frame shown at the subscriber joins the publisher's record of the same frame
/// id with the same pose fingerprint and capture time, the times are in order, and the
/// latency profiles do what they say (the baseline's sink waits out the 200 ms jitter
/// buffer latency; the tuned one shows frames as they are decoded).
@Suite("codec timing and latency profiles", .serialized)
struct CodecTimingTests {
    static let framesRequired = 45

    @Test("encoded and shown frames join by id with their own pose", arguments: LatencyProfile.allCases)
    func framesJoin(profile: LatencyProfile) async throws {
        let generator = PoseGenerator()
        let encoded = Mutex<[UInt32: EncodedFrameTiming]>([:])
        let shown = Mutex<[ShownFrameTiming]>([])

        var pubConfig = PublisherMediaConfig()
        pubConfig.apply(profile)
        pubConfig.onEncoded = { t in encoded.withLock { $0[t.frameID] = t } }
        let publisher = try PublisherMedia(config: pubConfig) { id, t in generator.pose(frameID: id, captureTimeNanos: t) }
        var subConfig = SubscriberMediaConfig()
        subConfig.apply(profile)
        subConfig.onShown = { t in shown.withLock { $0.append(t) } }
        let subscriber = try SubscriberMedia(config: subConfig)
        try await publisher.start()
        try subscriber.start()
        let peer = try await publisher.addPeer(name: "timed")
        let link = LoopbackLink(publisher: peer, subscriber: subscriber)
        defer { link.cancel(); subscriber.stop(); publisher.removePeer(peer); publisher.stop() }
        _ = try await link.negotiate()
        try await waitUntil(60, "\(Self.framesRequired) shown frames", progress: {
            "\(shown.withLock { $0.count }) shown, \(encoded.withLock { $0.count }) encoded"
        }) { shown.withLock { $0.count } >= Self.framesRequired }

        let frames = shown.withLock { $0 }
        let records = encoded.withLock { $0 }
        var joined = 0, latencies: [Double] = []
        for f in frames {
            let id = try #require(f.frameID, "a shown frame without a pose")
            guard let e = records[id] else { continue }
            joined += 1
            #expect(e.poseHash == f.poseHash, "frame \(id): pose fingerprint differs")
            #expect(e.captureNanos == f.captureNanos, "frame \(id): capture time differs")
            let decoderIn = try #require(f.decoderInNanos), decoded = try #require(f.decodedNanos)
            #expect(e.captureNanos <= e.encoderInNanos && e.encoderInNanos < e.encoderOutNanos)
            #expect(e.encoderOutNanos <= decoderIn && decoderIn < decoded && decoded <= f.shownNanos)
            #expect(e.encodedBytes > 0)
            latencies.append(try #require(f.latencyMillis))
        }
        #expect(joined >= frames.count - 2, "every shown frame has its encode record (the first may predate the log)")
        // Skip the start-up frames: the baseline's jitter buffer fills first.
        let steady = latencies.dropFirst(15).sorted()
        let p50 = try #require(steady.isEmpty ? nil : steady[steady.count / 2])
        print("[\(profile)] shown \(frames.count), joined \(joined), latency p50 \(p50) ms")
        switch profile {
        case .baseline: #expect(p50 >= 150, "the synchronised sink waits out the jitter buffer latency")
        case .tuned: #expect(p50 < 150, "frames are shown as soon as they are decoded")
        }
    }
}
