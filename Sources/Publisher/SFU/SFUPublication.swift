import PoseCastKit
import Signaling

/// The publisher's one publication into an SFU as a pure state machine: what Janus and
/// the peer connection say (published, connected, channel open, hung up, lost, refused,
/// room destroyed) comes in as `Event`s with the current time, and what to do comes out
/// as `Effect`s, which `PublisherSFULink` carries out. No sockets, no GStreamer: the
/// unit tests step its clock.
///
/// Each try is an `attempt` number; an event of an older attempt (a late hang-up of a
/// publication already withdrawn) is ignored, so it cannot end the next one. A lost or
/// refused publication is tried again after `backoff`, doubling with each failure in a
/// row; one that got as far as frames flowing starts the count again. A destroyed room is
/// made again by the next try (the publisher creates its room when it is missing).
public struct SFUPublication: Sendable {
    public enum Event: Sendable, Equatable {
        /// Begin publishing.
        case start
        /// Janus took our join and answered our offer: we are feed `feed` in the room.
        case published(attempt: Int, feed: UInt64)
        /// The peer connection to Janus is up; `mismatch`: why Janus's DTLS certificate
        /// does not match its answer (nil: it matches).
        case connected(attempt: Int, mismatch: String?)
        /// Our data channel to Janus is open.
        case channelOpen(attempt: Int)
        /// Janus ended the publication (its `hangup` or `detached`).
        case hungUp(attempt: Int, reason: String)
        /// The room was destroyed under us.
        case roomDestroyed(attempt: Int)
        /// The connection to Janus or the peer connection is gone, or could not be made.
        case lost(attempt: Int, reason: String)
        /// Janus refused a request of ours (the join, the room, our offer).
        case refused(attempt: Int, reason: String)
        /// The clock moved (a `wake` came due).
        case tick
        /// Stop publishing for good.
        case stop
    }

    public enum Effect: Sendable, Equatable {
        /// Try to publish: connect to Janus, make the room if missing, join, offer.
        case publish(attempt: Int)
        /// End that try: its peer leaves the pipeline and its Janus session closes.
        case withdraw(attempt: Int)
        /// The broadcasts (annotation list, scene status) go to this try's data channel
        /// from now on: it is open and Janus's certificate checked.
        case openBroadcast(attempt: Int)
        /// Said to the application.
        case emit(PublisherSFUEvent)
        /// Send `.tick` at this time (nanoseconds of the machine's clock).
        case wake(at: UInt64)
    }

    public enum Phase: Sendable, Equatable {
        case idle
        /// Trying, or published: `feed` once Janus took us; `verified` once the peer is
        /// up with a matching certificate; `open` once our data channel is.
        case publishing(attempt: Int, feed: UInt64?, verified: Bool, open: Bool)
        /// Waiting to try again at `until`.
        case waiting(until: UInt64)
        case stopped
    }

    public let room: UInt64
    public let poseTransport: PoseTransport
    public let backoff: RetryBackoff
    public private(set) var phase: Phase = .idle
    /// Tries so far (the number of the current or last one).
    public private(set) var attempts = 0
    /// Failures in a row since frames last flowed.
    public private(set) var failures = 0

    public init(room: UInt64, poseTransport: PoseTransport, backoff: RetryBackoff) {
        self.room = room
        self.poseTransport = poseTransport
        self.backoff = backoff
    }

    public mutating func handle(_ event: Event, now: UInt64) -> [Effect] {
        switch (event, phase) {
        case (.stop, .publishing(let attempt, _, _, _)):
            phase = .stopped
            return [.withdraw(attempt: attempt)]
        case (.stop, _):
            phase = .stopped
            return []
        case (_, .stopped):
            return []
        case (.start, .idle):
            return tryAgain()
        case (.start, _):
            return []
        case (.tick, .waiting(let until)):
            return now >= until ? tryAgain() : []
        case (.tick, _):
            return []
        case (_, .publishing(let current, let feed, let verified, let open)):
            guard let attempt = event.attempt, attempt == current else { return [] }
            return publishing(event, attempt: attempt, feed: feed, verified: verified, open: open, now: now)
        default:
            // An event of a try already over (its withdrawal raced it).
            return []
        }
    }

    private mutating func publishing(_ event: Event, attempt: Int, feed: UInt64?, verified: Bool, open: Bool,
                                     now: UInt64) -> [Effect] {
        switch event {
        case .published(_, let newFeed):
            phase = .publishing(attempt: attempt, feed: newFeed, verified: verified, open: open)
            return [.emit(.publishing(room: room, feed: newFeed, poseTransport: poseTransport))]
        case .connected(_, let mismatch):
            if let mismatch {
                return fail(attempt, reason: "Janus's DTLS certificate does not match its answer (\(mismatch))", now: now)
            }
            failures = 0
            phase = .publishing(attempt: attempt, feed: feed, verified: true, open: open)
            return [.emit(.connected)] + (open ? [.openBroadcast(attempt: attempt)] : [])
        case .channelOpen:
            phase = .publishing(attempt: attempt, feed: feed, verified: verified, open: true)
            return verified ? [.openBroadcast(attempt: attempt)] : []
        case .hungUp(_, let reason):
            return fail(attempt, reason: "Janus ended our publication (\(reason))", now: now)
        case .roomDestroyed:
            // Not the publisher's failure: the next try makes the room again, after the first delay.
            failures = 0
            return fail(attempt, reason: "Janus destroyed room \(room)", now: now)
        case .lost(_, let reason), .refused(_, let reason):
            return fail(attempt, reason: reason, now: now)
        case .start, .tick, .stop:
            return []
        }
    }

    private mutating func tryAgain() -> [Effect] {
        attempts += 1
        phase = .publishing(attempt: attempts, feed: nil, verified: false, open: false)
        return [.publish(attempt: attempts)]
    }

    private mutating func fail(_ attempt: Int, reason: String, now: UInt64) -> [Effect] {
        failures += 1
        let delay = backoff.delay(afterRefusals: failures)
        let until = now + RetryBackoff.nanos(delay)
        phase = .waiting(until: until)
        return [.withdraw(attempt: attempt), .emit(.lost(reason: reason, retryIn: delay)), .wake(at: until)]
    }
}

extension SFUPublication.Event {
    /// The try an event is about (nil: the machine's own events).
    var attempt: Int? {
        switch self {
        case .published(let a, _), .connected(let a, _), .channelOpen(let a), .hungUp(let a, _),
             .roomDestroyed(let a), .lost(let a, _), .refused(let a, _): a
        case .start, .tick, .stop: nil
        }
    }
}
