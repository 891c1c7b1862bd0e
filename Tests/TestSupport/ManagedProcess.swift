import Foundation
import NodeOutput
import Synchronization

/// A wait on a child process that failed: names what was awaited and what was seen instead.
public struct HarnessTimeout: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// The one way the suites run a child process: one of the project's executables (by
/// product name) or any program (by absolute path), started for real. Stdin takes
/// commands, stdout is read as lines while the child runs (JSON lines with `--json`),
/// stderr is kept for failure messages; a chatty child never blocks on a full pipe.
/// Short jobs go through `run`/`runBlocking`, which wait for the exit within a limit.
public final class ManagedProcess: @unchecked Sendable {
    public let name: String
    private let process = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    /// Stdout's lines, and when each was read (wall clock, ns since 1970), index for index.
    private let lines = Mutex<(text: [String], readNs: [UInt64])>(([], []))
    private let stderrText = Mutex("")
    private let partial = Mutex("")

    /// The folder holding the built executables (the test binary lives there too).
    public static let binDirectory: URL = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The xctest bundle may be a directory inside the bin folder on some platforms.
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("posecast-publisher").path),
              dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir
    }()

    /// `executable`: a product name (looked up in `binDirectory`) or an absolute path.
    /// `environment`: set in the child's environment over this process's own.
    public init(_ executable: String, _ arguments: [String], name: String? = nil,
                environment: [String: String] = [:]) throws {
        self.name = name ?? (executable as NSString).lastPathComponent
        process.executableURL = executable.hasPrefix("/")
            ? URL(fileURLWithPath: executable) : Self.binDirectory.appendingPathComponent(executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, set in set }
        }
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        Self.startReader(stdoutPipe.fileHandleForReading, group: readersDone) { [weak self] in self?.takeStdout($0) }
        Self.startReader(stderrPipe.fileHandleForReading, group: readersDone) { [weak self] in self?.takeStderr($0) }
        try process.run()
        Self.live.withLock { list in
            list.removeAll { $0.process == nil }
            list.append(WeakProcess(process: self))
        }
    }

    /// Both pipes' readers, done at the end of file (the child and every process that
    /// inherited the pipe gone).
    private let readersDone = DispatchGroup()

    /// Reads `handle` on a thread of its own, blocking, until the end of file. Not with a
    /// `readabilityHandler`: that is a dispatch read source, and a source cancelled while
    /// its descriptor is closed and the number reused (a child freed as another starts)
    /// can leave libdispatch's epoll loop with a freed registration: the test process
    /// crashed in `_dispatch_event_loop_drain` once in a full run (2026-11-27). The thread
    /// holds the handle, so the descriptor stays open until it is done.
    private static func startReader(_ handle: FileHandle, group: DispatchGroup, _ take: @escaping @Sendable (Data) -> Void) {
        group.enter()
        let thread = Thread {
            let fd = handle.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { break }
                take(Data(buffer[0..<n]))
            }
            withExtendedLifetime(handle) {}
            group.leave()
        }
        thread.stackSize = 256 << 10
        thread.start()
    }

    private func takeStdout(_ data: Data) {
        let complete: [String] = partial.withLock { buffer in
            buffer += String(decoding: data, as: UTF8.self)
            var parts = buffer.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            buffer = parts.removeLast()
            return parts
        }
        let now = UInt64(Date().timeIntervalSince1970 * 1e9)
        lines.withLock { $0.text += complete; $0.readNs += Array(repeating: now, count: complete.count) }
    }

    private func takeStderr(_ data: Data) {
        stderrText.withLock { text in
            text += String(decoding: data, as: UTF8.self)
            if text.count > 20_000 { text = String(text.suffix(10_000)) }
        }
    }

    private struct WeakProcess: @unchecked Sendable { weak var process: ManagedProcess? }
    /// Every process started and not yet freed, so a timeout can show what the others did.
    private static let live = Mutex<[WeakProcess]>([])

    /// For a timeout message: each other live process's last status line (or last line)
    /// and the end of its stderr, so a stall can be placed on the right side.
    private func othersSummary() -> String {
        let others = Self.live.withLock { $0.compactMap(\.process) }.filter { $0 !== self }
        return others.map { other in
            let lines = other.output
            let isStatus = { (line: String) in line.contains("\"event\":\"\(NodeEventName.status.rawValue)\"") }
            let status = lines.last(where: isStatus) ?? "(no status)"
            let events = lines.filter { !isStatus($0) }.suffix(4)
            return "--- \(other.name) (\(other.isRunning ? "running" : "exited")): \(status)\n"
                + events.joined(separator: "\n") + "\n"
                + other.stderrTail.split(separator: "\n").suffix(5).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    deinit {
        if isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    public var pid: Int32 { process.processIdentifier }
    /// Foundation's word, or the kernel's when Foundation missed the exit: a `posecast-scene`
    /// that had exited stayed a zombie for 20 minutes that `isRunning` called running and
    /// `waitUntilExit` waited on, until CI's time ran out.
    public var isRunning: Bool { process.isRunning && Self.exitStatusOfZombie(pid) == nil }
    /// The exit status: from /proc while the child is a zombie, else Foundation's once it
    /// has reaped it. Foundation may reap it between the two reads (the zombie gone, its
    /// `isRunning` not yet false): then this waits, at most 2 s, for Foundation to say so.
    /// Read at once, that race gave -1 for a publisher that had exited 0 (an SFU test in a
    /// fresh-clone CI run). -1 only while the child really runs.
    public var terminationStatus: Int32 {
        let deadline = Date().addingTimeInterval(2)
        while true {
            if !process.isRunning { return process.terminationStatus }
            if let status = Self.exitStatusOfZombie(pid) { return status }
            // Neither: running (its /proc entry there, not a zombie), or reaped a moment ago.
            if FileManager.default.fileExists(atPath: "/proc/\(pid)/stat") || Date() >= deadline { return -1 }
            usleep(10_000)
        }
    }

    /// A child's exit status as Foundation gives it (the code, or the signal that ended it)
    /// while it is a zombie no one reaped; nil when it is not one (running, or reaped).
    /// /proc/PID/stat: the state after the name's closing parenthesis, the wait status in
    /// field 52 (`exit_code`, Linux 3.5 and later).
    static func exitStatusOfZombie(_ pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.first == "Z" else { return nil }
        // fields[0] is field 3 (the state), so field 52 is fields[49].
        guard fields.count > 49, let status = Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines)) else { return -1 }
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
    }

    /// Blocks this thread up to `seconds` for the exit, whoever saw it (`runBlocking`,
    /// which cannot await; never for ever).
    private func blockUntilExit(within seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning, Date() < deadline { usleep(20_000) }
    }
    public var output: [String] { lines.withLock { $0.text } }
    public var stderrTail: String { stderrTail(1500) }
    /// The last `characters` of stderr (up to the 10–20 thousand kept).
    public func stderrTail(_ characters: Int) -> String { String(stderrText.withLock { $0 }.suffix(characters)) }

    /// Sends one command line on stdin.
    public func send(_ line: String) {
        stdinPipe.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// The JSON objects read between `from` and `to` (wall clock, ns since 1970), for a
    /// failure's story: what a process said around the moment a test saw something go wrong.
    public func events(readFrom from: UInt64, to: UInt64) -> [[String: Any]] {
        let (text, times) = lines.withLock { $0 }
        return zip(times, text).filter { $0.0 >= from && $0.0 < to }.compactMap { _, line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// JSON objects printed so far (non-JSON lines skipped).
    public var events: [[String: Any]] {
        output.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// Waits for a stdout line matching `predicate`, counting only lines from index
    /// `after` on; returns the line and its index.
    @discardableResult
    public func waitForLine(_ what: String, timeout: Double, after: Int = 0,
                            _ predicate: (String) -> Bool) async throws -> (line: String, index: Int) {
        do {
            return try await waitFor(timeout, what, every: .milliseconds(50)) { () throws -> (String, Int)? in
                let current = output
                if current.count > after, let i = current[after...].firstIndex(where: predicate) { return (current[i], i) }
                if !isRunning, output.count == current.count {
                    throw HarnessTimeout(description: "\(name) exited (status \(terminationStatus)) before \(what); stderr:\n\(stderrTail)")
                }
                return nil
            }
        } catch is TimeoutError {
            throw HarnessTimeout(description: "\(name): no \(what) within \(timeout) s; last output:\n"
                                 + output.suffix(8).joined(separator: "\n") + "\nstderr:\n\(stderrTail)\nthe other processes:\n"
                                 + othersSummary())
        }
    }

    /// Waits for a JSON event matching `predicate`.
    @discardableResult
    public func waitForEvent(_ what: String, timeout: Double, after: Int = 0,
                             _ predicate: @escaping ([String: Any]) -> Bool) async throws -> (event: [String: Any], index: Int) {
        let (line, index) = try await waitForLine(what, timeout: timeout, after: after) { line in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else { return false }
            return predicate(object)
        }
        return ((try JSONSerialization.jsonObject(with: Data(line.utf8))) as! [String: Any], index)
    }

    public func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    /// Waits for the process to exit; returns its status.
    public func waitForExit(timeout: Double) async throws -> Int32 {
        do {
            try await waitUntil(timeout, "\(name) to exit", every: .milliseconds(50)) { !isRunning }
        } catch is TimeoutError {
            throw HarnessTimeout(description: "\(name) did not exit within \(timeout) s; stderr:\n\(stderrTail)")
        }
        return terminationStatus
    }

    /// After the exit: whatever the pipes still held, read to the end (at most 5 s more,
    /// for a grandchild that inherited a pipe and lives on).
    private func drain() -> CommandRun {
        _ = readersDone.wait(timeout: .now() + 5)
        let rest = partial.withLock { buffer in defer { buffer = "" }; return buffer }
        let stdout = (output + (rest.isEmpty ? [] : [rest])).joined(separator: "\n")
        return CommandRun(status: terminationStatus, stdout: stdout, stderr: stderrText.withLock { $0 })
    }

    /// Runs a short job to its end: killed and reported when it overruns `timeout`.
    public static func run(_ executable: String, _ arguments: [String], timeout: Double) async throws -> CommandRun {
        let child = try ManagedProcess(executable, arguments)
        try? child.stdinPipe.fileHandleForWriting.close()
        do {
            _ = try await child.waitForExit(timeout: timeout)
        } catch {
            child.signal(SIGKILL)
            _ = try? await child.waitForExit(timeout: 5)
            let partial = child.drain()
            throw HarnessTimeout(description: "\(child.name) \(arguments.first ?? "") did not finish within \(timeout) s; "
                                 + "stdout:\n\(partial.stdout.suffix(1000))\nstderr:\n\(partial.stderrTail)")
        }
        return child.drain()
    }

    /// `posecast-signaling` on a free port (and `extra` arguments), once it listens; with its ws:// URL.
    public static func startSignaling(_ extra: [String] = []) async throws -> (ManagedProcess, String) {
        let signaling = try ManagedProcess("posecast-signaling", ["--port", "0"] + extra, name: "signaling")
        let (listening, _) = try await signaling.waitForLine("listening line", timeout: 20) { $0.hasPrefix("listening ") }
        return (signaling, String(listening.dropFirst("listening ".count)))
    }

    /// `run` for places that cannot await (a suite's enabling condition): the exit is
    /// polled on this thread; an overrun gives status -1.
    public static func runBlocking(_ executable: String, _ arguments: [String], timeout: Double) throws -> CommandRun {
        let child = try ManagedProcess(executable, arguments)
        try? child.stdinPipe.fileHandleForWriting.close()
        child.blockUntilExit(within: timeout)
        guard !child.isRunning else {
            child.signal(SIGKILL)
            child.blockUntilExit(within: 5)
            return CommandRun(status: -1, stdout: "", stderr: "timed out after \(timeout) s")
        }
        return child.drain()
    }
}

/// A child run to completion: its exit status and everything it printed.
public struct CommandRun: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    public var stderrTail: String { String(stderr.suffix(3000)) }
}

extension Dictionary where Key == String, Value == Any {
    public func int(_ key: String) -> Int { (self[key] as? NSNumber)?.intValue ?? -1 }
    public func string(_ key: String) -> String? { self[key] as? String }
}

extension Dictionary where Key == String, Value == Any {
    /// Whether this JSON line is the named event (names from `NodeEventName`, shared with
    /// the executables and the scripts).
    public func `is`(_ name: NodeEventName) -> Bool { self["event"] as? String == name.rawValue }
}
