import Foundation
import NIOCore
import NIOPosix
import PoseCastKit
import Synchronization
import PoseMedia

/// Feeds a `LivePoseStore` from an external tracker: JSON lines on stdin, or in UDP
/// datagrams (docs/POSE_SOURCES.md). A bad line is reported through `report`, rate-limited
/// so a broken sender cannot flood the log, and never stops the receiver.
public final class PoseFeedReceiver: Sendable {
    /// Where the lines come from.
    public enum Transport: Sendable {
        /// Standard input, one line at a time, until end of input.
        case stdin
        /// Datagrams to `host:port` (port 0: any free port, see `boundPort`). Each datagram
        /// holds one or several whole lines; a line never spans datagrams.
        case udp(host: String, port: Int)
        /// Any blocking line reader (a FIFO, a test), read until it returns nil.
        case lines(name: String, next: @Sendable () -> String?)

        /// The transport of a live pose source; nil for synthetic and file sources.
        public init?(_ spec: PoseSourceSpec) {
            switch spec {
            case .stdin: self = .stdin
            case .udp(let host, let port): self = .udp(host: host, port: port)
            case .orbit, .walk, .pan, .shake, .tum, .apriltag: return nil
            }
        }

        var name: String {
            switch self {
            case .stdin: "stdin"
            case .udp(let host, let port): "udp \(host):\(port)"
            case .lines(let name, _): name
            }
        }
    }

    private enum Phase { case idle, running, stopped }
    private struct State {
        var phase = Phase.idle
        var channel: (any Channel)?
        var inputEnded = false
    }

    public let transport: Transport
    public let store: LivePoseStore
    private let sink: LineSink
    private let state = Mutex(State())

    /// - Parameters:
    ///   - reportInterval: at most one rejection report per interval; the ones in between
    ///     are counted into the next report.
    ///   - clock: host wall clock (ns since the Unix epoch) stamped on each line's arrival.
    ///   - report: rejections and the end of input, one line each, on a transport thread.
    public init(transport: Transport, store: LivePoseStore, reportInterval: Duration = .seconds(1),
                clock: @escaping @Sendable () -> UInt64 = WallClock.nowNanos,
                report: @escaping @Sendable (String) -> Void) {
        self.transport = transport; self.store = store
        sink = LineSink(store: store, clock: clock,
                        reports: RejectionReports(prefix: "pose feed (\(transport.name))", interval: reportInterval, report: report))
    }

    /// Starts receiving: binds the UDP socket, or starts the reader thread.
    public func start() async throws(PoseFeedReceiverError) {
        try state.withLock { s throws(PoseFeedReceiverError) in
            guard s.phase == .idle else { throw .alreadyStarted }
            s.phase = .running
        }
        switch transport {
        case .stdin: startReader { readLine(strippingNewline: true) }
        case .lines(_, let next): startReader(next)
        case .udp(let host, let port):
            let channel: any Channel
            do { channel = try await bind(host: host, port: port) } catch {
                state.withLock { $0.phase = .stopped }
                throw .bindFailed(host: host, port: port, reason: "\(error)")
            }
            let keep = state.withLock { s in
                guard s.phase == .running else { return false }
                s.channel = channel
                return true
            }
            // stop() ran while binding: close what it could not see.
            if !keep { try? await channel.close() }
        }
    }

    /// Stops receiving and reports rejections still held back by the rate limit. A reader
    /// blocked on stdin cannot be woken; it exits at its next line or end of input, and
    /// lines it reads after this are dropped.
    public func stop() async {
        let channel = state.withLock { s -> (any Channel)? in
            s.phase = .stopped
            defer { s.channel = nil }
            return s.channel
        }
        sink.stop()
        if let channel { try? await channel.close() }
        sink.reports.flush()
    }

    /// The local UDP port while bound (useful with port 0); nil otherwise.
    public var boundPort: Int? { state.withLock { $0.channel?.localAddress?.port } }

    /// True once a line reader (stdin, `.lines`) reached end of input.
    public var inputEnded: Bool { state.withLock { $0.inputEnded } }

