import Foundation

/// What this process holds right now, read from `/proc/self` (Linux): open file
/// descriptors, threads and resident memory. The publisher prints them in its status
/// so fault tests and the soak can see a session's sockets and threads come back.
public struct ProcessResources: Sendable, Equatable {
    /// Entries of `/proc/self/fd` (sockets, pipes, eventfds, files).
    public var openFileDescriptors: Int
    /// Entries of `/proc/self/task`.
    public var threads: Int
    /// `VmRSS` of `/proc/self/status`, in KiB.
    public var residentKiB: Int

    /// Now; `nil` when `/proc` cannot be read (not Linux, or no procfs mounted).
    public static func current() -> ProcessResources? {
        let files = FileManager.default
        guard let fds = try? files.contentsOfDirectory(atPath: "/proc/self/fd"),
              let tasks = try? files.contentsOfDirectory(atPath: "/proc/self/task"),
              let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        // Listing /proc/self/fd opens one descriptor of its own while it reads.
        return ProcessResources(openFileDescriptors: max(fds.count - 1, 0), threads: tasks.count,
                                residentKiB: residentKiB(inStatus: status) ?? 0)
    }

    /// The `VmRSS:  1234 kB` line of a `/proc/PID/status` text.
    package static func residentKiB(inStatus text: String) -> Int? {
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }

    /// The status fields: `open_fds`, `threads`, `rss_kib`.
    public var statusFields: [String: Any] {
        ["open_fds": openFileDescriptors, "threads": threads, "rss_kib": residentKiB]
    }
}
