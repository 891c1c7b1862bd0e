import HummingbirdCore
import Logging
import NIOCore

/// Hummingbird's child channel (`base`: HTTP/1 with the WebSocket upgrade) with the
/// `FrontDoorHandler` put in front of it on every connection. Hummingbird offers
/// `additionalChannelHandlers` only after the HTTP decoder and the upgrade decision, too
/// late for a connection that never completes a head, so the door goes in here instead.
struct FrontDoorChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let ledger: FrontDoorLedger
    let origins: OriginPolicy
    let maxHeaderBytes: Int

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        // Added before `base` sets up its handlers, so it sits after TLS (when there is
        // TLS) and before HTTP.
        let added = channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(
                FrontDoorHandler(ledger: ledger, origins: origins, maxHeaderBytes: maxHeaderBytes))
        }
        return added.flatMap { base.setup(channel: channel, logger: logger) }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
