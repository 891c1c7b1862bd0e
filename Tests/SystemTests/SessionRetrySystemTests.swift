import Foundation
import Logging
import Signaling
import Testing
import TestSupport

/// A session that ends without a picture on the subscriber's side is not left to the
/// server's idle timeout: the real `posecast-subscriber` against a publisher on the real
/// signaling server whose first offer cannot be answered. The subscriber must end that
/// session, say why, and ask the publisher for a new one by itself within seconds.
@Suite("system: a subscriber asks again after a failed answer", .serialized, .tags(.system))
struct SessionRetrySystemTests {
    @Test("an offer that cannot be answered: the session ends, and the subscriber asks for another within 4 s")
    func askAgainAfterFailedAnswer() async throws {
        let (signaling, url) = try await ManagedProcess.startSignaling()
        // The publisher's side of signaling, by hand: it offers what no one can answer.
        let publisher = try await SignalingClient.connect(url: url, logger: Logger(label: "fake-publisher"))
        defer { publisher.close() }
        try publisher.send(.setPeerStatus(PeerStatus(roles: [.producer], room: "default", role: .publisher)))
        let subscriber = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url], name: "subscriber")

        // Each session request the subscriber makes, with when it came; the first gets an offer that cannot be answered.
        let starts = try await withTimeout(20, "two session requests from the subscriber") { () -> [(sessionId: String, at: Date)] in
            var starts: [(sessionId: String, at: Date)] = []
            for await message in publisher.messages {
                guard case let .startSession(_, sessionId, _, _) = message else { continue }
                starts.append((sessionId, Date()))
                if starts.count == 2 { break }
                try publisher.send(.peer(PeerMessage(sessionId: sessionId,
                                                     payload: .sdp(SignalingSDP(type: "offer", sdp: "v=0\r\nnot an offer\r\n")))))
            }
            return starts
        }
        try #require(starts.count == 2, "the subscriber asked for \(starts.count) session(s); its stderr:\n\(subscriber.stderrTail)")
        let first = starts[0].sessionId
        let (ended, _) = try await subscriber.waitForEvent("the first session ended", timeout: 5) {
            $0.is(.sessionEnded) && $0.string("sessionId") == first
        }
        #expect((ended.string("reason") ?? "").hasPrefix("could not answer"), "\(ended)")
        let gap = starts[1].at.timeIntervalSince(starts[0].at)
        print("failed answer: asked again \(String(format: "%.2f", gap)) s after the first session started")
        #expect(gap < 4, "asked again after \(gap) s (the server's idle timeout would have taken 38 s)")
        subscriber.send("quit")
        _ = try await subscriber.waitForExit(timeout: 10)
        signaling.signal(SIGTERM)
        _ = try await signaling.waitForExit(timeout: 10)
    }
}
