/// Everything that can go wrong around webrtcbin, with the context to act on it.
public enum RTCError: Error, Sendable, Equatable, CustomStringConvertible {
    case initialisation(String)
    /// An element factory is not installed; names the plugin and the Debian package that ships it.
    case elementMissing(factory: String, plugin: String, package: String)
    case linkFailed(from: String, to: String)
    case stateChange(element: String, target: String)
    /// A capture device is absent; `hint` says how to run without it.
    case deviceMissing(path: String, hint: String)
    case invalidDescription(String)
    case promise(operation: String, outcome: PromiseFailure)
    case negotiation(peer: String, reason: String)
    case dataChannel(label: String, reason: String)
    case pipeline(source: String, message: String, debug: String)
    case invalidArgument(String)
    /// A remote ICE candidate not added: malformed, or for an m-line the session lacks.
    case candidateRefused(ICECandidateCheck.Refusal)
    case closed(String)

    public enum PromiseFailure: String, Sendable, Equatable {
        case interrupted, expired, noReply, dropped
    }

    public var description: String {
        switch self {
        case .initialisation(let m): "GStreamer could not be initialised: \(m)"
        case let .elementMissing(factory, plugin, package):
            "GStreamer element '\(factory)' is missing (plugin '\(plugin)'): install the Debian package \(package), e.g. `apt-get install \(package)` or run scripts/setup"
        case let .linkFailed(from, to): "could not link \(from) to \(to) (incompatible caps?)"
        case let .stateChange(element, target): "\(element) failed to change state to \(target)"
        case let .deviceMissing(path, hint): "capture device \(path) does not exist; \(hint)"
        case .invalidDescription(let m): "invalid session description: \(m)"
        case let .promise(op, outcome): "\(op) did not complete: promise \(outcome.rawValue)"
        case let .negotiation(peer, reason): "negotiation with \(peer) failed: \(reason)"
        case let .dataChannel(label, reason): "data channel '\(label)': \(reason)"
        case let .pipeline(source, message, debug):
            "pipeline error from \(source): \(message)" + (debug.isEmpty ? "" : " (\(debug))")
        case .invalidArgument(let m): "invalid argument: \(m)"
        case .candidateRefused(let refusal): "\(refusal)"
        case .closed(let what): "\(what) is closed"
        }
    }
}
