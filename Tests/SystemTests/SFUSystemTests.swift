import Foundation
import NodeOutput
import Testing
import TestSupport

/// A private network for Janus and its peers: Janus ignores loopback for media, and the
/// tests never use the machine's real interface. One network namespace with a veth pair
/// (10.77.x.1 and 10.77.x.2, `lo` up); every process of the test runs in it through
/// `ip netns exec`. Removed at the end (its processes are gone by then).
struct SFUNetwork {
    let name: String
    let address: String

    /// Nil, with the reason, where namespaces or Janus are unavailable.
    static func make() throws -> (SFUNetwork?, String?) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/janus") else {
            return (nil, "janus is not installed (scripts/setup installs Debian's janus)")
        }
        let n = Int.random(in: 10...250)
        let name = "posecast-sfu-\(getpid())-\(n)"
        let steps = [
            ["netns", "add", name],
            ["-n", name, "link", "set", "lo", "up"],
            ["-n", name, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
            ["-n", name, "addr", "add", "10.77.\(n).1/24", "dev", "v0"],
            ["-n", name, "addr", "add", "10.77.\(n).2/24", "dev", "v1"],
            ["-n", name, "link", "set", "v0", "up"],
            ["-n", name, "link", "set", "v1", "up"],
        ]
        for step in steps {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            p.arguments = step
            p.standardError = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            if p.terminationStatus != 0 {
                _ = try? SFUNetwork(name: name, address: "").remove()
                return (nil, "network namespaces are refused here (`ip \(step.joined(separator: " "))` failed)")
            }
        }
        return (SFUNetwork(name: name, address: "10.77.\(n).1"), nil)
    }

    func remove() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        p.arguments = ["netns", "delete", name]
        try p.run()
        p.waitUntilExit()
    }

    /// One of the project's executables (or a path) inside the namespace.
    func process(_ executable: String, _ arguments: [String], name: String) throws -> ManagedProcess {
        let path = executable.hasPrefix("/") ? executable : ManagedProcess.binDirectory.appendingPathComponent(executable).path
        return try ManagedProcess("/usr/sbin/ip", ["netns", "exec", self.name, path] + arguments, name: name)
    }
}

/// The pose through an SFU (issue 20): publisher → Janus VideoRoom → subscribers, all in a
/// private network namespace. Janus forwards the payload but no header extension of ours,
/// so each frame carries its pose inside: H.264 in an SEI, VP8 in the trailer.
@Suite("system: the pose through Janus (SFU)", .serialized)
struct SFUSystemTests {
    static let subscribers = 4

