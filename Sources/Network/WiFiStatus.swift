/// What the board's Wi-Fi is doing, in words: the console, /status and /api/status say it.
public struct WiFiStatus: Sendable, Equatable {
    public enum State: String, Sendable {
        /// onair.conf has no [wifi].
        case off
        /// Waiting for the radio or for wpa_supplicant.
        case starting
        /// Looking for, or joining, a network of the list.
        case joining
        /// On a network.
        case joined
        /// The last try failed (`problem` says why); wpa_supplicant tries again.
        case failed
    }

    public var state = State.off
    public var interface: String
    /// The network joined or being joined: its `[wifi]` section ("" for the section itself).
    public var network: String?
    public var ssid: String?
    /// The board's IPv4 address on it, once it has one.
    public var address: String?
    /// Why the last try failed, in words (never a password).
    public var problem: String?

    public init(interface: String, state: State = .off) {
        self.interface = interface
        self.state = state
    }

    /// `wifi=joined`, `wifi=wrong-password` …: the console line's word.
    public var consoleWord: String {
        switch state {
        case .failed: return problemKind ?? "failed"
        default: return state.rawValue
        }
    }

    /// The kind of the last problem, one word.
    public var problemKind: String?
}

/// Reads wpa_supplicant's events and STATUS replies into a `WiFiStatus`, and says what
/// changed that a person should hear about (`Change`). Pure: the monitor feeds it.
public struct WiFiTracker: Sendable {
    public private(set) var status: WiFiStatus
    let settings: WiFiSettings
    /// The network refused SAE's confirm since the last join: the two sides' passwords
    /// differ (IEEE 802.11-2020 §12.4.5.5), which wpa_supplicant then calls CONN_FAILED.
    var confirmRefused = false

    public enum Change: Equatable, Sendable {
        case joined(network: String, ssid: String)
        case address(String)
        case failed(kind: String, problem: String)
        case left(reason: String)
    }

    public init(settings: WiFiSettings) {
        self.settings = settings
        status = WiFiStatus(interface: settings.interface, state: settings.isConfigured ? .starting : .off)
    }

    /// The network of a section name as wpa_supplicant says it (`id_str`).
    func network(idString: String?) -> WiFiNetwork? {
        guard let idString else { return nil }
        return settings.networks[idString == "wifi" ? "" : idString]
    }

    /// One event's text (without its level); what it changed, if anything.
    public mutating func event(_ text: String) -> Change? {
        let (name, fields) = Self.split(text)
        switch name {
        case "CTRL-EVENT-AUTH-REJECT":
            // "CTRL-EVENT-AUTH-REJECT <bssid> auth_type=3 auth_transaction=2 status_code=1":
            // SAE (type 3) refused at its confirm (transaction 2).
            if fields["auth_type"] == "3" && fields["auth_transaction"] == "2" { confirmRefused = true }
            return nil
        case "CTRL-EVENT-CONNECTED":
            confirmRefused = false
            let network = self.network(idString: fields["id_str"])
            status.state = .joined
            status.network = network?.name
            status.ssid = network?.ssid
            status.problem = nil
            status.problemKind = nil
            return .joined(network: network?.name ?? "", ssid: network?.ssid ?? "")
        case "CTRL-EVENT-DISCONNECTED":
            guard status.state == .joined else { return nil }
            status.state = .joining
            status.address = nil
            // IEEE 802.11-2020 Table 9-49's reason codes people meet.
            let reason: String
            switch fields["reason"] {
            case "3": reason = "the network ended the connection"
            case "4", "8": reason = "the radio lost the network"
            case "15": reason = "the network's password changed"
            default: reason = "disconnected (reason \(fields["reason"].map { String($0.prefix(5)) } ?? "?"))"
            }
            return .left(reason: reason)
        case "CTRL-EVENT-SSID-TEMP-DISABLED":
            // id: the network's place in the configuration onair wrote (`joinable`'s order).
            let joinable = settings.joinable
            let shown = fields["id"].flatMap { Int($0) }.flatMap { joinable.indices.contains($0) ? joinable[$0].shown : nil }
                ?? "'\(Self.printable(Self.unescape(fields["ssid"] ?? "")))'"
            switch fields["reason"] {
            case "WRONG_KEY": return fail("wrong-password", "wrong password for \(shown) (wifi.password)")
            case "AUTH_FAILED": return fail("refused", "\(shown) refused the board's password or its security (wifi.password, wifi.security)")
            case "CONN_FAILED" where confirmRefused:
                // WPA3: the network could not check the board's proof of the password.
                return fail("wrong-password", "wrong password for \(shown) (wifi.password)")
            case "CONN_FAILED": return fail("no-connection", "could not connect to \(shown): out of reach, or the network is full")
            default: return fail("refused", "\(shown) refused the board")
            }
        case "CTRL-EVENT-NETWORK-NOT-FOUND":
            guard status.state != .joined else { return nil }
            let names = settings.joinable.map(\.shown).joined(separator: ", ")
            return fail("not-found", "no network of [wifi] in range (\(names))"
                + (settings.country == nil ? "; without wifi.country the radio uses only the channels allowed everywhere" : ""))
        case "CTRL-EVENT-SCAN-STARTED", "CTRL-EVENT-SSID-REENABLED", "Trying", "SME:", "Associated":
            if status.state == .starting { status.state = .joining }
            return nil
        default:
            return nil
        }
    }

