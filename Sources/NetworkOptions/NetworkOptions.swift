import ArgumentParser
import Foundation
import RTCSession

extension ICEAddressPolicy.Families: ExpressibleByArgument {}

/// The ICE options both executables take (`@OptionGroup`): STUN and TURN servers, the
/// relay-only policy and which local addresses to gather on (docs/NETWORK.md).
public struct NetworkOptions: ParsableArguments {
    @Option(help: "STUN server, stun://HOST:PORT.") public var stun: String?
    @Option(help: "TURN server, turn://HOST:PORT with its credentials from --turn-credentials or the environment (POSECAST_TURN_USERNAME, POSECAST_TURN_PASSWORD), or turn://USER:PASSWORD@HOST:PORT (readable by every local user in the process list).")
    public var turn: String?
    @Option(help: "A file holding the TURN credentials as USER:PASSWORD on its first line (keep it readable by you alone).")
    public var turnCredentials: String?
    @Option(help: "all (default) or relay: send media only through the --turn relay (webrtcbin's ice-transport-policy).")
    public var iceTransportPolicy = "all"
    @Option(help: "Address families ICE gathers on: all, ipv4 or ipv6.") public var iceFamilies: ICEAddressPolicy.Families = .all
    @Flag(help: "Also gather on link-local addresses (fe80::/10, 169.254/16; off: no peer beyond this link reaches them).")
    public var iceLinkLocal = false
    @Option(help: "Gather only on this local address (repeat for several; default: every one the policy keeps).")
    public var iceAddress: [String] = []
    @Flag(name: .customLong("ice-tcp"), help: "Also offer ICE-TCP host candidates, for a network that blocks UDP between the peers (off: ICE could pick TCP on a lossy path, where every loss holds back the media behind it; docs/NETWORK.md).")
    public var iceTCP = false

    public init() {}

    public func validate() throws {
        guard ["all", "relay"].contains(iceTransportPolicy) else {
            throw ValidationError("--ice-transport-policy must be all or relay, got \(iceTransportPolicy)")
        }
        if iceTransportPolicy == "relay", turn == nil { throw ValidationError("--ice-transport-policy relay needs --turn") }
        if turn != nil { _ = try turnServer(environment: ProcessInfo.processInfo.environment) }
        else if turnCredentials != nil { throw ValidationError("--turn-credentials goes with --turn") }
    }

    /// The TURN server as webrtcbin takes it, `turn://USER:PASSWORD@HOST:PORT` (both
    /// percent-encoded), with the credentials from the URL, the file, or the environment,
    /// in that order; nil without --turn. Throws naming what is missing or unreadable.
    public func turnServer(environment: [String: String]) throws -> String? {
        guard let turn else { return nil }
        guard var components = URLComponents(string: turn), ["turn", "turns"].contains(components.scheme ?? ""),
              components.host?.isEmpty == false else {
            throw ValidationError("--turn must be turn://[USER:PASSWORD@]HOST:PORT, got \(turn)")
        }
        if components.user != nil {
            guard turnCredentials == nil else { throw ValidationError("--turn carries credentials already; leave out --turn-credentials") }
            return turn
        }
        let user: String, password: String
        if let path = turnCredentials {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("--turn-credentials: cannot read \(path)")
            }
            let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw ValidationError("--turn-credentials: \(path) must hold USER:PASSWORD on its first line")
            }
            user = String(line[..<colon]); password = String(line[line.index(after: colon)...])
        } else if let u = environment["POSECAST_TURN_USERNAME"], let p = environment["POSECAST_TURN_PASSWORD"] {
            user = u; password = p
        } else {
            throw ValidationError("--turn has no credentials: give them in --turn-credentials FILE, in POSECAST_TURN_USERNAME and POSECAST_TURN_PASSWORD, or in the URL")
        }
        components.percentEncodedUser = Self.encode(user)
        components.percentEncodedPassword = Self.encode(password)
        return components.string
    }

    private static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
    }

    /// Puts these options into a peer configuration.
    public func apply(to rtc: inout RTCConfiguration) {
        rtc.stunServer = stun
        rtc.turnServer = (try? turnServer(environment: ProcessInfo.processInfo.environment)) ?? nil
        rtc.relayOnly = iceTransportPolicy == "relay"
        rtc.iceTCP = iceTCP
        rtc.addresses = ICEAddressPolicy(families: iceFamilies, linkLocal: iceLinkLocal, addresses: iceAddress.isEmpty ? nil : iceAddress)
    }
}
