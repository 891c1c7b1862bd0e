import PoseCastKit
import Signaling

/// Which experts' voices the publisher hears through the SFU, as a pure state machine
/// (docs/SCALING.md, "Voice through the SFU"). The voice room is a VideoRoom room with a
/// pin; each session through the SFU that may talk and has proved it receives is told the
/// room, the pin and a name of its own (`tell`), publishes its voice there under that
/// name, and the publisher subscribes to the feed of that name, and to no other: a feed
/// under a name it never gave out (or gave to a session now gone) is left alone and said
/// once. `PublisherSFUVoices` carries out the effects.
///
/// Each subscription is an `attempt` number; an event of one already ended is ignored. A
/// failed subscription is tried again after `backoff` while its feed is there, doubling
/// with each failure in a row for that session.
public struct SFUVoices: Sendable {
    public enum Event: Sendable, Equatable {
        /// The voice room was made afresh with `pin` and we watch it; `feeds`: there now.
        case roomOpened(pin: String, feeds: [Feed])
        /// The room or our connection to Janus is gone (every subscription with it).
        case roomLost(reason: String)
        /// The sessions through the SFU that may talk and have proved reception, now.
        case talkers(Set<String>)
        /// A feed was published in the voice room.
        case published(Feed)
        /// A feed left it.
        case unpublished(feed: UInt64)
        /// Subscription `attempt` is up and Janus's certificate checked: the voice plays.
        case subscribed(attempt: Int)
        /// Subscription `attempt` failed or ended.
        case subscriptionFailed(attempt: Int, reason: String)
        case tick
    }

    public struct Feed: Sendable, Equatable {
        public var id: UInt64
        public var display: String
        public init(id: UInt64, display: String) { self.id = id; self.display = display }
    }

    public enum Effect: Sendable, Equatable {
        /// Send this session its route (over signaling).
        case tell(sessionId: String, VoiceRoute)
        /// Subscribe to `feed` for `sessionId`'s voice.
        case subscribe(attempt: Int, sessionId: String, feed: UInt64, pin: String)
        /// End that subscription (its peer leaves the pipeline).
        case unsubscribe(attempt: Int)
        case emit(PublisherSFUVoiceEvent)
        /// Send `.tick` at this time (nanoseconds of the machine's clock).
        case wake(at: UInt64)
    }

    private struct Subscription: Equatable {
        var attempt: Int
        var feed: UInt64
        var playing = false
    }

    public let room: UInt64
    public let backoff: RetryBackoff
    private let makeName: @Sendable () -> String
    /// The room's pin while we watch it.
    public private(set) var pin: String?
    /// Each talking session's name in the voice room.
    public private(set) var names: [String: String] = [:]
    private var feeds: [UInt64: String] = [:]
    private var subscriptions: [String: Subscription] = [:]
    /// Failures in a row per session, and when it may be tried again.
    private var failures: [String: (count: Int, retryAt: UInt64)] = [:]
    /// Feeds already said to be nobody's.
    private var strangers: Set<UInt64> = []
    private var attempts = 0

    /// `names`: a fresh unguessable name for a talker (its feed's display in the room).
    public init(room: UInt64, backoff: RetryBackoff, names: @escaping @Sendable () -> String) {
        self.room = room
        self.backoff = backoff
        self.makeName = names
    }

    /// The sessions whose voice plays now.
    public var playing: Set<String> { Set(subscriptions.filter(\.value.playing).keys) }

