import Foundation

/// Write end of the signal pipe; set once before the handlers are installed, read
/// only by the handler (a C function cannot capture context).
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// Small things both executables need: stopping on SIGINT/SIGTERM, writing lines
/// that reach a pipe at once, a status line that rewrites itself on a terminal.
public enum ProcessSupport {
    /// Raises the soft limit on open files to the hard one (at most `ceiling`): the
    /// default soft limit (1024 on Debian) is what a crowd of strangers' connections
    /// exhausts first, and a publisher without a descriptor for its next socket or
    /// pipe cannot carry on. Returns the limit in force.
    @discardableResult
    public static func raiseOpenFileLimit(ceiling: UInt = 65536) -> UInt {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        let wanted = min(limit.rlim_max, rlim_t(ceiling))
        if limit.rlim_cur < wanted {
            limit.rlim_cur = wanted
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 { _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) }
        }
        return UInt(limit.rlim_cur)
    }

    /// Yields the signal number each time SIGINT or SIGTERM arrives. A C handler
    /// writes the number into a pipe (the one async-signal-safe way out of a handler);
    /// a thread of its own reads it. libdispatch signal sources do not work here:
    /// on Linux they need the signal blocked in every thread, and GStreamer's and the
    /// runtime's threads exist before we could block it.
    public static func terminationSignals() -> AsyncStream<Int32> {
        AsyncStream { continuation in
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { continuation.finish(); return }
            signalPipeWriteEnd = fds[1]
            for sig in [SIGINT, SIGTERM] {
                signal(sig) { number in
                    var byte = UInt8(truncatingIfNeeded: number)
                    _ = write(signalPipeWriteEnd, &byte, 1)
                }
            }
            let readEnd = fds[0]
            Thread {
                var byte: UInt8 = 0
                while read(readEnd, &byte, 1) == 1 { continuation.yield(Int32(byte)) }
                continuation.finish()
            }.start()
        }
    }

    /// One line to stdout, flushed (stdout is a pipe under tests and scripts).
    /// Lines of stdin, read on a thread of their own (readLine blocks); ends at EOF.
    public static func stdinLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine(strippingNewline: true) { continuation.yield(line) }
                continuation.finish()
            }
            thread.start()
        }
    }

    public static func printLine(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// One line to stderr.
    public static func printError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// A status line on stderr: rewritten in place on a terminal, one line per update otherwise.
    public static func status(_ line: String) {
        if isatty(STDERR_FILENO) != 0 {
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
        } else {
            printError(line)
        }
    }

    /// A JSON object as one line.
    public static func json(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Events and status as human lines (status rewritten in place on a terminal), or
/// as JSON lines on stdout with `--json` (for scripts and tests).
public struct EventOutput: Sendable {
    public let json: Bool
    public init(json: Bool) { self.json = json }

    /// `human: nil`: a JSON-only event (too frequent for a person; the status line sums it up).
    public func event(_ name: NodeEventName, _ fields: [String: Any], human: String?) {
        if json {
            var object = fields
            object["event"] = name.rawValue
            ProcessSupport.printLine(ProcessSupport.json(object))
        } else if let human {
            if isatty(STDERR_FILENO) != 0 { ProcessSupport.status("") }
            ProcessSupport.printLine(human)
        }
    }

    public func status(_ fields: [String: Any], human: String) {
        if json { event(.status, fields, human: human) } else { ProcessSupport.status(human) }
    }

    /// A refused remote ICE candidate, as either node reports it (rate-limited per kind).
    public func candidateRefused(sessionId: String, kind: String, details: String, unreported: Int, total: Int) {
        event(.candidateRefused, ["sessionId": sessionId, "kind": kind, "details": details,
                                  "unreported": unreported, "total": total],
              human: "session \(sessionId): ICE candidate refused: \(details)"
                  + (unreported > 0 ? " (\(unreported) more of this kind not shown, \(total) in all)" : ""))
    }

    /// The candidate pair a session's media goes over, as either node reports it: each
    /// end's kind (host, srflx, prflx, relay) and address.
    public func mediaRoute(sessionId: String, local: (kind: String, address: String, port: Int),
                           remote: (kind: String, address: String, port: Int), transport: String) {
        event(.mediaRoute, ["sessionId": sessionId, "local": local.kind, "localAddress": "\(local.address):\(local.port)",
                            "remote": remote.kind, "remoteAddress": "\(remote.address):\(remote.port)", "transport": transport],
              human: "session \(sessionId): media over \(local.kind) \(local.address):\(local.port) ↔ \(remote.kind) \(remote.address):\(remote.port) (\(transport))")
    }
}