    @Test("publisher → Janus → 4 subscribers: ≥ 300 frames each, all with their own pose; one upload; an expert's annotation through the SFU path reaches everyone",
          arguments: ["h264", "vp8"])
    func throughJanus(codec: String) async throws {
        let (made, reason) = try SFUNetwork.make()
        guard let net = made else {
            print("SKIPPED: the SFU test cannot run here: \(reason ?? "?")")
            return
        }
        defer { try? net.remove() }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let janus = try net.process("/bin/bash", [root.appendingPathComponent("scripts/sfu").path, "--port", "8188",
                                                   "--config-dir", NSTemporaryDirectory() + net.name, "--debug-level", "3"], name: "janus")
        defer { janus.signal(SIGTERM) }
        // Janus's log is block-buffered on a pipe: no waiting for it; the publisher tries again every 2 s until Janus answers.
        let sfu = "janus:ws://\(net.address):8188/"
        let room = String(Int.random(in: 1000...9999))
        let logs = NSTemporaryDirectory() + net.name + "-frames"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let publisherLog = logs + "/publisher.jsonl"
        let publisher = try net.process("posecast-publisher", ["--frame-log", publisherLog,
            "--source", "synthetic", "--codec", codec, "--sfu", sfu, "--room", room, "--listen", "\(net.address):0",
            "--microphone", "none", "--speaker", "none", "--json"], name: "publisher (\(codec))")
        defer { publisher.signal(SIGTERM) }
        let (listening, _) = try await publisher.waitForEvent("embedded signaling", timeout: 20) { $0.is(.listening) }
        let signaling = try #require(listening.string("url"))
        let (publishing, _) = try await publisher.waitForEvent("published into Janus", timeout: 30) { $0.is(.sfuPublishing) }
        #expect(publishing.string("poseTransport") == (codec == "h264" ? "sei" : "trailer"))
        try await publisher.waitForEvent("DTLS with Janus, its certificate checked", timeout: 30) { $0.is(.sfuConnected) }

        var peers: [ManagedProcess] = []
        defer { for p in peers { p.signal(SIGTERM) } }
        for i in 0..<Self.subscribers {
            peers.append(try net.process("posecast-subscriber", [
                "--headless", "--json", "--signaling", signaling, "--sfu", sfu, "--room", room, "--role", i == 0 ? "expert" : "viewer",
                "--microphone", "none", "--speaker", "none", "--frame-log", logs + "/subscriber-\(i).jsonl"],
                name: "subscriber \(i) (\(codec))"))
        }
        // Each decodes ≥ 300 frames, every one with its own pose read from the frame.
        for (i, p) in peers.enumerated() {
            let (status, _) = try await p.waitForEvent("subscriber \(i): 300 frames", timeout: 60) {
                $0.is(.status) && $0.int("frames") >= 300
            }
            #expect(status.int("frames_with_pose") == status.int("frames"), "subscriber \(i): \(status)")
            #expect(status.int("rejected_poses") == 0)
            #expect(status.string("pose_carrier") == (codec == "h264" ? "sei" : "trailer"), "subscriber \(i): \(status)")
        }
        // One stream up, whatever the number of subscribers: the publisher's upload is one stream's bitrate.
        let pubStatus = try #require(publisher.events.last { $0.is(.status) })
        let upload = (pubStatus["kbps"] as? NSNumber)?.doubleValue ?? -1
        let encoder = (pubStatus["encoder_kbps"] as? NSNumber)?.doubleValue ?? -1
        print("sfu \(codec): publisher upload \(upload) kbit/s with \(Self.subscribers) subscribers (encoder \(encoder) kbit/s), "
              + "sessions \(pubStatus.int("sessions"))")
        #expect(upload <= encoder * 1.5 + 100, "the publisher sends one stream: \(upload) kbit/s for an encoder at \(encoder)")

        // The expert annotates through the SFU path (control over signaling); every viewer sees it.
        let expert = peers[0]
        let mark = expert.output.count
        expert.send("tap 0.5 0.5 valve")
        let (ack, _) = try await expert.waitForEvent("ack of the expert's tap", timeout: 15, after: mark) {
            $0.is(.ack) && $0.string("annotationId") != nil
        }
        for (i, viewer) in peers.enumerated().dropFirst() {
            try await viewer.waitForEvent("viewer \(i) sees the annotation", timeout: 15) {
                $0.is(.annotations) && $0.int("count") == 1
            }
        }
        // A viewer may not annotate: refused as on the direct path.
        let viewerMark = peers[1].output.count
        peers[1].send("tap 0.4 0.4 graffiti")
        let (refusal, _) = try await peers[1].waitForEvent("the viewer's tap refused", timeout: 15, after: viewerMark) { $0.is(.error) }
        #expect(refusal.string("code") == "notAllowed", "\(refusal)")
        print("sfu \(codec): annotation \(ack.string("annotationId") ?? "?") acked through signaling, seen by \(Self.subscribers - 1) viewers")

        for p in peers { p.send("quit") }
        for p in peers { #expect(try await p.waitForExit(timeout: 15) == 0) }
        publisher.signal(SIGTERM)
        #expect(try await publisher.waitForExit(timeout: 15) == 0)

        // Every frame shown carried its own pose: its frame id, pose hash and capture time
        // are the publisher's for that frame (both frame logs, joined by id).
        for i in peers.indices {
            let join = try FrameLogJoin(publisherLog: publisherLog, subscriberLog: logs + "/subscriber-\(i).jsonl")
            print("sfu \(codec): subscriber \(i): \(join)")
            #expect(join.ids.count >= 300 && join.ids.count == join.shown, "subscriber \(i): \(join)")
            #expect(join.notOwn.isEmpty && join.unknown == 0, "subscriber \(i): \(join); \(join.notOwn.prefix(3))")
        }
    }
}
