import Foundation
import Synchronization
import NodeOutput
import Testing
import TestSupport

/// A private network for Janus and its peers: Janus ignores loopback for media, and the
/// tests never use the machine's real interface. Two network namespaces joined by a veth
/// pair: Janus and the subscribers in one (`name`, 10.77.x.1 on v0), the publisher alone
/// in the other (`publisherName`, 10.77.x.2 on v1), so everything the publisher uploads
/// crosses v1 and its byte counter is the publisher's real upload. `lo` is up in both.
/// Removed at the end (its processes are gone by then).
struct SFUNetwork {
    let name: String
    /// Janus's and the subscribers' address.
    let address: String
    var publisherName: String { name + "-p" }
    /// The publisher's address, in its own namespace.
    var publisherAddress: String { address.dropLast(2) + ".2" }

    /// Nil, with the reason, where namespaces or Janus are unavailable.
    static func make() throws -> (SFUNetwork?, String?) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/janus") else {
            return (nil, "janus is not installed (scripts/setup installs Debian's janus)")
        }
        // A step can fail once on a kernel still tearing down the last test's namespaces
        // (a fresh-clone CI run refused a veth move once): a new network, up to 3 times.
        var refusal = ""
        for _ in 0..<3 {
            let (net, failed) = makeOnce()
            if let net { return (net, nil) }
            refusal = failed
            Thread.sleep(forTimeInterval: 0.5)
        }
        return (nil, refusal)
    }

    private static func makeOnce() -> (SFUNetwork?, String) {
        // One number per network in this process (a random start, then counting), so two
        // tests never draw the same namespace name or subnet.
        let n = 10 + (networkBase + networkCount.add(1, ordering: .relaxed).oldValue) % 241
        let net = SFUNetwork(name: "posecast-sfu-\(getpid())-\(n)", address: "10.77.\(n).1")
        let (name, publisher) = (net.name, net.publisherName)
        let steps = [
            ["netns", "add", name],
            ["netns", "add", publisher],
            ["-n", name, "link", "set", "lo", "up"],
            ["-n", publisher, "link", "set", "lo", "up"],
            ["-n", name, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
            ["-n", name, "link", "set", "v1", "netns", publisher],
            ["-n", name, "addr", "add", "\(net.address)/24", "dev", "v0"],
            ["-n", publisher, "addr", "add", "\(net.publisherAddress)/24", "dev", "v1"],
            ["-n", name, "link", "set", "v0", "up"],
            ["-n", publisher, "link", "set", "v1", "up"],
        ]
        for step in steps {
            guard Self.ip(step) == 0 else {
                net.remove()
                return (nil, "network namespaces are refused here (`ip \(step.joined(separator: " "))` failed, at the third try)")
            }
        }
        return (net, "")
    }

    /// `make`, or nil after saying why `what` is skipped.
    static func make(orSkip what: String) throws -> SFUNetwork? {
        let (made, reason) = try make()
        if made == nil { print("SKIPPED: \(what) cannot run here: \(reason ?? "?")") }
        return made
    }

    @discardableResult
    private static func ip(_ arguments: [String]) -> Int32 {
        (try? ManagedProcess.runBlocking("/usr/sbin/ip", arguments, timeout: 10))?.status ?? -1
    }

    func remove() {
        Self.ip(["netns", "delete", name])
        Self.ip(["netns", "delete", publisherName])
    }

    /// One of the project's executables (or a path) in Janus's and the subscribers' namespace.
    func process(_ executable: String, _ arguments: [String], name: String) throws -> ManagedProcess {
        try Self.process(in: self.name, executable, arguments, name: name)
    }

    /// The publisher (or anything else) in the publisher's namespace.
    func publisherProcess(_ executable: String, _ arguments: [String], name: String) throws -> ManagedProcess {
        try Self.process(in: publisherName, executable, arguments, name: name)
    }

    /// The command that runs the one after it in Janus's and the subscribers' namespace.
    var exec: [String] { Self.exec(name) }

    private static func exec(_ namespace: String) -> [String] { ["/usr/sbin/ip", "netns", "exec", namespace] }

    private static func process(in namespace: String, _ executable: String, _ arguments: [String], name: String) throws -> ManagedProcess {
        let path = executable.hasPrefix("/") ? executable : ManagedProcess.binDirectory.appendingPathComponent(executable).path
        let command = exec(namespace) + [path] + arguments
        return try ManagedProcess(command[0], Array(command.dropFirst()), name: name)
    }

    /// Bytes the publisher's namespace has sent so far (v1's counter): its upload.
    func publisherUploadBytes() throws -> UInt64 {
        let command = Self.exec(publisherName) + ["cat", "/sys/class/net/v1/statistics/tx_bytes"]
        let run = try ManagedProcess.runBlocking(command[0], Array(command.dropFirst()), timeout: 5)
        guard let bytes = UInt64(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw HarnessTimeout(description: "v1's tx_bytes in \(publisherName): \(run.stdout) \(run.stderr)")
        }
        return bytes
    }
}

/// Janus in the network and an H.264 publisher (synthetic camera, orbit) published into
/// it, DTLS with Janus checked: where most SFU tests start. `stop` ends both.
struct SFUStage {
    let janus: ManagedProcess
    let publisher: ManagedProcess
    /// The `--sfu` argument, the Janus room and the publisher's embedded signaling URL.
    let sfu: String, room: String, signaling: String

    static func start(on net: SFUNetwork, name: String, publisherArguments: [String] = []) async throws -> SFUStage {
        let janus = try net.process("/bin/bash", [AiortcPython.packageRoot.appendingPathComponent("scripts/sfu").path, "--port", "8188",
                                                   "--config-dir", NSTemporaryDirectory() + net.name, "--debug-level", "3"], name: "janus")
        let sfu = "janus:ws://\(net.address):8188/"
        let room = String(Int.random(in: 1000...9999))
        var publisher: ManagedProcess?
        do {
            // It listens where the subscribers are (Janus's namespace reaches it over the pair).
            // No voice unless the test asks for some.
            let quiet = publisherArguments.contains("--microphone") ? [] : ["--microphone", "none", "--speaker", "none"]
            let started = try net.publisherProcess("posecast-publisher", [
                "--source", "synthetic", "--pose", "orbit", "--codec", "h264", "--sfu", sfu, "--room", room,
                "--listen", "\(net.publisherAddress):0", "--json"] + quiet + publisherArguments,
                name: "publisher (\(name))")
            publisher = started
            let (listening, _) = try await started.waitForEvent("embedded signaling", timeout: 20) { $0.is(.listening) }
            let signaling = try #require(listening.string("url"))
            try await started.waitForEvent("DTLS with Janus, its certificate checked", timeout: 30) { $0.is(.sfuConnected) }
            return SFUStage(janus: janus, publisher: started, sfu: sfu, room: room, signaling: signaling)
        } catch {
            publisher?.signal(SIGTERM)
            janus.signal(SIGTERM)
            throw error
        }
    }

    func stop() {
        publisher.signal(SIGTERM)
        janus.signal(SIGTERM)
    }
}

/// `SFUNetwork.make`'s numbering.
private let networkBase = Int.random(in: 0..<241)
private let networkCount = Atomic<Int>(0)
