import RTCModel

/// Where one try of the publisher's publication into an SFU is negotiated: Janus's
/// VideoRoom (`JanusPublicationSignaller`); a WHIP client would be a second (its POST is
/// `open` and `publish` at once, its PATCH `trickle`, its DELETE `close`).
/// `PublisherSFULink` drives it with the peer it adds for the try, and turns what it says
/// into `SFUPublication`'s events; the SFU's own words (room, feed ids, hang-ups) stay
/// behind it. One signaller serves one try: `close` ends it, and a new try makes a new one.
protocol PublicationSignaller: Sendable {
    /// Connects and takes a place to publish (Janus: a session, the room made when
    /// missing, joined as a publisher): our id there.
    func open() async throws(PublicationFailure) -> UInt64
    /// Our offer; the SFU's answer.
    func publish(offer sdp: String) async throws(PublicationFailure) -> String
    /// A local candidate, or (nil) the end of gathering; only queues.
    func trickle(_ candidate: ICECandidate?)
    /// Waits for the SFU to end the publication: how it ended, or nil when the calling
    /// task was cancelled first.
    func ended() async -> PublicationEnd?
    /// Lets go of the SFU (the try is over); `ended` returns.
    func close()
}

/// Why a signaller's request failed: the SFU said no, or the way to it is gone.
enum PublicationFailure: Error, Sendable, Equatable {
    case refused(String)
    case lost(String)

    /// The machine's event for a failure of try `attempt`.
    func event(attempt: Int) -> SFUPublication.Event {
        switch self {
        case .refused(let reason): .refused(attempt: attempt, reason: reason)
        case .lost(let reason): .lost(attempt: attempt, reason: reason)
        }
    }
}

/// How the SFU ended a publication.
enum PublicationEnd: Sendable, Equatable {
    /// It hung up or dropped our handle (`reason`: its words).
    case hungUp(String)
    /// The room was destroyed under us.
    case roomDestroyed
    /// The connection to it closed.
    case lost(String)

    func event(attempt: Int) -> SFUPublication.Event {
        switch self {
        case .hungUp(let reason): .hungUp(attempt: attempt, reason: reason)
        case .roomDestroyed: .roomDestroyed(attempt: attempt)
        case .lost(let reason): .lost(attempt: attempt, reason: reason)
        }
    }
}
