import PoseCastKit
import Signaling

/// An expert's voice into Janus's voice room, as a pure state machine: the publisher's
/// route (room, pin, our name there: `voiceRoute` over signaling) starts a publication;
/// a new route (the room made again with a new pin) replaces it; a publication Janus ends,
/// refuses or loses is tried again after `backoff`, doubling with each failure in a row
/// until one connects. `SubscriberSFUVoice` carries out the effects; each try is an
/// `attempt` number and an event of one already withdrawn is ignored.
struct SFUVoicePublication: Sendable {
    enum Event: Sendable, Equatable {
        case route(VoiceRoute)
        /// Janus took our offer: our feed in the voice room.
        case published(attempt: Int, feed: UInt64)
        /// The peer connection is up; `mismatch`: why Janus's certificate does not match its answer.
        case connected(attempt: Int, mismatch: String?)
        /// The try failed or Janus ended it.
        case ended(attempt: Int, reason: String)
        case tick
        case stop
    }

    enum Effect: Sendable, Equatable {
        case publish(attempt: Int, VoiceRoute)
        case withdraw(attempt: Int)
        /// The other talkers to hear now (their names; the current try's route had others).
        case hear([String])
        case emit(SFUVoiceNote)
        case wake(at: UInt64)
    }

    enum Phase: Sendable, Equatable {
        case idle
        case publishing(attempt: Int, route: VoiceRoute, connected: Bool)
        case waiting(until: UInt64, route: VoiceRoute)
        case stopped
    }

    let backoff: RetryBackoff
    private(set) var phase: Phase = .idle
    private(set) var attempts = 0
    private(set) var failures = 0

    init(backoff: RetryBackoff) { self.backoff = backoff }

    mutating func handle(_ event: Event, now: UInt64) -> [Effect] {
        switch (event, phase) {
        case (_, .stopped):
            return []
        case (.stop, .publishing(let attempt, _, _)):
            phase = .stopped
            return [.withdraw(attempt: attempt)]
        case (.stop, _):
            phase = .stopped
            return []
        case (.route(let route), .publishing(let attempt, let current, let connected)):
            guard route != current else { return [] }
            if route.samePlace(as: current) {
                // Only whom we hear changed: the publication stays.
                phase = .publishing(attempt: attempt, route: route, connected: connected)
                return [.hear(route.listen)]
            }
            failures = 0
            return [.withdraw(attempt: attempt)] + publish(route)
        case (.route(let route), .waiting(let until, let current)) where route.samePlace(as: current):
            // Whom we hear is taken up by the next try, after the wait.
            phase = .waiting(until: until, route: route)
            return []
        case (.route(let route), _):
            failures = 0
            return publish(route)
        case (.tick, .waiting(let until, let route)):
            return now >= until ? publish(route) : []
        case (.tick, _):
            return []
        case (_, .publishing(let current, let route, let connected)):
            return publishing(event, current: current, route: route, connected: connected, now: now)
        default:
            return []
        }
    }

    private mutating func publishing(_ event: Event, current: Int, route: VoiceRoute, connected: Bool, now: UInt64) -> [Effect] {
        switch event {
        case let .published(attempt, feed) where attempt == current:
            return [.emit(.published(room: route.room, feed: feed))]
        case let .connected(attempt, mismatch) where attempt == current:
            if let mismatch { return fail(current, route: route, reason: "Janus's DTLS certificate does not match its answer (\(mismatch))", now: now) }
            failures = 0
            phase = .publishing(attempt: current, route: route, connected: true)
            return [.emit(.talking(room: route.room))]
        case let .ended(attempt, reason) where attempt == current:
            return fail(current, route: route, reason: reason, now: now)
        default:
            return []
        }
    }

    private mutating func publish(_ route: VoiceRoute) -> [Effect] {
        attempts += 1
        phase = .publishing(attempt: attempts, route: route, connected: false)
        return [.publish(attempt: attempts, route)]
    }

    private mutating func fail(_ attempt: Int, route: VoiceRoute, reason: String, now: UInt64) -> [Effect] {
        failures += 1
        let delay = backoff.delay(afterRefusals: failures)
        let until = now + RetryBackoff.nanos(delay)
        phase = .waiting(until: until, route: route)
        return [.withdraw(attempt: attempt), .emit(.lost(reason: reason, retryIn: delay)), .wake(at: until)]
    }
}

/// What an expert's voice through the SFU does, as said to whoever runs the node.
public enum SFUVoiceNote: Sendable, Equatable {
    /// Janus took our voice's offer: feed `feed` in voice room `room`.
    case published(room: UInt64, feed: UInt64)
    /// Connected: the field hears us.
    case talking(room: UInt64)
    /// Failed or ended: tried again after `retryIn`.
    case lost(reason: String, retryIn: Duration)
}
