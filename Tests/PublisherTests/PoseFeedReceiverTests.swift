#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PoseCastKit
import Publisher
import Synchronization
import Testing
import TestSupport

/// Sends one datagram to 127.0.0.1:`port` from a fresh socket.
private func send(_ bytes: [UInt8], toPort port: Int) throws {
    #if canImport(Glibc)
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    #else
    let fd = socket(AF_INET, SOCK_DGRAM, 0)
    #endif
    try #require(fd >= 0, "socket: errno \(errno)")
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let sent = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    try #require(sent == bytes.count, "sendto: errno \(errno)")
}

private func send(_ text: String, toPort port: Int) throws { try send(Array(text.utf8), toPort: port) }

/// Collects what a receiver reports.
private final class Reports: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

private let good = #"{"p":[1,2,3],"q":[0,0,0,1]}"#

@Suite("pose feed receiver")
struct PoseFeedReceiverTests {
    @Test("UDP on port 0: good lines reach the store, bad ones are reported, rate-limited")
    func udp() async throws {
        let store = LivePoseStore(), reports = Reports()
        let receiver = PoseFeedReceiver(transport: .udp(host: "127.0.0.1", port: 0), store: store,
                                        reportInterval: .seconds(60), report: reports.add)
        try await receiver.start()
        let port = try #require(receiver.boundPort)
        #expect(port > 0)
        try send(good, toPort: port)
        try send(good + "\n{\"p\":[0,0,0]}\n\n" + #"{"position":[4,5,6],"orientation":[0,0,0,1]}"# + "\n", toPort: port)
        // A frame captured now has those samples: asked for at this time, however long the
        // counting below takes on a busy machine (a sample over 1 s old means `missing`).
        let frameTime = WallClock.nowNanos()
        try send((1...5).map { "bad \($0)" }.joined(separator: "\n"), toPort: port)
        try await waitUntil(10, "3 accepted and 6 rejected lines", progress: { "\(store.statistics)" }) {
            store.statistics.accepted == 3 && store.statistics.rejected == 6
        }
        #expect(store.statistics.lastError?.reason == "invalidJSON")
        let pose = LivePoseProvider(store: store, defaultIntrinsics: CameraIntrinsics(fx: 1, fy: 1, cx: 0.5, cy: 0.5))
            .pose(frameID: 1, captureTimeNanos: frameTime)
        #expect(pose.flags.isDisjoint(with: .missing))
        // One report at once; the five after it are held back by the rate limit.
        #expect(reports.all.count == 1)
        #expect(reports.all.first?.contains("pose feed (udp 127.0.0.1:0): rejected line: required field q (orientation) is missing") == true,
                "\(reports.all)")
        await receiver.stop()
        #expect(receiver.boundPort == nil)
        #expect(reports.all.count == 2, "\(reports.all)")
        #expect(reports.all.last?.contains("5 more rejected lines, the last: not valid JSON") == true, "\(reports.all)")
        // The port is free again, and nothing arrives any more.
        let again = PoseFeedReceiver(transport: .udp(host: "127.0.0.1", port: port), store: store, report: reports.add)
        try await again.start()
        await again.stop()
    }

    @Test("without a rate limit every rejection is reported: bad UTF-8, too long, bad JSON")
    func everyRejection() async throws {
        let store = LivePoseStore(), reports = Reports()
        let receiver = PoseFeedReceiver(transport: .udp(host: "127.0.0.1", port: 0), store: store,
                                        reportInterval: .zero, report: reports.add)
        try await receiver.start()
        let port = try #require(receiver.boundPort)
        try send([0xFF, 0xFE, 0x7B, 0x0A], toPort: port)
        try send(String(repeating: "x", count: 5000), toPort: port)
        try send("{", toPort: port)
        try await waitUntil(10, "three reports", progress: { "\(reports.all)" }) { reports.all.count == 3 }
        let all = reports.all.joined(separator: "\n")
        #expect(all.contains("line of 3 bytes is not valid UTF-8"))
        #expect(all.contains("line is 5000 bytes"))
        #expect(all.contains("not valid JSON"))
        await receiver.stop()
        #expect(reports.all.count == 3)
    }

    @Test("a line reader feeds the store until end of input, then says so")
    func lineReader() async throws {
        let store = LivePoseStore(), reports = Reports()
        let lines = Mutex<[String]>([good, "", "oops", good])
        let receiver = PoseFeedReceiver(transport: .lines(name: "test", next: {
            lines.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        }), store: store, report: reports.add)
        try await receiver.start()
        try await waitUntil(10, "end of input", progress: { "\(store.statistics)" }) { receiver.inputEnded }
        #expect(store.statistics.accepted == 2 && store.statistics.rejected == 1)
        #expect(reports.all.count == 2, "\(reports.all)")
        #expect(reports.all.first?.hasPrefix("pose feed (test): rejected line: not valid JSON") == true)
        #expect(reports.all.last?.contains("end of input") == true)
        await receiver.stop()
    }

    @Test("reports held back by the rate limit are counted into the next one")
    func rateLimit() async throws {
        let store = LivePoseStore(), reports = Reports()
        let lines = Mutex<[String]>(["bad 1", "bad 2", "bad 3", "bad 4"])
        let receiver = PoseFeedReceiver(transport: .lines(name: "slow", next: {
            let next = lines.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if next == "bad 4" { usleep(300_000) }
            return next
        }), store: store, reportInterval: .milliseconds(200), report: reports.add)
        try await receiver.start()
        try await waitUntil(10, "end of input", progress: { "\(reports.all)" }) { receiver.inputEnded }
        await receiver.stop()
        let rejections = reports.all.filter { $0.contains("rejected") }
        #expect(rejections.count == 2, "\(reports.all)")
        #expect(rejections.last?.contains("(2 more since the previous report") == true, "\(reports.all)")
    }

    @Test("a port in use, or a second start, fails with a clear error")
    func startErrors() async throws {
        let store = LivePoseStore()
        let first = PoseFeedReceiver(transport: .udp(host: "127.0.0.1", port: 0), store: store, report: { _ in })
        try await first.start()
        let port = try #require(first.boundPort)
        let error = await #expect(throws: PoseFeedReceiverError.self) { try await first.start() }
        #expect(error == .alreadyStarted)
        let second = PoseFeedReceiver(transport: .udp(host: "127.0.0.1", port: port), store: store, report: { _ in })
        let bindError = await #expect(throws: PoseFeedReceiverError.self) { try await second.start() }
        guard case .bindFailed(let host, let failedPort, _)? = bindError else {
            Issue.record("expected bindFailed, got \(String(describing: bindError))")
            await first.stop()
            return
        }
        #expect(host == "127.0.0.1" && failedPort == port)
        #expect(bindError?.description.contains("cannot receive poses on udp 127.0.0.1:\(port)") == true)
        await second.stop()
        await first.stop()
    }

    @Test("live pose sources map to transports; the others do not")
    func transports() {
        guard case .udp(let host, let port)? = PoseFeedReceiver.Transport(.udp(host: "0.0.0.0", port: 5005)) else {
            Issue.record("udp spec gave no udp transport")
            return
        }
        #expect(host == "0.0.0.0" && port == 5005)
        guard case .stdin? = PoseFeedReceiver.Transport(.stdin) else {
            Issue.record("stdin spec gave no stdin transport")
            return
        }
        #expect(PoseFeedReceiver.Transport(.walk) == nil && PoseFeedReceiver.Transport(.tum(path: "x")) == nil)
    }
}
