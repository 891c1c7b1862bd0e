// Who may still join a room, and who may still start a session with its publisher:
// the places reserved for the publisher and for authorised experts, as plain
// arithmetic the hub asks before it admits anyone.

/// What a declared peer counts as, for a room's places and a producer's sessions.
enum PlaceKind: Sendable, Hashable {
    /// The room's publisher (it always has a place of its own).
    case publisher
    /// An expert that showed the token its room requires for experts.
    case authorisedExpert
    /// Everyone else: viewers, listeners, experts of rooms without an expert token.
    case other
}

/// The declared peers of one room, by kind.
struct RoomOccupancy: Sendable, Hashable {
    var publishers = 0
    var authorisedExperts = 0
    var others = 0

    mutating func add(_ kind: PlaceKind) {
        switch kind {
        case .publisher: publishers += 1
        case .authorisedExpert: authorisedExperts += 1
        case .other: others += 1
        }
    }
}

extension HubLimits {
    /// Why a peer of `kind` may not join a room that already holds `occupancy` (the
    /// joining peer not counted), or `nil` when it may. `reserving`: the room's experts
    /// need a token, so `reservedExpertPlaces` are kept for them.
    ///
    /// One place is the publisher's whether it is there or not; of the others,
    /// `reservedExpertPlaces` are for authorised experts only. So idle viewers and
    /// listeners, however many, never keep out the publisher or an expert with a token.
    func placeRefusal(for kind: PlaceKind, joining occupancy: RoomOccupancy, reserving: Bool, room: String) -> String? {
        let besidesPublisher = maxPeersPerRoom - 1
        let reserved = reserving ? reservedExpertPlaces : 0
        let taken = occupancy.authorisedExperts + occupancy.others
        let full = "room \(room) is full (\(maxPeersPerRoom) peers: \(besidesPublisher) places besides the publisher's are taken)"
        switch kind {
        case .publisher:
            return occupancy.publishers > 0 ? "room \(room) already has a publisher" : nil
        case .authorisedExpert:
            return taken < besidesPublisher ? nil : full
        case .other:
            if taken >= besidesPublisher { return full }
            let open = besidesPublisher - reserved
            return occupancy.others < open ? nil
                : "room \(room) is full (\(maxPeersPerRoom) peers): its \(max(0, open)) places open without an expert token are taken"
                    + " (\(reserved) kept for experts with a token, 1 for the publisher)"
        }
    }

    /// Why a consumer of `kind` holding `consumerSessions` sessions may not start one more
    /// with a producer holding `producerSessions` (sessions being set up count as much as
    /// live ones), or `nil` when it may. `reserving` as for places.
    func sessionRefusal(for kind: PlaceKind, consumerSessions: Int, producerSessions: Int, reserving: Bool,
                        producer: String) -> String? {
        if consumerSessions >= maxSessionsPerConsumer {
            return "you already have \(consumerSessions) sessions (at most \(maxSessionsPerConsumer) per peer): end one first"
        }
        if producerSessions >= maxSessionsPerProducer {
            return "producer \(producer) already has \(maxSessionsPerProducer) sessions"
        }
        let reserved = reserving && kind != .authorisedExpert ? reservedExpertSessions : 0
        if producerSessions >= maxSessionsPerProducer - reserved {
            return "producer \(producer) has \(producerSessions) sessions: the last \(reserved) of its"
                + " \(maxSessionsPerProducer) are kept for experts with a token"
        }
        return nil
    }
}
