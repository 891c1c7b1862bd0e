import NIOCore

/// The server's front door: the first handler after TLS on every accepted connection,
/// before HTTP parsing, WebSocket upgrades or file serving see a byte. It holds a request
/// head until it is complete, in time, within size and well formed, and only then passes
/// it on; everything it refuses gets a complete HTTP response and a close
/// (`FrontDoorRefusal`). Once a WebSocket upgrade is answered 101 it steps aside: a
/// WebSocket's own limits are the hub's (message size, rate, idle and undeclared peers).
///
/// Why here and not in Hummingbird's pipeline: Hummingbird 2 arms its idle timeout only
/// after a first request head, leaves an oversized head unanswered, and its HTTP handlers
/// come after the upgrade decision, so idle sockets, slowloris clients and malformed heads
/// were held open for as long as their clients liked (docs/SECURITY.md).
///
/// Event-loop bound, as every channel handler: all its state is touched on its channel's loop.
final class FrontDoorHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private enum Phase {
        /// Not active yet: nothing counted.
        case starting
        /// Reading request heads.
        case heads
        /// An upgrade head went on; until its answer, bytes go on raw (swift-nio's decoder
        /// holds them for the WebSocket).
        case upgrading
        /// A WebSocket: not ours to read.
        case passthrough
        /// Answered and closing; input is dropped.
        case refused
    }

    /// After a refusal the output is closed at once and the input read and dropped for
    /// this long, so that a client still sending (a 200 KiB header) reads the answer
    /// instead of a reset; then the connection is closed.
    static let linger: TimeAmount = .seconds(1)

    private let ledger: FrontDoorLedger
    private let origins: OriginPolicy
    private let maxHeaderBytes: Int
    private let headerTimeout: TimeAmount
    private var phase = Phase.starting
    private var address = "unknown"
    private var admitted = false
    /// Bytes of the head being read (and any that followed it in the same read).
    private var pending: ByteBuffer?
    /// How far `pending` was already searched for the head's end.
    private var searched = 0
    private var deadline: Scheduled<Void>?
    private var lingerClose: Scheduled<Void>?
    private var deferredCloses: [EventLoopPromise<Void>] = []

    init(ledger: FrontDoorLedger, origins: OriginPolicy, maxHeaderBytes: Int) {
        self.ledger = ledger
        self.origins = origins
        self.maxHeaderBytes = maxHeaderBytes
        self.headerTimeout = .nanoseconds(Int64(RetryBackoff.nanos(ledger.limits.headerTimeout)))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        start(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    /// While a refusal lingers, closes asked for by the handlers behind (told the input
    /// ended) wait for the linger's end, so the answer is read rather than reset.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard phase == .refused, lingerClose != nil, mode == .all else {
            return context.close(mode: mode, promise: promise)
        }
        if let promise { deferredCloses.append(promise) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch phase {
        case .upgrading, .passthrough:
            context.fireChannelRead(data)
        case .refused, .starting:
            return
        case .heads:
            var bytes = unwrapInboundIn(data)
            if pending == nil { pending = bytes } else { pending!.writeBuffer(&bytes) }
            if deadline == nil { armDeadline(context) }
            takeHeads(context)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if phase == .upgrading, case .byteBuffer(let buffer) = unwrapOutboundIn(data),
           buffer.readableBytesView.starts(with: "HTTP/1.1 101".utf8) {
            phase = .passthrough
        }
        context.write(data, promise: promise)
    }

    // MARK: - Heads

    private func start(_ context: ChannelHandlerContext) {
        guard phase == .starting else { return }
        address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        phase = .heads
        guard ledger.admit(address) else {
            refuse(.tooManyConnections(limit: ledger.limits.maxConnectionsPerAddress), context)
            return
        }
        admitted = true
        armDeadline(context)
    }

    /// Passes on every complete, acceptable head in `pending`, with what follows it when
    /// that is a WebSocket's; refuses at the first that is not.
    private func takeHeads(_ context: ChannelHandlerContext) {
        while phase == .heads, var buffer = pending, buffer.readableBytes > 0 {
            guard let (headLength, totalLength) = Self.endOfHead(in: buffer.readableBytesView, from: searched) else {
                searched = max(0, buffer.readableBytes - 2)
                if buffer.readableBytes > maxHeaderBytes { refuse(.headTooLarge(limit: maxHeaderBytes), context) }
                return
            }
            guard headLength <= maxHeaderBytes else { return refuse(.headTooLarge(limit: maxHeaderBytes), context) }
            let head: RequestHead
            switch RequestHead.parse(buffer.readableBytesView.prefix(headLength)) {
            case .failure(let refusal): return refuse(refusal, context)
            case .success(let parsed): head = parsed
            }
            if head.isWebSocketUpgrade, !origins.allows(origin: head.field("origin"), host: head.field("host")) {
                return refuse(.foreignOrigin(head.field("origin") ?? ""), context)
            }
            guard ledger.takeRequest(address) else { return refuse(.tooManyRequests, context) }

            let request = buffer.readSlice(length: totalLength)!
            cancelDeadline()
            searched = 0
            if head.isWebSocketUpgrade {
                phase = .upgrading
                pending = nil
                context.fireChannelRead(wrapInboundOut(request))
                if buffer.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(buffer)) }
                return
            }
            pending = buffer.readableBytes > 0 ? buffer : nil
            context.fireChannelRead(wrapInboundOut(request))
            // Pipelined bytes already began the next head: its clock runs.
            if pending != nil { armDeadline(context) }
        }
    }

    /// Where the head in `bytes` ends: the length of its lines (up to the last line's LF,
    /// excluded) and with the empty line; nil while incomplete. Bare LFs are taken as line
    /// ends, as RFC 9112 allows a recipient to.
    static func endOfHead(in bytes: ByteBufferView, from start: Int) -> (head: Int, total: Int)? {
        let lf = UInt8(ascii: "\n"), cr = UInt8(ascii: "\r")
        var index = bytes.startIndex + start
        while let newline = bytes[index...].firstIndex(of: lf) {
            let next = bytes.index(after: newline)
            if next < bytes.endIndex, bytes[next] == lf {
                return (newline - bytes.startIndex, next + 1 - bytes.startIndex)
            }
            if next + 1 < bytes.endIndex, bytes[next] == cr, bytes[next + 1] == lf {
                return (newline - bytes.startIndex, next + 2 - bytes.startIndex)
            }
            if next >= bytes.endIndex { return nil }
            index = next
        }
        return nil
    }

    // MARK: - Refusing

    private func refuse(_ refusal: FrontDoorRefusal, _ context: ChannelHandlerContext) {
        guard phase != .refused else { return }
        phase = .refused
        pending = nil
        cancelDeadline()
        ledger.record(refusal, address: address)
        let answer = context.channel.allocator.buffer(string: refusal.response)
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(answer))).assumeIsolated().whenComplete { _ in
            context.close(mode: .output, promise: nil)
        }
        lingerClose = context.eventLoop.assumeIsolated().scheduleTask(in: Self.linger) { [self] in
            lingerClose = nil
            let closed = context.eventLoop.makePromise(of: Void.self)
            for promise in deferredCloses { closed.futureResult.cascade(to: promise) }
            deferredCloses = []
            context.close(promise: closed)
        }
        // Tell the HTTP handlers behind that no request is coming: swift-nio's upgrade
        // handler then ends quietly instead of failing "inappropriate operation for state"
        // (which Hummingbird logs as an error) when the connection goes.
        context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
    }

    private func armDeadline(_ context: ChannelHandlerContext) {
        cancelDeadline()
        let seconds = Double(headerTimeout.nanoseconds) / 1e9
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: headerTimeout) { [self] in
            deadline = nil
            refuse(.headTimedOut(seconds: seconds), context)
        }
    }

    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }

    private func finish() {
        cancelDeadline()
        lingerClose?.cancel()
        lingerClose = nil
        for promise in deferredCloses { promise.succeed() }
        deferredCloses = []
        if admitted {
            admitted = false
            ledger.release(address)
        }
    }
}