    private func startReader(_ next: @escaping @Sendable () -> String?) {
        let sink = sink
        Thread { [weak self] in
            while let line = next(), !sink.isStopped { sink.consume(line) }
            guard !sink.isStopped else { return }
            sink.reports.note("end of input: no more poses; frames will be flagged missing once the last pose is stale")
            self?.state.withLock { $0.inputEnded = true }
        }.start()
    }

    private func bind(host: String, port: Int) async throws -> any Channel {
        let sink = sink
        return try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            // Big enough for any datagram, so none is truncated into a broken line.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DatagramLineHandler(sink: sink))
                }
            }
            .bind(host: host, port: port).get()
    }
}

/// Why a receiver could not start.
public enum PoseFeedReceiverError: Error, Sendable, Hashable, CustomStringConvertible {
    case alreadyStarted
    case bindFailed(host: String, port: Int, reason: String)

    public var description: String {
        switch self {
        case .alreadyStarted: "the pose feed receiver was already started (start it once)"
        case .bindFailed(let host, let port, let reason): "cannot receive poses on udp \(host):\(port): \(reason)"
        }
    }
}

/// Where every transport delivers its lines: stamps the arrival time, stores, reports.
final class LineSink: Sendable {
    let store: LivePoseStore
    let clock: @Sendable () -> UInt64
    let reports: RejectionReports
    private let stopped = Atomic(false)

    init(store: LivePoseStore, clock: @escaping @Sendable () -> UInt64, reports: RejectionReports) {
        self.store = store; self.clock = clock; self.reports = reports
    }

    var isStopped: Bool { stopped.load(ordering: .acquiring) }
    func stop() { stopped.store(true, ordering: .releasing) }

    func consume(_ line: some StringProtocol) {
        guard !isStopped else { return }
        do { try store.ingest(line: line, arrivalNanos: clock()) } catch { reports.rejected("\(error)") }
    }
}

/// Splits each datagram into lines for the sink.
private final class DatagramLineHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let sink: LineSink

    init(sink: LineSink) { self.sink = sink }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data).data.readableBytesView
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            guard let text = String(validating: line, as: UTF8.self) else {
                sink.reports.rejected("line of \(line.count) bytes is not valid UTF-8")
                continue
            }
            sink.consume(text)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A receive error concerns one datagram; the socket keeps working.
        sink.reports.rejected("receive error: \(error)")
    }
}

/// Reports rejected lines at most once per interval, with the count of those in between.
final class RejectionReports: Sendable {
    private struct State {
        var lastReport: ContinuousClock.Instant?
        var heldBack = 0
        var lastHeldReason = ""
    }

    let prefix: String
    let interval: Duration
    private let report: @Sendable (String) -> Void
    private let state = Mutex(State())

    init(prefix: String, interval: Duration, report: @escaping @Sendable (String) -> Void) {
        self.prefix = prefix; self.interval = interval; self.report = report
    }

    func rejected(_ reason: String) {
        let now = ContinuousClock.now
        let message = state.withLock { s -> String? in
            if let last = s.lastReport, now - last < interval {
                s.heldBack += 1; s.lastHeldReason = reason
                return nil
            }
            let held = s.heldBack, previous = s.lastReport
            s.lastReport = now; s.heldBack = 0
            guard held > 0, let previous else { return "rejected line: \(reason)" }
            return "rejected line: \(reason) (\(held) more since the previous report \(Self.seconds(now - previous)) s ago)"
        }
        if let message { report("\(prefix): \(message)") }
    }

    /// Reports what the rate limit still holds back (at stop).
    func flush() {
        let message = state.withLock { s -> String? in
            guard s.heldBack > 0 else { return nil }
            defer { s.heldBack = 0 }
            return "\(s.heldBack) more rejected line\(s.heldBack == 1 ? "" : "s"), the last: \(s.lastHeldReason)"
        }
        if let message { report("\(prefix): \(message)") }
    }

    /// Something to tell that is not a rejection (never rate-limited).
    func note(_ text: String) { report("\(prefix): \(text)") }

    private static func seconds(_ d: Duration) -> String {
        let (s, attos) = d.components
        return String(format: "%.1f", Double(s) + Double(attos) / 1e18)
    }
}
