import Foundation
import TestSupport
import Testing

/// TURN with a real relay: Debian's coturn on loopback with a user and a
/// password, the publisher and a subscriber both relay-only (`--ice-transport-policy
/// relay`), so media can only flow through the relay. A subscriber with a wrong password
/// gets nothing: the policy leaves it no other way.
@Suite("system: TURN relay (coturn)", .serialized,
       .enabled(if: FileManager.default.isExecutableFile(atPath: Coturn.binary),
                "needs coturn's /usr/bin/turnserver (apt: coturn; scripts/setup installs it)"), .tags(.system))
struct TURNSystemTests {
    @Test("relay-only publisher and subscriber through coturn (the subscriber's credentials from a file): posed frames flow, both sides report a relay pair and accepted credentials, coturn saw the allocations; a wrong password is named refused at start and gets no media")
    func relayOnly() async throws {
        let dir = NSTemporaryDirectory() + "posecast-turn-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let coturn = try await Coturn.start(directory: dir)
        let turn = coturn.process
        defer { turn.signal(SIGTERM) }
        let (url, port) = (coturn.url, coturn.port)

        let signaling = try ManagedProcess("posecast-signaling", ["--port", "0"], name: "signaling")
        defer { signaling.signal(SIGTERM) }
        let (line, _) = try await signaling.waitForLine("listening line", timeout: 20) { $0.hasPrefix("listening ") }
        let signalingURL = String(line.dropFirst("listening ".count))
        let publisher = try ManagedProcess("posecast-publisher", [
            "--source", "synthetic", "--signaling", signalingURL, "--json", "--turn", url, "--ice-transport-policy", "relay",
            "--setup-timeout", "8"], name: "publisher")
        defer { publisher.signal(SIGTERM) }
        try await publisher.waitForEvent("publisher registered", timeout: 30) { $0.is(.signalingConnected) }

        // The subscriber's credentials in a file only it reads, not on its command line.
        let credentials = dir + "/turn-credentials"
        try "posecast:\(coturn.password)\n".write(toFile: credentials, atomically: true, encoding: .utf8)
        chmod(credentials, 0o600)
        let subscriber = try ManagedProcess("posecast-subscriber", [
            "--headless", "--json", "--signaling", signalingURL, "--turn", "turn://127.0.0.1:\(port)",
            "--turn-credentials", credentials, "--ice-transport-policy", "relay"], name: "subscriber")
        defer { subscriber.signal(SIGTERM) }
        let (status, _) = try await subscriber.waitForEvent("posed frames through the relay", timeout: 40) {
            $0.is(.status) && $0.int("frames_with_pose") >= 60
        }
        #expect(status.int("pose_pct") == 100)
        let (subscriberRoute, _) = try await subscriber.waitForEvent("the subscriber's media route", timeout: 10) { $0.is(.mediaRoute) }
        let (publisherRoute, _) = try await publisher.waitForEvent("the publisher's media route", timeout: 10) { $0.is(.mediaRoute) }
        print("TURN: subscriber \(subscriberRoute.string("local") ?? "?") \(subscriberRoute.string("localAddress") ?? "") ↔ "
              + "\(subscriberRoute.string("remote") ?? "?") \(subscriberRoute.string("remoteAddress") ?? ""); publisher "
              + "\(publisherRoute.string("local") ?? "?") ↔ \(publisherRoute.string("remote") ?? "?")")
        for route in [subscriberRoute, publisherRoute] {
            #expect(route.string("local") == "relay", "\(route)")
            #expect(route.string("remote") == "relay", "\(route)")
        }
        // coturn's own word: allocations for our user, and permissions for peers.
        #expect(turn.output.contains { $0.contains("username=<posecast>") && $0.contains("new") }, "coturn logged no allocation")

        // A wrong password: no relay candidate, and the policy allows nothing else.
        let mark = publisher.output.count
        let stranger = try ManagedProcess("posecast-subscriber", [
            "--headless", "--json", "--signaling", signalingURL, "--turn", "turn://posecast:wrong@127.0.0.1:\(port)",
            "--ice-transport-policy", "relay"], name: "wrong password")
        defer { stranger.signal(SIGTERM) }
        let (named, _) = try await stranger.waitForEvent("the wrong password named at start", timeout: 10) { $0.is(.turnServer) }
        #expect(named.string("state") == "refused" && named.string("details")?.contains("401") == true, "\(named)")
        for process in [publisher, subscriber] {
            #expect(process.events.contains { $0.is(.turnServer) && $0.string("state") == "accepted" }, "\(process.name): credentials not checked")
        }
        let (ended, _) = try await publisher.waitForEvent("the publisher gives up on the session without a relay", timeout: 30, after: mark) {
            $0.is(.sessionEnded)
        }
        print("TURN: wrong password: \(ended.string("reason") ?? "?")")
        #expect(!stranger.events.contains { $0.is(.status) && $0.int("frames") > 0 }, "frames reached a subscriber with no relay")
        #expect(!stranger.events.contains { $0.is(.connected) })
        // The honest subscriber plays on.
        let (later, _) = try await subscriber.waitForEvent("the honest subscriber still plays", timeout: 10, after: subscriber.output.count) {
            $0.is(.status)
        }
        #expect(later["fps"] as? Double ?? 0 >= 25)
    }
}
