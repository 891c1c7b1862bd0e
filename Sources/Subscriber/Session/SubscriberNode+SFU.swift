import SFU

/// Carrying out the session machine's SFU effects with the node's `SubscriberSFULink`,
/// and turning what Janus says into the machine's `SFUEvent`s. The subscription's task
/// belongs to the session: leaving the SFU (the session's end, the node's stop) cancels
/// it, so no Janus event of an old session reaches a new one.
extension SubscriberNode {
    /// Subscribes to the room's publisher in Janus for `sessionId`: its offer, then
    /// whether Janus hangs up or the connection goes.
    func subscribeThroughSFU(_ sessionId: String) {
        guard let sfu else { return }
        let task = Task { [weak self] in
            let event: SubscriberSession.SFUEvent
            do throws(JanusError) {
                let (offer, feed) = try await sfu.subscribe()
                guard !Task.isCancelled else { return }
                await self?.feed(.sfu(sessionId: sessionId, .offer(sdp: offer, feed: feed)))
                event = await Self.end(of: sfu.events)
            } catch {
                event = Self.event(for: error)
            }
            guard !Task.isCancelled else { return }
            await self?.feed(.sfu(sessionId: sessionId, event))
        }
        let previous = state.withLock { s in defer { s.sfuSubscription = task }; return s.sfuSubscription }
        previous?.cancel()
    }

    /// Our answer to Janus's offer: Janus starts sending, or refuses.
    func answerThroughSFU(_ sessionId: String, sdp: String) {
        guard let sfu else { return }
        tasks.spawn(sessionId) { [weak self] in
            do throws(JanusError) { try await sfu.start(answer: sdp) } catch {
                await self?.feed(.sfu(sessionId: sessionId, Self.event(for: error)))
            }
        }
    }

    /// Leaves Janus: the subscription's task and the Janus session end.
    func leaveSFU() {
        let task = state.withLock { s in defer { s.sfuSubscription = nil }; return s.sfuSubscription }
        task?.cancel()
        sfu?.close()
    }

    /// How a subscription ends: Janus hangs up or detaches the handle, or its events stop
    /// because the connection is gone.
    private static func end(of events: AsyncStream<JanusReply>?) async -> SubscriberSession.SFUEvent {
        guard let events else { return .lost(reason: "the connection to Janus closed") }
        for await event in events where event.verb == "hangup" || event.verb == "detached" {
            return .hungUp(reason: "Janus \(event.verb)\(event.reason.map { ": \($0)" } ?? "")")
        }
        return .lost(reason: "the connection to Janus closed")
    }

    /// A Janus error as the machine's event: a refusal (426: no such room), or a lost connection.
    private static func event(for error: JanusError) -> SubscriberSession.SFUEvent {
        if error.isConnectionLost { return .lost(reason: "\(error)") }
        let roomGone = if case .refused(_, let code, _) = error { code == JanusError.noSuchRoom } else { false }
        return .refused(reason: "\(error)", roomGone: roomGone)
    }
}
