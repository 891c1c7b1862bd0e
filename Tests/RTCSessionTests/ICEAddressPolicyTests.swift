@testable import RTCSession
import Testing

/// Which local addresses ICE gathers on (`ICEAddressPolicy`, pure).
@Suite("ICE address policy")
struct ICEAddressPolicyTests {
    static let machine = ["192.0.2.2", "fd00::2", "fe80::fc00:ff:fe00:1", "169.254.3.4", "10.1.2.3", "FEBF::1", "fec0::1"]

    @Test("by default every address but link-local ones (fe80::/10, 169.254/16)")
    func defaults() {
        #expect(ICEAddressPolicy().select(from: Self.machine) == ["192.0.2.2", "fd00::2", "10.1.2.3", "fec0::1"])
    }

    @Test("families, link-local on request, an explicit list")
    func options() {
        #expect(ICEAddressPolicy(families: .ipv4).select(from: Self.machine) == ["192.0.2.2", "10.1.2.3"])
        #expect(ICEAddressPolicy(families: .ipv6).select(from: Self.machine) == ["fd00::2", "fec0::1"])
        #expect(ICEAddressPolicy(linkLocal: true).select(from: Self.machine) == Self.machine)
        #expect(ICEAddressPolicy(addresses: ["10.1.2.3", "fe80::fc00:ff:fe00:1", "203.0.113.9"]).select(from: Self.machine) == ["10.1.2.3"])
    }
}
