/// `[wifi]` of onair.conf: the networks the board joins, the country whose radio rules it
/// keeps, and the interface. The `[wifi]` section's own `ssid` is one network; each
/// `[wifi.NAME]` section is another (an office, a phone's hotspot), tried by `priority`.
public struct WiFiSettings: Sendable, Equatable {
    /// The interface the networks are joined on (the Raspberry Pi's own radio is wlan0; a
    /// USB adapter is named by systemd, wlx…).
    public var interface = "wlan0"
    /// ISO 3166-1 alpha-2, upper case: the regulatory domain. Without it the radio keeps
    /// the world's rules: no 5 GHz channel that needs a country, no transmitting first on
    /// one that needs radar detection.
    public var country: String?
    /// By name: "" is the `[wifi]` section's own network, the others `[wifi.NAME]`'s.
    public var networks: [String: WiFiNetwork] = [:]

    public init() {}

    /// The networks that can be joined (an SSID given), the most wanted first, then
    /// `[wifi]` itself, then by name: wpa_supplicant numbers them in this order.
    public var joinable: [WiFiNetwork] {
        networks.values.filter { $0.ssid != nil }.sorted { ($0.priority, $1.name) > ($1.priority, $0.name) }
    }

    /// Whether onair.conf asks for Wi-Fi at all.
    public var isConfigured: Bool { !joinable.isEmpty }

    /// What cannot work, in words naming the key (never a password): a network without an
    /// SSID but with other keys, a password where the network is open, none where it is not.
    public func problems() -> [String] {
        var problems: [String] = []
        for network in networks.values.sorted(by: { $0.name < $1.name }) {
            let prefix = network.name.isEmpty ? "wifi" : "wifi.\(network.name)"
            guard network.ssid != nil else {
                problems.append("\(prefix): no ssid (the network's name)")
                continue
            }
            switch (network.security, network.password) {
            case (.open, .some): problems.append("\(prefix).password: set, but security = open (a network without a password)")
            case (.open, nil): break
            case (_, nil): problems.append("\(prefix).password: missing (or security = open, for a network without one)")
            case (.wpa3, .some(let password)) where Self.isKey(password):
                problems.append("\(prefix).password: WPA3 takes the password itself, not a 64-digit key (not shown)")
            default: break
            }
        }
        return problems
    }

    // MARK: Checks of single values (onair.conf's, the settings page's)

    /// An interface name the kernel takes (IFNAMSIZ less the NUL, no '/' or space).
    public static func interfaceProblem(_ name: String) -> String? {
        (1...15).contains(name.utf8.count) && name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x2F && $0 != 0x3A })
            ? nil : "an interface name of 1 to 15 letters, digits, '-' or '_'"
    }

    /// Two letters, as the regulatory database names countries (00 is the world).
    public static func country(_ text: String) -> String? {
        let upper = text.uppercased()
        guard upper.utf8.count == 2, upper.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }) else { return nil }
        return upper
    }

    /// What is wrong with `ssid` as a network's name (IEEE 802.11-2020 §9.4.2.2: 0 to 32
    /// octets; onair takes 1 to 32 of UTF-8 with no control character, which every
    /// network a person names is); nil when it is one.
    public static func ssidProblem(_ ssid: String) -> String? {
        let bytes = ssid.utf8.count
        if bytes == 0 { return "empty (the network's name)" }
        if bytes > 32 { return "\(bytes) bytes; a network's name has at most 32" }
        if ssid.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) { return "holds a control character" }
        return nil
    }

    /// A password given as WPA2's 256-bit key itself: 64 hex digits.
    static func isKey(_ password: String) -> Bool {
        password.utf8.count == 64 && password.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0 | 0x20) }
    }

    /// What is wrong with `password` as a WPA2/WPA3 personal password (IEEE 802.11-2020
    /// §J.4.1: 8 to 63 printable ASCII characters, or the 256-bit key as 64 hex digits),
    /// never quoting it; nil when it is one.
    public static func passwordProblem(_ password: String) -> String? {
        if isKey(password) { return nil }
        let bytes = Array(password.utf8)
        if !bytes.allSatisfy({ (0x20...0x7E).contains($0) }) { return "only printable ASCII characters (letters, digits, punctuation, space) (not shown)" }
        if !(8...63).contains(bytes.count) { return "\(bytes.count) characters; a Wi-Fi password has 8 to 63 (not shown)" }
        return nil
    }
}

/// One network the board joins.
public struct WiFiNetwork: Sendable, Equatable {
    public enum Security: String, Sendable, CaseIterable {
        /// WPA2 or WPA3, whichever the network offers (WPA3's transition mode).
        case auto
        case wpa2
        /// WPA3-Personal (SAE) only, with protected management frames.
        case wpa3
        /// No password: said explicitly, never assumed.
        case open
    }

    /// The section's name ("" for `[wifi]` itself).
    public var name: String
    public var ssid: String?
    /// A secret: never printed, logged or shown back.
    public var password: String?
    public var security = Security.auto
    /// A network that does not announce its name: it is asked for by name.
    public var hidden = false
    /// Higher first, when several are in range.
    public var priority = 0

    public init(name: String) { self.name = name }

    /// What the console and the status page call it.
    public var shown: String { ssid.map { "'\($0)'" } ?? "(no ssid)" }
}
