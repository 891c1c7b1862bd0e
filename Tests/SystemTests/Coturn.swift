import Foundation
import TestSupport

/// Debian's coturn on loopback with one user (long-term credentials), for the tests that
/// send media through a real TURN relay. Loopback peers are allowed (everything here is
/// on 127.0.0.1); no TLS/DTLS listeners; its log on stdout, its files in `directory`.
struct Coturn {
    let process: ManagedProcess
    let port: Int
    let user = "posecast"
    let password: String

    static let binary = "/usr/bin/turnserver"

    /// Starts it and waits until it listens. The port depends on the test process's pid
    /// (two test runs on one machine do not collide); `offset` separates two relays of
    /// one run.
    static func start(directory: String, offset: Int = 0) async throws -> Coturn {
        let port = 34_000 + Int(getpid() % 500) * 2 + offset
        let password = "pw\(UInt32.random(in: 0...UInt32.max))"
        let process = try ManagedProcess(binary, [
            "-n", "-v", "--listening-ip", "127.0.0.1", "--listening-port", String(port), "--relay-ip", "127.0.0.1",
            "--min-port", String(port + 2000), "--max-port", String(port + 2200), "--lt-cred-mech",
            "--user", "posecast:\(password)", "--realm", "posecast", "--allow-loopback-peers", "--no-cli", "--no-tls",
            "--no-dtls", "--fingerprint", "--log-file", "stdout", "--pidfile", "\(directory)/turnserver.pid",
            "--userdb", "\(directory)/turndb", "--no-stun-backward-compatibility",
        ], name: "coturn")
        try await process.waitForLine("coturn listening", timeout: 15) { $0.contains("Total General servers") || $0.contains("turn server id=") }
        return Coturn(process: process, port: port, password: password)
    }

    /// Our executables' form: turn://USER:PASSWORD@127.0.0.1:PORT.
    var url: String { "turn://\(user):\(password)@127.0.0.1:\(port)" }
    /// A browser's form (the credentials go apart).
    var browserURL: String { "turn:127.0.0.1:\(port)?transport=udp" }
}