    public mutating func handle(_ event: Event, now: UInt64) -> [Effect] {
        switch event {
        case let .roomOpened(pin, present):
            self.pin = pin
            feeds = Dictionary(present.map { ($0.id, $0.display) }, uniquingKeysWith: { _, last in last })
            strangers = []
            var effects: [Effect] = [.emit(.roomOpened(room: room))]
            // Every talker is told the new pin (their feeds went with the old room).
            for session in names.keys.sorted() { effects.append(tell(session)) }
            return effects + match(now: now)
        case .roomLost(let reason):
            guard pin != nil else { return [] }
            pin = nil
            feeds = [:]
            return endAll() + [.emit(.roomLost(room: room, reason: reason))]
        case .talkers(let current):
            var effects: [Effect] = []
            var changed = false
            for gone in names.keys.sorted() where !current.contains(gone) {
                changed = true
                // Its feed, until Janus drops it, is known: not a stranger's (a new one under the name would be).
                let name = names.removeValue(forKey: gone)
                for (id, display) in feeds where display == name { strangers.insert(id) }
                failures[gone] = nil
                effects += end(gone, reason: "its session ended or may no longer talk")
            }
            for added in current.sorted() where names[added] == nil {
                names[added] = makeName()
                changed = true
            }
            // Every talker is told again: the others it hears have changed.
            if pin != nil && changed { for session in names.keys.sorted() { effects.append(tell(session)) } }
            return effects + match(now: now)
        case .published(let feed):
            feeds[feed.id] = feed.display
            return match(now: now)
        case .unpublished(let id):
            feeds[id] = nil
            strangers.remove(id)
            guard let session = subscriptions.first(where: { $0.value.feed == id })?.key else { return [] }
            return end(session, reason: "its feed left the voice room")
        case .subscribed(let attempt):
            guard let session = session(of: attempt) else { return [] }
            subscriptions[session]?.playing = true
            failures[session] = nil
            return [.emit(.voiceHeard(sessionId: session, feed: subscriptions[session]!.feed))]
        case let .subscriptionFailed(attempt, reason):
            guard let session = session(of: attempt) else { return [] }
            subscriptions[session] = nil
            let count = (failures[session]?.count ?? 0) + 1
            let delay = backoff.delay(afterRefusals: count)
            let retryAt = now + RetryBackoff.nanos(delay)
            failures[session] = (count, retryAt)
            return [.unsubscribe(attempt: attempt), .emit(.voiceLost(sessionId: session, reason: reason, retryIn: delay)),
                    .wake(at: retryAt)]
        case .tick:
            return match(now: now)
        }
    }

    /// A talker's route: where it publishes, and the other talkers' names (whose feeds it hears).
    private func tell(_ session: String) -> Effect {
        let others = names.filter { $0.key != session }.map(\.value).sorted()
        return .tell(sessionId: session, VoiceRoute(room: room, pin: pin ?? "", display: names[session] ?? "", listen: others))
    }

    private func session(of attempt: Int) -> String? {
        subscriptions.first { $0.value.attempt == attempt }?.key
    }

    /// Subscribes each talker without a subscription to the feed under its name, and
    /// says once of each feed under a name nobody holds.
    private mutating func match(now: UInt64) -> [Effect] {
        guard let pin else { return [] }
        let owners = Dictionary(names.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
        var effects: [Effect] = []
        for (id, display) in feeds.sorted(by: { $0.key < $1.key }) {
            guard let session = owners[display] else {
                if strangers.insert(id).inserted { effects.append(.emit(.strangerFeed(feed: id, display: display))) }
                continue
            }
            if let current = subscriptions[session] {
                guard current.feed != id else { continue }
                // Published again under the same name: the newer feed is its voice.
                effects += end(session, reason: "it published again")
            }
            if let failed = failures[session], now < failed.retryAt { continue }
            attempts += 1
            subscriptions[session] = Subscription(attempt: attempts, feed: id)
            effects.append(.subscribe(attempt: attempts, sessionId: session, feed: id, pin: pin))
        }
        return effects
    }

    private mutating func end(_ session: String, reason: String) -> [Effect] {
        guard let sub = subscriptions.removeValue(forKey: session) else { return [] }
        return [.unsubscribe(attempt: sub.attempt)] + (sub.playing ? [.emit(.voiceEnded(sessionId: session, reason: reason))] : [])
    }

    private mutating func endAll() -> [Effect] {
        subscriptions.keys.sorted().flatMap { end($0, reason: "the voice room is gone") }
    }
}

/// What the publisher says of the experts' voices through the SFU.
public enum PublisherSFUVoiceEvent: Sendable, Equatable {
    case roomOpened(room: UInt64)
    case roomLost(room: UInt64, reason: String)
    /// A session's voice plays (its feed subscribed and connected).
    case voiceHeard(sessionId: String, feed: UInt64)
    case voiceEnded(sessionId: String, reason: String)
    /// Its subscription failed: tried again after `retryIn` while its feed is there.
    case voiceLost(sessionId: String, reason: String, retryIn: Duration)
    /// A feed under a name the publisher never gave out: not listened to.
    case strangerFeed(feed: UInt64, display: String)
}
