import Foundation
import TestSupport
import Testing

/// No traffic a call does not need: during a call, neither the publisher nor
/// the subscriber holds an SSDP socket (UDP port 1900) or has joined the SSDP multicast
/// group 239.255.255.250, as libnice's UPnP port mapping did in every session before
/// `WebRTCPeer.disableUPnP` (with it on, this test finds both).
@Suite("system: no stray traffic during a call", .serialized, .tags(.system))
struct StrayTrafficSystemTests {
    /// The UDP sockets PID holds: "address:port" in /proc's hex form (port 1900 = 076C).
    static func udpSockets(of pid: Int32) -> [String] {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let inodes = Set(fds.compactMap { fd -> String? in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                  target.hasPrefix("socket:[") else { return nil }
            return String(target.dropFirst(8).dropLast())
        })
        var sockets: [String] = []
        for table in ["udp", "udp6"] {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/net/\(table)", encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let columns = line.split(separator: " ")
                // sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
                guard columns.count > 9, inodes.contains(String(columns[9])) else { continue }
                sockets.append(String(columns[1]))
            }
        }
        return sockets
    }

    /// The multicast groups joined in PID's network namespace (hex, as /proc shows them).
    static func multicastGroups(of pid: Int32) -> [String] {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/net/igmp", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let columns = line.split(whereSeparator: \.isWhitespace)
            return columns.count >= 2 && line.hasPrefix("\t") && columns[0].count == 8 ? String(columns[0]) : nil
        }
    }

    /// True when this machine has a link-local IPv6 address (libnice would gather on it).
    static var hasLinkLocalIPv6: Bool {
        ((try? String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8)) ?? "").split(separator: "\n").contains { $0.hasPrefix("fe8") }
    }

    @Test("a publisher and a subscriber in a call: no socket on port 1900, the SSDP group never joined, nothing bound to a link-local address")
    func noSSDP() async throws {
        let signaling = try ManagedProcess("posecast-signaling", ["--port", "0"], name: "signaling")
        defer { signaling.signal(SIGTERM) }
        let (line, _) = try await signaling.waitForLine("listening line", timeout: 20) { $0.hasPrefix("listening ") }
        let url = String(line.dropFirst("listening ".count))
        let publisher = try ManagedProcess("posecast-publisher", ["--source", "synthetic", "--signaling", url, "--json"], name: "publisher")
        defer { publisher.signal(SIGTERM) }
        try await publisher.waitForEvent("publisher registered", timeout: 30) { $0.is(.signalingConnected) }
        let subscriber = try ManagedProcess("posecast-subscriber", ["--headless", "--json", "--signaling", url], name: "subscriber")
        defer { subscriber.signal(SIGTERM) }
        try await subscriber.waitForEvent("a call with posed frames", timeout: 30) { $0.is(.status) && $0.int("frames_with_pose") >= 30 }
        if !Self.hasLinkLocalIPv6 { print("stray traffic: this machine has no link-local IPv6 address; that check proves nothing here") }
        // Gathering and any discovery start with the session: look a few times during it.
        for _ in 0..<4 {
            for process in [publisher, subscriber] {
                let sockets = Self.udpSockets(of: process.pid)
                #expect(!sockets.isEmpty, "\(process.name): no UDP socket found at all (the check would prove nothing)")
                #expect(!sockets.contains { $0.hasSuffix(":076C") }, "\(process.name) holds an SSDP socket: \(sockets)")
                // /proc prints each 32-bit word of an IPv6 address in host order: fe80:: is 000080FE….
                #expect(!sockets.contains { $0.hasPrefix("000080FE") }, "\(process.name) gathers on a link-local address: \(sockets)")
                #expect(!Self.multicastGroups(of: process.pid).contains("FAFFFFEF"),
                        "\(process.name)'s network has joined 239.255.255.250 (SSDP): \(Self.multicastGroups(of: process.pid))")
            }
            try await Task.sleep(for: .seconds(1))
        }
    }
}
