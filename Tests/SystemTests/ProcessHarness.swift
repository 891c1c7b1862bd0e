import Foundation
import Synchronization

/// Timeouts name what was awaited and what was seen instead.
struct HarnessTimeout: Error, CustomStringConvertible {
    let description: String
}

/// One of the project's executables, started for real: stdin to write commands, stdout
/// read as lines (JSON lines with `--json`), stderr kept in a log for failure messages.
final class ManagedProcess: @unchecked Sendable {
    let name: String
    private let process = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let lines = Mutex<[String]>([])
    private let stderrText = Mutex("")
    private let partial = Mutex("")

    /// The folder holding the built executables (the test binary lives there too).
    static let binDirectory: URL = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The xctest bundle may be a directory inside the bin folder on some platforms.
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("posecast-publisher").path),
              dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir
    }()

    init(_ executable: String, _ arguments: [String], name: String? = nil) throws {
        self.name = name ?? executable
        process.executableURL = Self.binDirectory.appendingPathComponent(executable)
        process.arguments = arguments
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        stdoutPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            let complete: [String] = self.partial.withLock { buffer in
                buffer += String(decoding: data, as: UTF8.self)
                var parts = buffer.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                buffer = parts.removeLast()
                return parts
            }
            self.lines.withLock { $0 += complete }
        }
        stderrPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.stderrText.withLock { text in
                text += String(decoding: data, as: UTF8.self)
                if text.count > 20_000 { text = String(text.suffix(10_000)) }
            }
        }
        try process.run()
        Self.live.withLock { list in
            list.removeAll { $0.process == nil }
            list.append(WeakProcess(process: self))
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
            let status = lines.last { $0.contains("\"event\":\"status\"") } ?? "(no status)"
            let events = lines.filter { !$0.contains("\"event\":\"status\"") }.suffix(4)
            return "--- \(other.name) (\(other.isRunning ? "running" : "exited")): \(status)\n"
                + events.joined(separator: "\n") + "\n"
                + other.stderrTail.split(separator: "\n").suffix(5).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        stdoutPipe.fileHandleForReading.readabilityHandler = nil
        stderrPipe.fileHandleForReading.readabilityHandler = nil
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    var output: [String] { lines.withLock { $0 } }
    var stderrTail: String { String(stderrText.withLock { $0 }.suffix(1500)) }

    /// Sends one command line on stdin.
    func send(_ line: String) {
        stdinPipe.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// JSON objects printed so far (non-JSON lines skipped).
    var events: [[String: Any]] {
        output.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// Waits for a stdout line matching `predicate`, counting only lines from index
    /// `after` on; returns the line and its index.
    @discardableResult
    func waitForLine(_ what: String, timeout: Double, after: Int = 0,
                     _ predicate: (String) -> Bool) async throws -> (line: String, index: Int) {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let current = output
            if current.count > after, let i = current[after...].firstIndex(where: predicate) { return (current[i], i) }
            if !process.isRunning, output.count == current.count {
                throw HarnessTimeout(description: "\(name) exited (status \(process.terminationStatus)) before \(what); stderr:\n\(stderrTail)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HarnessTimeout(description: "\(name): no \(what) within \(timeout) s; last output:\n"
                             + output.suffix(8).joined(separator: "\n") + "\nstderr:\n\(stderrTail)\nthe other processes:\n"
                             + othersSummary())
    }

    /// Waits for a JSON event matching `predicate`.
    @discardableResult
    func waitForEvent(_ what: String, timeout: Double, after: Int = 0,
                      _ predicate: @escaping ([String: Any]) -> Bool) async throws -> (event: [String: Any], index: Int) {
        let (line, index) = try await waitForLine(what, timeout: timeout, after: after) { line in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else { return false }
            return predicate(object)
        }
        return ((try JSONSerialization.jsonObject(with: Data(line.utf8))) as! [String: Any], index)
    }

    func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    /// Waits for the process to exit; returns its status.
    func waitForExit(timeout: Double) async throws -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            guard Date() < deadline else {
                throw HarnessTimeout(description: "\(name) did not exit within \(timeout) s; stderr:\n\(stderrTail)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return process.terminationStatus
    }
}

extension Dictionary where Key == String, Value == Any {
    func int(_ key: String) -> Int { (self[key] as? NSNumber)?.intValue ?? -1 }
    func string(_ key: String) -> String? { self[key] as? String }
}
