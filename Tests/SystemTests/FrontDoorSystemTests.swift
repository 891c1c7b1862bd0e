import Foundation
import TestSupport
import Testing

/// The publisher's embedded server against strangers, from outside: pages of another
/// origin, then a crowd of 500 idle connections, 200 slowloris ones and 100 malformed
/// requests at once (scripts/lib/front_door_flood.py, raw sockets), while an honest expert
/// watches. Every stranger must be answered with a refusal or closed within the header
/// deadline, the expert must keep the frame rate the camera makes, and the publisher must
/// live, also with its file limit lowered to 256, its descriptors coming back after.
@Suite("system: the front door", .serialized, .timeLimit(.minutes(4)), .tags(.system))
struct FrontDoorSystemTests {
    static let flood = AiortcPython.packageRoot.appendingPathComponent("scripts/lib/front_door_flood.py").path
    static let refusals: [String: Set<String>] = [
        "idle": ["408", "503", "none"], "slowloris": ["408", "503", "none"],
        "malformed": ["400", "431", "505", "503", "429", "none"], "foreign-origin": ["403", "503"],
    ]

    struct Rig {
        var publisher: ManagedProcess
        var expert: ManagedProcess
        var url: String
        var port: String
    }

    /// A publisher with its embedded server (under `prlimit` when `fileLimit` is given) and
    /// an honest expert playing.
    static func rig(fileLimit: Int? = nil, extra: [String] = []) async throws -> Rig {
        let arguments = ["--source", "synthetic", "--listen", "127.0.0.1:0", "--json", "--microphone", "none",
                         "--speaker", "none"] + extra
        let publisher = try fileLimit.map {
            try ManagedProcess("/usr/bin/prlimit", ["--nofile=\($0):\($0)",
                                                    ManagedProcess.binDirectory.appendingPathComponent("posecast-publisher").path]
                               + arguments, name: "publisher")
        } ?? ManagedProcess("posecast-publisher", arguments, name: "publisher")
        let (listening, _) = try await publisher.waitForEvent("embedded signaling", timeout: 20) { $0.is(.listening) }
        let url = try #require(listening.string("url"))
        let port = String(try #require(url.split(separator: ":").last).prefix { $0.isNumber })
        let expert = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url], name: "expert")
        try await expert.waitForEvent("the expert plays", timeout: 40) { $0.is(.status) && $0.int("frames_with_pose") > 30 }
        return Rig(publisher: publisher, expert: expert, url: url, port: port)
    }

    /// The flood's JSON line per kind.
    static func run(_ rig: Rig, _ options: [String], timeout: Double) async throws -> [String: [String: Any]] {
        let run = try await ManagedProcess.run("/usr/bin/python3", [flood, "--host", "127.0.0.1", "--port", rig.port] + options,
                                               timeout: timeout)
        #expect(run.status == 0, "\(run.stderrTail)")
        var lines: [String: [String: Any]] = [:]
        for line in run.stdout.split(separator: "\n") {
            if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
               let kind = object["kind"] as? String { lines[kind] = object }
        }
        return lines
    }

    /// Every connection of every kind answered with a refusal or closed, none open, none
    /// closed later than `within` seconds.
    static func expectRefused(_ lines: [String: [String: Any]], within: Double) {
        for (kind, line) in lines {
            let statuses = Set((line["statuses"] as? [String: Any] ?? [:]).keys)
            #expect(statuses.isSubset(of: refusals[kind] ?? []), "\(kind): answered \(statuses.sorted())")
            #expect(line.int("still_open") == 0, "\(kind): \(line.int("still_open")) left open")
            #expect((line["close_s_max"] as? Double ?? 0) <= within, "\(kind): one closed after \(line["close_s_max"] ?? "?") s")
        }
    }

    /// The expert's frame rate while the strangers came, against the publisher's own.
    static func expectExpertPlayed(_ rig: Rig, since mark: (expert: Int, publisher: Int), _ what: String) {
        func fps(_ process: ManagedProcess, from: Int) -> [Double] {
            process.output.dropFirst(from).compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            }.filter { $0.is(.status) }.compactMap { $0["fps"] as? Double }
        }
        let expert = fps(rig.expert, from: mark.expert), made = fps(rig.publisher, from: mark.publisher)
        let median = { (values: [Double]) in values.sorted()[values.count / 2] }
        print("front door (\(what)): expert fps \(expert.map { Int($0) }), publisher made \(made.map { Int($0) })")
        guard expert.count >= 5, made.count >= 5 else { Issue.record("too few status lines: \(expert.count), \(made.count)"); return }
        #expect(median(expert) >= 0.93 * median(made), "\(what): the expert's median \(median(expert)) against \(median(made)) made")
        #expect(expert.min()! >= 0.75 * median(made), "\(what): a second at \(expert.min()!) fps")
    }

    static func openFiles(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    @Test("default limits: 20 pages of another origin get 403 and no session; 500 idle, 200 slowloris and 100 malformed connections at once are each refused or closed within the 10 s header deadline; the expert keeps the camera's frame rate")
    func crowd() async throws {
        let rig = try await Self.rig()
        defer { rig.expert.signal(SIGTERM); rig.publisher.signal(SIGTERM) }
        let sessions = rig.publisher.events.last { $0.is(.status) }?.int("sessions")
        let origin = try await Self.run(rig, ["--foreign-origin", "20", "--wait", "10"], timeout: 40)
        #expect((origin["foreign-origin"]?["statuses"] as? [String: Any])?.keys.sorted() == ["403"], "\(origin)")
        try await Task.sleep(for: .seconds(1.5))
        #expect(rig.publisher.events.last { $0.is(.status) }?.int("sessions") == sessions, "a foreign page got a session")

        let mark = (rig.expert.output.count, rig.publisher.output.count)
        let crowd = try await Self.run(rig, ["--idle", "500", "--slowloris", "200", "--malformed", "100", "--wait", "20"],
                                       timeout: 90)
        print("front door crowd: \(crowd.mapValues { ($0["statuses"] ?? "?", $0["close_s_max"] ?? "?") })")
        #expect(Set(crowd.keys) == ["idle", "slowloris", "malformed"])
        Self.expectRefused(crowd, within: 15)
        Self.expectExpertPlayed(rig, since: mark, "crowd")
        #expect(rig.publisher.isRunning)
    }

    @Test("file limit 256 (header deadline 3 s): the same crowd from 8 addresses; the publisher lives, the expert keeps the camera's frame rate, and 15 s after, the publisher's descriptors are back")
    func crowdAtFileLimit() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit") else {
            Issue.record("needs util-linux's prlimit"); return
        }
        let rig = try await Self.rig(fileLimit: 256, extra: ["--header-timeout", "3"])
        defer { rig.expert.signal(SIGTERM); rig.publisher.signal(SIGTERM) }
        try await Task.sleep(for: .seconds(2))
        let before = Self.openFiles(rig.publisher.pid)
        let mark = (rig.expert.output.count, rig.publisher.output.count)
        let crowd = try await Self.run(rig, ["--idle", "500", "--slowloris", "200", "--malformed", "100", "--sources", "8",
                                             "--wait", "60"], timeout: 120)
        print("front door crowd at 256 files: \(crowd.mapValues { ($0["statuses"] ?? "?", $0["close_s_max"] ?? "?") })")
        for (kind, line) in crowd { #expect(line.int("still_open") == 0, "\(kind): \(line.int("still_open")) left open") }
        Self.expectExpertPlayed(rig, since: mark, "file limit 256")
        #expect(rig.publisher.isRunning, "the publisher died")
        try await Task.sleep(for: .seconds(15))
        let after = Self.openFiles(rig.publisher.pid)
        print("front door at 256 files: descriptors \(before) before, \(after) 15 s after")
        #expect(after <= before + 10, "descriptors \(before) before, \(after) after")
    }
}
