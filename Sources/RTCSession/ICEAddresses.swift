internal import CGStreamer
internal import CNice

/// Which of this machine's addresses ICE gathers host candidates on. libnice's own choice
/// is every non-loopback address of every interface that is up (loopback only when there
/// is nothing else), link-local IPv6 (`fe80::/10`) included: a peer can never reach that
/// from another link, and offering it tells every peer the interface's MAC-derived
/// address. By default PoseCast takes libnice's list without link-local addresses.
public struct ICEAddressPolicy: Sendable, Hashable {
    public enum Families: String, Sendable, Hashable, CaseIterable { case all, ipv4, ipv6 }
    public var families: Families
    /// Keep link-local addresses (IPv6 `fe80::/10`, IPv4 `169.254/16`).
    public var linkLocal: Bool
    /// Only these addresses (each must be one of the machine's), nil: all that pass.
    public var addresses: [String]?

    public init(families: Families = .all, linkLocal: Bool = false, addresses: [String]? = nil) {
        self.families = families; self.linkLocal = linkLocal; self.addresses = addresses
    }

    /// The addresses of `available` (libnice's list, in its order) that the policy keeps.
    public func select(from available: [String]) -> [String] {
        available.filter { address in
            let v6 = address.contains(":")
            switch families {
            case .ipv4 where v6, .ipv6 where !v6: return false
            default: break
            }
            if !linkLocal, Self.isLinkLocal(address) { return false }
            if let addresses, !addresses.contains(address) { return false }
            return true
        }
    }

    static func isLinkLocal(_ address: String) -> Bool {
        let a = address.lowercased()
        if a.contains(":") {
            // fe80::/10: the first 10 bits 1111 1110 10, i.e. fe80 to febf.
            guard let first = a.split(separator: ":", omittingEmptySubsequences: false).first,
                  let hextet = UInt16(first, radix: 16) else { return false }
            return hextet & 0xFFC0 == 0xFE80
        }
        return a.hasPrefix("169.254.")
    }
}

extension WebRTCPeer {
    /// Gives the ICE agent the addresses `policy` keeps of libnice's own list (before any
    /// gathering: libnice then gathers on these only). Returns them; nil when the ICE
    /// backend is not libnice or nothing is left (libnice then chooses by itself).
    @discardableResult
    package func restrictLocalAddresses(_ policy: ICEAddressPolicy) -> [String]? {
        func list(_ loopback: Bool) -> [String] {
            var result: [String] = []
            var node = nice_interfaces_get_local_ips(loopback ? 1 : 0)
            let head = node
            while let n = node {
                if let text = n.pointee.data { result.append(String(cString: text.assumingMemoryBound(to: CChar.self))) }
                node = n.pointee.next
            }
            g_list_free_full(head, g_free)
            return result
        }
        var chosen = policy.select(from: list(false))
        // As libnice does: loopback only when there is nothing else.
        if chosen.isEmpty { chosen = policy.select(from: list(true)) }
        guard !chosen.isEmpty else { return nil }
        let added = withNiceAgent { agent in
            for address in chosen {
                var nice = NiceAddress()
                nice_address_init(&nice)
                guard nice_address_set_from_string(&nice, address) != 0 else { continue }
                _ = nice_agent_add_local_address(OpaquePointer(agent), &nice)
            }
        }
        return added ? chosen : nil
    }
}
