import ArgumentParser
import RTCSession

extension ICEAddressPolicy.Families: ExpressibleByArgument {}

/// The ICE options both executables take (`@OptionGroup`): STUN and TURN servers, the
/// relay-only policy and which local addresses to gather on (docs/NETWORK.md).
public struct NetworkOptions: ParsableArguments {
    @Option(help: "STUN server, stun://HOST:PORT.") public var stun: String?
    @Option(help: "TURN server, turn://USER:PASSWORD@HOST:PORT.") public var turn: String?
    @Option(help: "all (default) or relay: send media only through the --turn relay (webrtcbin's ice-transport-policy).")
    public var iceTransportPolicy = "all"
    @Option(help: "Address families ICE gathers on: all, ipv4 or ipv6.") public var iceFamilies: ICEAddressPolicy.Families = .all
    @Flag(help: "Also gather on link-local addresses (fe80::/10, 169.254/16; off: no peer beyond this link reaches them).")
    public var iceLinkLocal = false
    @Option(help: "Gather only on this local address (repeat for several; default: every one the policy keeps).")
    public var iceAddress: [String] = []

    public init() {}

    public func validate() throws {
        guard ["all", "relay"].contains(iceTransportPolicy) else {
            throw ValidationError("--ice-transport-policy must be all or relay, got \(iceTransportPolicy)")
        }
        if iceTransportPolicy == "relay", turn == nil { throw ValidationError("--ice-transport-policy relay needs --turn") }
    }

    /// Puts these options into a peer configuration.
    public func apply(to rtc: inout RTCConfiguration) {
        rtc.stunServer = stun
        rtc.turnServer = turn
        rtc.relayOnly = iceTransportPolicy == "relay"
        rtc.addresses = ICEAddressPolicy(families: iceFamilies, linkLocal: iceLinkLocal, addresses: iceAddress.isEmpty ? nil : iceAddress)
    }
}
