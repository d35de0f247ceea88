import System

/// `[network]` of onair.conf: a fixed IPv4 address instead of DHCP, for a board an NVR or
/// a router's port forward must find at the same place. On the cable, or on Wi-Fi when
/// `link = wifi` (`auto`: Wi-Fi when `[wifi]` names a network, else the cable).
public struct StaticAddress: Sendable, Equatable {
    public enum Link: String, Sendable, CaseIterable { case auto, wired, wifi }

    /// The address and its prefix length (`192.168.1.50/24`); nil: DHCP.
    public var address: (ip: [UInt8], prefix: Int)?
    public var gateway: [UInt8]?
    public var dns: [[UInt8]] = []
    public var link: Link = .auto
    /// The one interface to give the address to; nil: every wired one (a Raspberry Pi has
    /// one port), or `[wifi]`'s radio on Wi-Fi.
    public var interface: String?

    public init() {}

    public static func == (a: StaticAddress, b: StaticAddress) -> Bool {
        a.address?.ip == b.address?.ip && a.address?.prefix == b.address?.prefix && a.gateway == b.gateway && a.dns == b.dns && a.link == b.link
            && a.interface == b.interface
    }

    public var isConfigured: Bool { address != nil }

    // MARK: Values

    /// A dotted quad (inet_pton(3), as every address onair takes); nil otherwise.
    public static func ipv4(_ text: String) -> [UInt8]? {
        guard text.utf8.count <= 15 else { return nil }
        return SocketAddress(numeric: text, port: 0, ipv6: false)?.addressBytes
    }

    /// `ADDRESS/LENGTH` with a length of 1…32 and an address that is a host's, not the
    /// network's or (below /31) the broadcast's.
    public static func prefix(_ text: String) -> (ip: [UInt8], prefix: Int)? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let ip = ipv4(String(parts[0])), (1...2).contains(parts[1].utf8.count),
              parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }), let length = Int(parts[1]), (1...32).contains(length) else { return nil }
        if length <= 30 {
            let host = value(ip) & ~mask(length)
            guard host != 0, host != ~mask(length) else { return nil }
        }
        return (ip, length)
    }

    static func value(_ ip: [UInt8]) -> UInt32 { ip.reduce(0) { $0 << 8 | UInt32($1) } }
    static func mask(_ length: Int) -> UInt32 { length == 0 ? 0 : ~UInt32(0) << UInt32(32 - length) }
    public static func text(_ ip: [UInt8]) -> String { ip.map(String.init).joined(separator: ".") }

    /// What cannot work, naming the key: a gateway or DNS server without an address, a
    /// gateway outside the address's network.
    public func problems() -> [String] {
        guard let address else {
            return gateway != nil || !dns.isEmpty ? ["network.address: missing (network.gateway and network.dns go with a fixed address)"] : []
        }
        if let gateway, !InterfaceAddress(address: address.ip, prefixLength: address.prefix).contains(gateway) {
            return ["network.gateway: \(Self.text(gateway)) is not in \(Self.text(address.ip))/\(address.prefix)'s network"]
        }
        return []
    }

    /// systemd-networkd's `.network` for the address (systemd.network(5)), named to sort
    /// before the image's DHCP files (20-wired, 25-wireless) so it is the one that matches.
    public func networkdFile(wifiInterface: String, wifiConfigured: Bool) -> String? {
        guard let address else { return nil }
        let wifi = link == .wifi || (link == .auto && wifiConfigured)
        var text = "# onair network-config: onair.conf's [network], a fixed address instead of DHCP.\n"
        text += "[Match]\nName=\(interface ?? (wifi ? wifiInterface : "en* eth*"))\n\n[Network]\n"
        text += "Address=\(Self.text(address.ip))/\(address.prefix)\n"
        text += dns.map { "DNS=\(Self.text($0))\n" }.joined()
        text += "MulticastDNS=yes\n"
        if let gateway {
            // The cable's routes cost less than Wi-Fi's, as with DHCP.
            text += "\n[Route]\nGateway=\(Self.text(gateway))\nMetric=\(wifi ? 600 : 100)\n"
        }
        return text
    }

    public static let fileName = "15-onair-static.network"
}
