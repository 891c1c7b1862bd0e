import Logging
import PoseCastKit
import RTCModel
import SFU

/// A session's media negotiated with Janus (`SubscriberSFULink`) instead of the
/// publisher: the session's start subscribes to the room's publisher there, Janus's offer
/// and then whether it hangs up or its connection goes come back as `events`. Each
/// session's Janus work is a task of its own, cancelled when the session ends, so no
/// event of an old session reaches a new one.
final class JanusSignaller: SubscriberSignaller {
    private let link: SubscriberSFULink
    private let tasks = OwnedTasks<String>()
    let events: AsyncStream<(sessionId: String, event: SubscriberSession.NegotiationEvent)>
    private let output: AsyncStream<(sessionId: String, event: SubscriberSession.NegotiationEvent)>.Continuation

    init(config: SubscriberSFUConfig, logger: Logger) {
        link = SubscriberSFULink(config: config, logger: logger)
        (events, output) = AsyncStream.makeStream()
    }

    /// The Janus server the current session's media comes from.
    var server: String? { link.server }

    func carry(_ negotiation: SubscriberSession.Negotiation) {
        switch negotiation {
        case .start(let sessionId):
            tasks.spawn(sessionId) { [link, output] in
                let event: SubscriberSession.NegotiationEvent
                do throws(JanusError) {
                    let (offer, feed, server) = try await link.subscribe()
                    guard !Task.isCancelled else { return }
                    output.yield((sessionId, .offer(sdp: offer, feed: feed, server: server)))
                    event = await Self.end(of: link.events)
                } catch {
                    event = Self.event(for: error)
                }
                guard !Task.isCancelled else { return }
                output.yield((sessionId, event))
            }
        case let .answer(sessionId, sdp):
            tasks.spawn(sessionId) { [link, output] in
                do throws(JanusError) { try await link.start(answer: sdp) } catch {
                    guard !Task.isCancelled else { return }
                    output.yield((sessionId, Self.event(for: error)))
                }
            }
        case let .candidate(_, candidate):
            link.trickle((candidate.candidate, candidate.mlineIndex))
        case .end(let sessionId):
            tasks.cancel(sessionId)
            link.close()
        }
    }

    func stop() async {
        // Cancelled and closed at once (a task waiting on Janus is woken by the close),
        // then closed again once they have ended: a subscription being set up while it
        // was cancelled may have opened a session of its own.
        async let ended: Void = tasks.cancelAll()
        link.close()
        await ended
        link.close()
        output.finish()
    }

    /// How a subscription ends: Janus hangs up or detaches the handle, or its events stop
    /// because the connection is gone.
    private static func end(of events: AsyncStream<JanusReply>?) async -> SubscriberSession.NegotiationEvent {
        guard let events else { return .lost(reason: "the connection to Janus closed") }
        for await event in events where event.verb == "hangup" || event.verb == "detached" {
            return .hungUp(reason: "Janus \(event.verb)\(event.reason.map { ": \($0)" } ?? "")")
        }
        return .lost(reason: "the connection to Janus closed")
    }

    /// A Janus error as the machine's event: a refusal (426: no such room), or a lost connection.
    private static func event(for error: JanusError) -> SubscriberSession.NegotiationEvent {
        if error.isConnectionLost { return .lost(reason: "\(error)") }
        let roomGone = if case .refused(_, let code, _) = error { code == JanusError.noSuchRoom } else { false }
        return .refused(reason: "\(error)", roomGone: roomGone)
    }
}