    private mutating func fail(_ kind: String, _ problem: String) -> Change? {
        guard status.problem != problem || status.state != .failed else { return nil }
        status.state = .failed
        status.problem = problem
        status.problemKind = kind
        return .failed(kind: kind, problem: problem)
    }

    /// A STATUS reply (`key=value` lines); what it changed.
    public mutating func statusReply(_ text: String) -> Change? {
        var fields: [Substring: Substring] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: true).prefix(64) {
            guard let eq = line.firstIndex(of: "=") else { continue }
            fields[line[..<eq]] = line[line.index(after: eq)...]
        }
        switch fields["wpa_state"] {
        case "COMPLETED":
            var change: Change?
            if status.state != .joined {
                let network = self.network(idString: fields["id_str"].map(String.init))
                status.state = .joined
                status.network = network?.name
                status.ssid = network?.ssid
                status.problem = nil
                status.problemKind = nil
                change = .joined(network: network?.name ?? "", ssid: network?.ssid ?? "")
            }
            let address = fields["ip_address"].map(String.init).flatMap { Self.isIPv4($0) ? $0 : nil }
            if address != status.address {
                status.address = address
                if let address, change == nil { change = .address(address) }
            }
            return change
        case .some(let state):
            if status.state == .starting || status.state == .joined {
                let wasJoined = status.state == .joined
                status.state = .joining
                status.address = nil
                if wasJoined { return .left(reason: "not on a network (\(state.prefix(20)))") }
            }
            return nil
        case nil:
            return nil
        }
    }

    /// No such interface a while after the start: a board without a radio, or one its
    /// kernel does not drive (the Pi 5's device tree in Debian's 6.12 kernel has none).
    public mutating func noRadio() -> Change? {
        guard settings.isConfigured, status.state == .starting else { return nil }
        return fail("no-radio", "no Wi-Fi interface \(settings.interface) (wifi.interface): no radio, or none its kernel drives")
    }

    /// wpa_supplicant's control interface is gone (it stopped).
    public mutating func lost() {
        guard settings.isConfigured else { return }
        status.state = .starting
        status.address = nil
    }

    /// "NAME key=value key=\"quoted value\" …" → NAME and the fields (bounded: an event is
    /// at most one datagram, each value read once).
    static func split(_ text: String) -> (String, [String: String]) {
        var fields: [String: String] = [:]
        let scalars = Array(text.unicodeScalars.prefix(4096))
        var index = 0
        func word() -> String {
            var out = String.UnicodeScalarView()
            var quoted = false
            while index < scalars.count {
                let c = scalars[index]
                if c == "\"" {
                    quoted.toggle()
                } else if c == " " && !quoted {
                    break
                } else if quoted || (c != "[" && c != "]") {
                    // "[id=0 id_str=home]": the brackets go, its fields are the event's.
                    out.append(c)
                }
                index += 1
            }
            index += 1
            return String(out)
        }
        let name = word()
        while index < scalars.count {
            let item = word()
            if let eq = item.firstIndex(of: "=") { fields[String(item[..<eq])] = String(item[item.index(after: eq)...]) }
        }
        return (name, fields)
    }

    /// wpa_ssid_txt's escapes (\\, \", \e, \n, \r, \t, \xNN) undone, as far as they give
    /// printable text; what does not decode is kept as written.
    static func unescape(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var bytes: [UInt8] = []
        let scalars = Array(text.unicodeScalars)
        var index = 0
        func flush() {
            if !bytes.isEmpty { out.append(contentsOf: String(decoding: bytes, as: UTF8.self).unicodeScalars); bytes = [] }
        }
        while index < scalars.count {
            let c = scalars[index]
            if c == "\\", index + 3 < scalars.count, scalars[index + 1] == "x",
               let byte = UInt8(String(String.UnicodeScalarView(scalars[(index + 2)...(index + 3)])), radix: 16) {
                bytes.append(byte)
                index += 4
                continue
            }
            flush()
            if c == "\\", index + 1 < scalars.count {
                out.append(scalars[index + 1])
                index += 2
                continue
            }
            out.append(c)
            index += 1
        }
        flush()
        return String(out)
    }

    /// At most 32 characters, control characters as '?': what a log line may show of a
    /// name that came over the air.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(32).map { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? "?" : $0 }))
    }

    static func isIPv4(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { (1...3).contains($0.count) && $0.allSatisfy(\.isNumber) && Int($0).map { $0 <= 255 } == true }
    }
}
