import Foundation
import TestSupport
import Testing

/// Hostile peers against the real executables: independent WebRTC peers
/// (aiortc, aioice) whose SDP lies about their certificate, and strangers who start
/// sessions and abandon them. Each side must end a forged session within 1 s of DTLS
/// with nothing delivered either way; abandoned sessions must all end and give back
/// what they took, while an honest subscriber keeps its picture.
@Suite("system: hostile peers", .serialized,
       .enabled(if: AiortcPython.path != nil,
                "no Python imports aiortc and websockets ($POSECAST_PYTHON, .build/interop-venv, python3 on PATH): run scripts/interop-setup"), .tags(.system))
struct HostileSystemTests {
    /// posecast-signaling, a synthetic-camera publisher and an honest subscriber that plays.
    struct Rig {
        var signaling: ManagedProcess
        var url: String
        var publisher: ManagedProcess
        var honest: ManagedProcess
    }

    static func rig(signaling extra: [String] = [], publisher publisherExtra: [String] = []) async throws -> Rig {
        let signaling = try ManagedProcess("posecast-signaling", ["--port", "0"] + extra, name: "signaling")
        let (line, _) = try await signaling.waitForLine("listening line", timeout: 20) { $0.hasPrefix("listening ") }
        let url = String(line.dropFirst("listening ".count))
        let publisher = try ManagedProcess("posecast-publisher", ["--source", "synthetic", "--signaling", url, "--json"] + publisherExtra,
                                           name: "publisher")
        try await publisher.waitForEvent("publisher registered", timeout: 30) { $0.is(.signalingConnected) }
        let honest = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url], name: "honest")
        try await honest.waitForEvent("the honest subscriber plays", timeout: 30) {
            $0.is(.status) && $0.int("frames_with_pose") > 30
        }
        return Rig(signaling: signaling, url: url, publisher: publisher, honest: honest)
    }

    /// The honest subscriber's status lines from output line `mark` on.
    static func statuses(of process: ManagedProcess, from mark: Int) -> [[String: Any]] {
        process.output.dropFirst(mark).compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0.is(.status) }
    }

    @Test("an aiortc subscriber with forged fingerprints: the publisher ends it within 1 s of DTLS, nothing reaches it, the honest subscriber plays on")
    func forgedSubscriber() async throws {
        let rig = try await Self.rig()
        let mark = rig.honest.output.count
        let (run, result) = try await AiortcPython.run(
            [AiortcPython.script("aiortc_subscriber.py"), "--signaling", rig.url, "--forge-fingerprint", "--timeout", "30"], timeout: 60)
        print("forged subscriber: DTLS at \(result["dtls_connected_seconds"] ?? "?") s, ended \(result["ended_after_dtls_seconds"] ?? "?") s later, "
              + "frames \(result.int("frames_decoded")), control messages \(result.int("control_messages"))")
        #expect(run.status == 0 && result["ok"] as? Bool == true, "\(result["errors"] ?? "?")\n\(run.stderrTail)")
        let endedIn = try #require(result["ended_after_dtls_seconds"] as? Double, "the session was not ended")
        #expect(endedIn <= 1.0)
        #expect(result.int("frames_decoded") == 0 && result.int("control_messages") == 0)
        try await rig.publisher.waitForEvent("the publisher names the forged certificate", timeout: 5) {
            $0.is(.sessionEnded) && ($0.string("reason") ?? "").contains("DTLS certificate does not match its SDP")
        }
        // The honest session was not touched: still connected, every second at full rate with poses.
        try await Task.sleep(for: .seconds(2))
        let after = rig.honest.output.dropFirst(mark).compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        #expect(!after.contains { $0.is(.sessionEnded) }, "the honest session ended")
        let seconds = Self.statuses(of: rig.honest, from: mark)
        #expect(seconds.count >= 2 && seconds.allSatisfy { ($0["fps"] as? Double ?? 0) >= 25 && $0.int("pose_pct") == 100 },
                "honest subscriber: \(seconds.map { "\($0["fps"] ?? "?") fps \($0["pose_pct"] ?? "?") %" })")
    }

    /// Open: webrtcbin 1.22 gives such a stream no pad of its own (no `pad-added` reaches
    /// us to link it away); its own receive path inside returns not-linked and the
    /// transport's `nicesrc` stops, so everything the session receives stops with it (the
    /// data channel: no control reply), while our video still goes out. Kept as the
    /// reproducer; the fix is to drop RTP of payload types no receiving m-line of ours
    /// names before it reaches rtpbin (docs/SECURITY.md, "Not covered").
    @Test("stray streams: an aiortc expert sends video and an aiortc viewer audio the publisher never asked for (answering recvonly and sending anyway, or a forged sendrecv): each session goes on (every control reply, 100 frames with pose), the stream is dropped and named, the honest expert plays on")
    func strayStream() async throws {
        // A microphone (a tone) and no speaker: sessions carry audio, send-only to viewers.
        let rig = try await Self.rig(publisher: ["--microphone", "tone=440", "--speaker", "none"])
        for (kind, role) in [("video", "expert"), ("audio", "viewer")] {
            for mode in ["regardless", "forged"] {
                let mark = rig.publisher.output.count
                let (run, result) = try await AiortcPython.run(
                    [AiortcPython.script("aiortc_subscriber.py"), "--signaling", rig.url, "--role", role,
                     "--stray-\(kind)", mode, "--timeout", "40"], timeout: 70)
                let lines = rig.publisher.output.dropFirst(mark)
                let stopped = lines.filter { $0.contains("not-linked") }
                let named = lines.filter { $0.contains("dropping a stream") }
                print("stray \(kind) from the \(role) (\(mode)): ok \(result["ok"] ?? "?"), frames \(result.int("frames_decoded")), "
                      + "errors \(result["errors"] ?? "?"), dropped and named \(named.count), not-linked lines \(stopped.count)")
                #expect(result.int("frames_decoded") >= 100, "our video must still go out: \(run.stderrTail)")
                #expect(run.status == 0 && result["ok"] as? Bool == true, "\(kind) \(mode): \(result["errors"] ?? "?")")
                #expect(stopped.isEmpty, "\(kind) \(mode): \(stopped.prefix(1))")
                #expect(!named.isEmpty, "\(kind) \(mode): the dropped stream was not named")
            }
        }
        // The honest session went on beside them.
        #expect(Self.statuses(of: rig.honest, from: 0).suffix(3).allSatisfy { $0.int("pose_pct") == 100 })
    }

    @Test("an aiortc publisher with forged fingerprints: the subscriber ends it within 1 s of DTLS, decodes and sends nothing; an honest aiortc publisher plays, named pose-less")
    func forgedPublisher() async throws {
        let signaling = try ManagedProcess("posecast-signaling", ["--port", "0"], name: "signaling")
        let (line, _) = try await signaling.waitForLine("listening line", timeout: 20) { $0.hasPrefix("listening ") }
        let url = String(line.dropFirst("listening ".count))
        for forged in [true, false] {
            let room = forged ? "forged" : "honest"
            async let publisher = AiortcPython.run([AiortcPython.script("aiortc_publisher.py"), "--signaling", url, "--room", room,
                                                    "--seconds", "4", "--timeout", "40"] + (forged ? ["--forge-fingerprint"] : []),
                                                   timeout: 60)
            try await Task.sleep(for: .seconds(1))   // registered before the subscriber lists the room
            let subscriber = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url, "--room", room],
                                                name: "subscriber-\(room)")
            let (run, result) = try await publisher
            print("aiortc publisher (\(room)): DTLS at \(result["dtls_connected_seconds"] ?? "?") s, ended "
                  + "\(result["ended_after_dtls_seconds"] ?? "not") after, control messages \(result.int("control_messages_received"))")
            #expect(run.status == 0 && result["ok"] as? Bool == true, "\(result["errors"] ?? "?")\n\(run.stderrTail)")
            try await Task.sleep(for: .seconds(1.5))
            let events = subscriber.events
            let frames = events.filter { $0.is(.status) }.map { $0.int("frames") }.max() ?? 0
            if forged {
                let endedIn = try #require(result["ended_after_dtls_seconds"] as? Double, "the session was not ended")
                #expect(endedIn <= 1.0)
                #expect(result.int("control_messages_received") == 0)
                #expect(events.contains { $0.is(.sessionEnded) && ($0.string("reason") ?? "").contains("DTLS certificate does not match") },
                        "subscriber events: \(events.filter { !$0.is(.status) })")
                #expect(frames == 0, "\(frames) frames decoded from a forged publisher")
            } else {
                #expect(frames >= 60, "\(frames) frames decoded from an honest aiortc publisher; subscriber events: \(events.filter { !$0.is(.status) })\n\(subscriber.stderrTail)")
                #expect(events.contains { $0.is(.publisherWithoutPose) })
            }
            subscriber.signal(SIGTERM)
            _ = try await subscriber.waitForExit(timeout: 15)
        }
    }

    @Test("200 sessions abandoned by strangers in four ways over 20 s: the honest subscriber keeps the frame rate the camera makes, with every pose; 20 s after the last, sessions, fds and threads are back")
    func abandonedSessions() async throws {
        // The server lets the strangers through (64 peers, 64 sessions a producer): the
        // publisher's own caps (16 sessions) and setup deadline (15 s) are what hold.
        let rig = try await Self.rig(signaling: ["--max-peers-per-room", "64", "--max-sessions-per-producer", "64"])
        try await Task.sleep(for: .seconds(3))
        let before = Self.statuses(of: rig.publisher, from: 0).suffix(3)
        let fdsBefore = before.map { $0.int("open_fds") }.max() ?? 0, threadsBefore = before.map { $0.int("threads") }.max() ?? 0
        let kindsBefore = Self.descriptorKinds(of: rig.publisher.pid)
        let honestMark = rig.honest.output.count, publisherMark = rig.publisher.output.count
        let attackStart = ContinuousClock.now
        let (run, result) = try await AiortcPython.run([AiortcPython.script("abandoned_sessions.py"), "--signaling", rig.url,
                                                        "--sessions", "200", "--over", "20", "--hold", "40"], timeout: 120)
        #expect(run.status == 0, "\(run.stderrTail)")
        // Within 20 s of the last stranger's start (about when the strangers' script ends):
        // back to the honest session; and within 10 s of the publisher's being seen back at
        // it, to the resources held before. The second wait follows the publisher's progress:
        // on a busy machine a peer's sockets go some seconds after its session has ended,
        // once its teardown has run on the publisher's state worker.
        var deadline = max(attackStart + .seconds(20 + 20), .now + .seconds(1))
        var backToOne: ContinuousClock.Instant?
        var last: [String: Any] = [:]
        while ContinuousClock.now < deadline {
            last = Self.statuses(of: rig.publisher, from: publisherMark).last ?? [:]
            if last.int("sessions") == 1, backToOne == nil {
                backToOne = .now
                deadline = max(deadline, .now + .seconds(10))
            }
            if last.int("sessions") == 1, Double(last.int("open_fds")) <= Double(fdsBefore) * 1.1,
               Double(last.int("threads")) <= Double(threadsBefore) * 1.1 { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        let sessionsBackAfter = backToOne.map { ($0 - attackStart) / .seconds(1) }
        let backAfter = (ContinuousClock.now - attackStart) / .seconds(1)
        print("abandoned sessions: descriptors before \(kindsBefore), at the end \(Self.descriptorKinds(of: rig.publisher.pid))")
        let during = Self.statuses(of: rig.publisher, from: publisherMark)
        let peak = (during.map { $0.int("sessions") }.max() ?? 0, during.map { $0.int("open_fds") }.max() ?? 0,
                    during.map { $0.int("threads") }.max() ?? 0)
        let honest = Self.statuses(of: rig.honest, from: honestMark)
        let fps = honest.map { $0["fps"] as? Double ?? 0 }
        let ways = result["ways"] as? [String: [String: Any]] ?? [:]
        print("abandoned sessions: before \(fdsBefore) fds / \(threadsBefore) threads; peak \(peak.0) sessions, \(peak.1) fds, "
              + "\(peak.2) threads; one session again seen at \(sessionsBackAfter.map { String(format: "%.1f", $0) } ?? "never") s; "
              + "at \(String(format: "%.1f", backAfter)) s: \(last.int("sessions")) sessions, "
              + "\(last.int("open_fds")) fds, \(last.int("threads")) threads; honest fps min \(fps.min() ?? 0) over \(fps.count) s, "
              + "pose \(honest.map { $0.int("pose_pct") }.min() ?? -1) %; ways \(ways.mapValues { w in ["admitted": w["admitted"] ?? 0, "ended": w["ended_by_publisher"] ?? 0, "ice": w["ice_connected"] ?? 0] })")
        #expect(last.int("sessions") == 1, "publisher still holds \(last.int("sessions")) sessions")
        let kindsAfter = Self.descriptorKinds(of: rig.publisher.pid)
        #expect(Double(last.int("open_fds")) <= Double(fdsBefore) * 1.1 && Double(last.int("threads")) <= Double(threadsBefore) * 1.1,
                "fds \(fdsBefore) → \(last.int("open_fds")), threads \(threadsBefore) → \(last.int("threads")); descriptors before \(kindsBefore), now \(kindsAfter)")
        #expect(peak.0 >= 10, "the strangers never held many sessions at once (peak \(peak.0)): the attack did not bite")
        // Measured against the publisher's own output in the same window, not against 30 fps:
        // on a busy machine the camera itself makes fewer frames, and the honest subscriber
        // is starved only if it gets fewer of those it is sent.
        let made = during.map { $0.int("frames_with_pose") }, got = honest.map { $0.int("frames") }
        let madeCount = (made.last ?? 0) - (made.first ?? 0), gotCount = (got.last ?? 0) - (got.first ?? 0)
        let publisherFps = during.map { $0["fps"] as? Double ?? 0 }.sorted()
        let typical = publisherFps.isEmpty ? 30 : publisherFps[publisherFps.count / 2]
        print("abandoned sessions: the publisher made \(madeCount) frames (median \(typical) fps), the honest subscriber decoded \(gotCount)")
        #expect(fps.count >= 30 && honest.allSatisfy { $0.int("pose_pct") == 100 }, "honest subscriber per second: \(fps)")
        #expect(Double(gotCount) >= 0.95 * Double(madeCount), "honest subscriber: \(gotCount) frames of the \(madeCount) made")
        #expect(fps.dropFirst().allSatisfy { $0 >= 0.85 * typical }, "honest subscriber per second: \(fps), the publisher's median \(typical)")
        #expect(result.int("failures") == 0, "\(ways.mapValues { $0["failures"] ?? [] })")
        for way in ["dropped", "silent", "no-ice", "no-dtls"] {
            let w = ways[way] ?? [:]
            #expect(w.int("started") == 50, "\(way): \(w)")
            #expect(w.int("held_to_the_end") == 0, "\(way): sessions the publisher never ended: \(w)")
            if way != "dropped" { #expect(w.int("admitted") > 0 && w.int("ended_by_publisher") == w.int("admitted"), "\(way): \(w)") }
        }
        #expect((ways["no-dtls"] ?? [:]).int("ice_connected") > 0, "no stranger completed ICE: the DTLS case was not tried")
        let reasons = Set(rig.publisher.events.filter { $0.is(.sessionEnded) }.compactMap { $0.string("reason") })
        for step in ["no answer", "answered, but ICE never connected", "ICE connected, but DTLS never completed"] {
            #expect(reasons.contains("not connected within 15.0 seconds: \(step)"), "no session ended for “\(step)”: \(reasons)")
        }
    }

    /// What a process's open descriptors are, by kind (socket, pipe, anon_inode:[eventfd],
    /// a path's directory …), for a message that says what was left behind.
    static func descriptorKinds(of pid: Int32) -> [String: Int] {
        let dir = "/proc/\(pid)/fd"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return [:] }
        var kinds: [String: Int] = [:]
        for name in names {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(dir)/\(name)") else { continue }
            let kind = target.hasPrefix("/") ? (target as NSString).deletingLastPathComponent : String(target.prefix { $0 != ":" })
                + (target.hasPrefix("anon_inode:") ? ":" + target.dropFirst(11) : "")
            kinds[kind, default: 0] += 1
        }
        return kinds
    }
}
