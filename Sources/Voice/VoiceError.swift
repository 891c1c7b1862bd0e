import RTCSession

/// What went wrong with a voice setting or device; every case says what to do instead.
public enum VoiceError: Error, Sendable, Equatable, CustomStringConvertible {
    case badSpec(String)
    /// The device could not be opened: the node goes on without it (video unaffected).
    case deviceUnavailable(what: String, reason: String)
    case media(RTCError)

    /// Any error thrown while building a chain: ours as it is, GStreamer's wrapped.
    package init(_ error: any Error) {
        switch error {
        case let e as VoiceError: self = e
        case let e as RTCError: self = .media(e)
        default: self = .media(.invalidArgument("\(error)"))
        }
    }

    public var description: String {
        switch self {
        case .badSpec(let m): m
        case let .deviceUnavailable(what, reason): "\(what) unavailable (\(reason)); going on without it"
        case .media(let e): e.description
        }
    }
}
