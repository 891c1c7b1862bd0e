import Foundation
import TestSupport

/// Debian's PulseAudio as a private server for one test: its own socket and runtime
/// directory (nothing of the machine's sound is touched, nothing autospawned), one null
/// sink per mouth and per speaker. A null sink plays nowhere; its `.monitor` source gives
/// back what was played into it, so a "mouth" sink is a microphone (`NAME.monitor`) and a
/// "speaker" sink's monitor records what a node played.
struct PrivatePulseAudio {
    let directory: String
    /// For the children that use it (`PULSE_SERVER`), and for pactl/paplay.
    var environment: [String: String] { ["PULSE_SERVER": "unix:\(directory)/native"] }
    /// Where the daemon finds its runtime directory (its pid file) and home.
    private var daemonEnvironment: [String: String] {
        ["HOME": directory, "XDG_RUNTIME_DIR": directory, "PULSE_RUNTIME_PATH": directory]
    }

    static let binary = "/usr/bin/pulseaudio"
    static let paplay = "/usr/bin/paplay"
    static let espeak = "/usr/bin/espeak-ng"

    /// Why it cannot run here (nil: it can): scripts/setup installs all three.
    static var missing: String? {
        let absent = [binary, paplay, espeak].filter { !FileManager.default.isExecutableFile(atPath: $0) }
        return absent.isEmpty ? nil : "not installed: \(absent.joined(separator: ", ")) (scripts/setup installs them)"
    }

    /// Starts it with a null sink (48 kHz mono) for each name, and waits until pactl sees them all.
    /// Daemonized, not a `ManagedProcess`: the daemon closes every descriptor it inherited,
    /// and Foundation's `Process` takes its end of a socket closing for the child's exit: it
    /// then blocks in waitpid on the running daemon, and no other child is reaped again.
    static func start(directory: String, sinks: [String]) async throws -> PrivatePulseAudio {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = (["load-module module-native-protocol-unix socket=\(directory)/native auth-anonymous=1"]
            + sinks.map { "load-module module-null-sink sink_name=\($0) rate=48000 channels=1" }).joined(separator: "\n") + "\n"
        try script.write(toFile: "\(directory)/default.pa", atomically: true, encoding: .utf8)
        let server = PrivatePulseAudio(directory: directory)
        // -n: no default script; no shared memory, no idle exit; as root it warns and runs.
        let started = try await ManagedProcess.run("/usr/bin/env", server.daemonEnvironment.map { "\($0.key)=\($0.value)" } + [
            binary, "-n", "--daemonize=yes", "--exit-idle-time=-1", "--use-pid-file=yes", "--disable-shm=yes",
            "--system=no", "--log-target=file:\(directory)/log", "-F", "\(directory)/default.pa"], timeout: 20)
        guard started.status == 0 else {
            throw HarnessTimeout(description: "PulseAudio did not start (\(started.status)): \(started.stderrTail) \(server.log)")
        }
        let deadline = Date().addingTimeInterval(15)
        var last = ""
        while Date() < deadline {
            do {
                last = try await server.run("/usr/bin/pactl", ["list", "short", "sinks"])
                if sinks.allSatisfy({ sink in last.contains(sink) }) { return server }
            } catch {
                last = "\(error)"
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        await server.stop()
        throw HarnessTimeout(description: "PulseAudio did not show its sinks within 15 s (pactl: \(last)); its log:\n\(server.log)")
    }

    /// Runs `body` with a server started in a fresh directory named `name`, then stops
    /// whichever server runs there (by its pid file, so one `body` restarted too) and
    /// removes the directory, however `body` ends.
    static func with(_ name: String, sinks: [String], _ body: (PrivatePulseAudio) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "\(name)-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try await start(directory: directory, sinks: sinks)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    var log: String { (try? String(contentsOfFile: "\(directory)/log", encoding: .utf8)).map { String($0.suffix(3000)) } ?? "" }

    /// Runs a client tool against this server to its end; returns its stdout.
    func run(_ tool: String, _ arguments: [String], timeout: Double = 30) async throws -> String {
        let run = try await ManagedProcess.run("/usr/bin/env", environment.map { "\($0.key)=\($0.value)" } + [tool] + arguments,
                                               timeout: timeout)
        guard run.status == 0 else {
            throw HarnessTimeout(description: "\(tool) \(arguments.joined(separator: " ")) exited \(run.status): \(run.stderrTail)")
        }
        return run.stdout
    }

    /// Speech from espeak-ng (a WAV in `directory`) played into `sink`, to its end.
    func speak(_ text: String, into sink: String, voice: String = "en") async throws {
        let wav = "\(directory)/speech-\(UInt32.random(in: 0...UInt32.max)).wav"
        _ = try await run(Self.espeak, ["-v", voice, "-s", "150", "-w", wav, text])
        _ = try await run(Self.paplay, ["--device=\(sink)", wav])
    }

    /// Stops the daemon (by its pid file).
    func stop() async {
        _ = try? await ManagedProcess.run("/usr/bin/env", daemonEnvironment.map { "\($0.key)=\($0.value)" } + [Self.binary, "--kill"],
                                          timeout: 10)
    }
}
