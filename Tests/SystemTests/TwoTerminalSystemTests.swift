import Foundation
import Testing
import TestSupport

/// The real executables on loopback: signaling server, publisher (test source) and
/// two headless subscribers, as a user would run them. Every wait has a time limit.
@Suite("system: signaling + publisher + two subscribers", .serialized, .tags(.system))
struct TwoTerminalSystemTests {
    @Test("both subscribers receive posed frames, a tap is acknowledged, a killed subscriber rejoins")
    func fullSession() async throws {
        let signaling = try ManagedProcess("posecast-signaling", ["--port", "0"], name: "signaling")
        let (listening, _) = try await signaling.waitForLine("listening line", timeout: 20) { $0.hasPrefix("listening ") }
        let url = String(listening.dropFirst("listening ".count))

        let publisher = try ManagedProcess("posecast-publisher",
                                           ["--source", "test", "--signaling", url, "--json"], name: "publisher")
        try await publisher.waitForEvent("publisher registered", timeout: 20) { $0.is(.signalingConnected) }

        func startSubscriber(_ name: String) throws -> ManagedProcess {
            try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url], name: name)
        }
        /// Waits until `subscriber` has decoded ≥ 30 frames since `after`, all with a pose.
        func expectPosedFrames(_ subscriber: ManagedProcess, after: Int = 0) async throws {
            let (status, _) = try await subscriber.waitForEvent("30 decoded frames with pose", timeout: 40, after: after) {
                $0.is(.status) && $0.int("frames_with_pose") >= 30
            }
            #expect(status.int("frames") == status.int("frames_with_pose"), "every decoded frame carries a pose: \(status)")
            #expect(status.int("rejected_poses") == 0)
        }

        let expertA = try startSubscriber("expert A")
        let expertB = try startSubscriber("expert B")
        try await expectPosedFrames(expertA)
        try await expectPosedFrames(expertB)
        try await expertA.waitForEvent("control channel", timeout: 10) { $0.is(.controlOpen) }
        // The jitter buffer starts at 300 ms on a path not known yet; the publisher's echo
        // of the first reception reports tells the loopback's round trip, and it goes to
        // three of it plus 40 ms, at least the tuned profile's 50.
        for expert in [expertA, expertB] {
            let (jitter, _) = try await expert.waitForEvent("jitter latency from the echoed round trip", timeout: 10) {
                $0.is(.jitterLatency)
            }
            let rtt = (jitter["retransmissionRoundTripMs"] as? NSNumber)?.doubleValue ?? 999
            #expect(rtt < 20, "a loopback round trip: \(jitter)")
            #expect(abs(Double(jitter.int("latencyMs")) - max(50, 3 * rtt + 40)) <= 1, "\(jitter)")
        }

        // A scripted tap reaches the publisher, is acknowledged, and both experts get the list.
        let markA = expertA.output.count, markB = expertB.output.count
        expertA.send("tap 0.5 0.5 valve")
        let (sent, _) = try await expertA.waitForEvent("annotate request sent", timeout: 10, after: markA) {
            $0.is(.requestSent) && $0.string("type") == "annotate"
        }
        let requestId = try #require(sent.string("id"))
        let (ack, _) = try await expertA.waitForEvent("ack of \(requestId)", timeout: 10, after: markA) {
            $0.is(.ack) && $0.string("id") == requestId
        }
        let annotationId = try #require(ack.string("annotationId"))
        try await publisher.waitForEvent("publisher saw the annotate", timeout: 10) {
            $0.is(.control) && $0.string("request") == "annotate"
        }
        for expert in [expertA, expertB] {
            try await expert.waitForEvent("annotation list with \(annotationId)", timeout: 10, after: expert === expertA ? markA : markB) {
                $0.is(.annotations) && ($0["ids"] as? [String]) == [annotationId]
            }
        }
        // Camera control is not there yet: refused with a precise error, session goes on.
        let markFocus = expertA.output.count
        expertA.send("focus 0.2 0.3 tapToLockFocus")
        let (refusal, _) = try await expertA.waitForEvent("focus refused", timeout: 10, after: markFocus) {
            $0.is(.error)
        }
        #expect(refusal.string("code") == "unsupported")

        // Expert B is killed outright: the publisher frees its session; B comes back.
        let markPublisher = publisher.output.count
        expertB.signal(SIGKILL)
        _ = try await expertB.waitForExit(timeout: 10)
        try await publisher.waitForEvent("session of the killed subscriber ended", timeout: 15, after: markPublisher) {
            $0.is(.sessionEnded)
        }
        try await publisher.waitForEvent("one subscriber left", timeout: 10, after: markPublisher) {
            $0.is(.status) && $0.int("sessions") == 1
        }
        let expertB2 = try startSubscriber("expert B (restarted)")
        try await expectPosedFrames(expertB2)
        try await expertB2.waitForEvent("annotation list on join", timeout: 10) {
            $0.is(.annotations) && ($0["ids"] as? [String]) == [annotationId]
        }
        try await publisher.waitForEvent("two subscribers again", timeout: 10, after: markPublisher) {
            $0.is(.status) && $0.int("subscribers") == 2
        }
        // A is still receiving after all this.
        try await expectPosedFrames(expertA, after: expertA.output.count)

        // Clean stop: quit command, then SIGTERM; each exits 0 within its limit.
        expertA.send("quit")
        try await expertA.expectCleanExit(timeout: 15)
        expertB2.signal(SIGTERM)
        try await expertB2.expectCleanExit(timeout: 15)
        publisher.signal(SIGTERM)
        try await publisher.expectCleanExit(timeout: 15)
        signaling.signal(SIGTERM)
        try await signaling.expectCleanExit(timeout: 15)
    }
}
