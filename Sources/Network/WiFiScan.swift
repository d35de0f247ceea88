/// The networks the board's radio sees, for the setup page's list: wpa_supplicant's
/// `SCAN_RESULTS` (one line a network: BSSID, frequency, signal in dBm, flags, SSID as
/// printf_encode writes it), each name once at its strongest, strongest first.
public struct SeenNetwork: Sendable, Equatable {
    public var ssid: String
    /// MHz (2412…2484 is 2.4 GHz).
    public var frequency: Int
    public var signal: Int
    /// WPA2 or WPA3 (a password is asked); false for an open network.
    public var secured: Bool
}

public enum WiFiScan {
    /// At most this many names on the page.
    public static let limit = 30

    public static func parse(_ text: String, leaving own: String? = nil) -> [SeenNetwork] {
        var best: [String: SeenNetwork] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false)
            guard fields.count == 5, fields[1].utf8.count <= 5, fields[2].utf8.count <= 6, let frequency = Int(fields[1]), let signal = Int(fields[2]),
                  let ssid = decode(fields[4]), !ssid.isEmpty, ssid != own else { continue }
            let network = SeenNetwork(ssid: ssid, frequency: frequency, signal: signal, secured: fields[3].contains("WPA") || fields[3].contains("SAE"))
            if best[ssid].map({ $0.signal < signal }) ?? true { best[ssid] = network }
        }
        return Array(best.values.sorted { ($0.signal, $1.ssid) > ($1.signal, $0.ssid) }.prefix(limit))
    }

    /// printf_encode's text back to the SSID's bytes (`\\`, `\"`, `\e`, `\n`, `\r`, `\t`,
    /// `\xNN`); nil when they are not UTF-8 (the page shows names as text) or longer than
    /// an SSID can be.
    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            guard byte == 0x5C, let next = input.popFirst() else { bytes.append(byte); continue }
            switch next {
            case 0x6E: bytes.append(0x0A)
            case 0x72: bytes.append(0x0D)
            case 0x74: bytes.append(0x09)
            case 0x65: bytes.append(0x1B)
            case 0x78:
                guard input.count >= 2, let value = UInt8(String(decoding: input.prefix(2), as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
                input = input.dropFirst(2)
            default: bytes.append(next)
            }
            if bytes.count > 32 { return nil }
        }
        guard bytes.count <= 32, let ssid = String(validating: bytes, as: UTF8.self),
              ssid.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else { return nil }
        return ssid
    }
}
