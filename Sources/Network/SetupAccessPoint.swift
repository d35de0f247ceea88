import Basics

/// The board's own Wi-Fi network for setting it up (`onair-` and the six hex digits of its
/// name), opened when it has no network to be reached on: a second interface (`ap0`) on
/// the radio, in access-point mode, run by wpa_supplicant (Debian builds it with AP
/// support, so no hostapd is needed) from `onair-setup-ap@.service`; systemd-networkd
/// gives it `address` and serves DHCP on it (24-setup-ap.network).
///
/// Who may use it: with an operator password (server.token) the network is WPA2 with that
/// password, and the setup page asks for it again; without one (a board never set up) the
/// network is open, but only in the first `openMinutes` after power-on, and the page's
/// first question is the operator password — a stranger would have to be there before the
/// owner, in the minutes after the owner plugged it in.
public enum SetupAccessPoint {
    /// `network.setup`: `auto` opens the network when the board has none to be reached
    /// on; `off` never.
    public enum Policy: String, Sendable, CaseIterable { case auto, off }

    /// The board on the setup network, its DHCP range's router and DNS server.
    public static let address: [UInt8] = [192, 168, 4, 1]
    public static let interface = "ap0"
    public static let configFile = "/run/onair/setup-ap.conf"
    /// `AP_ADDRESS=…` for the unit: the access point's MAC address.
    public static let environmentFile = "/run/onair/setup-ap.env"

    /// The access point's MAC address, from the station's (`aa:bb:…` as sysfs writes it):
    /// locally administered, and another than the station's, as two interfaces of one
    /// radio must have (the kernel refuses a second with the same: ENOTUNIQ). nil when
    /// `station` is not a MAC address.
    public static func macAddress(station: String) -> String? {
        let parts = station.trimmingWhitespace().split(separator: ":")
        guard parts.count == 6, parts.allSatisfy({ $0.utf8.count == 2 }) else { return nil }
        var bytes = parts.compactMap { UInt8($0, radix: 16) }
        guard bytes.count == 6 else { return nil }
        bytes[0] = (bytes[0] | 0x02) & 0xFE
        bytes[5] ^= 0x01
        return bytes.map { Hex.lower([$0]) }.joined(separator: ":")
    }
    /// How long after power-on a board without an operator password opens an open network.
    public static let openMinutes = 15

    /// `onair-3fa2c1` for a board named `onair-3fa2c1` or any other name (from the id the
    /// data partition keeps: `label`'s last six hex digits, or the name's own).
    public static func ssid(deviceLabel: String) -> String {
        let hex = deviceLabel.utf8.reversed().prefix { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        return hex.count >= 6 ? "onair-" + String(decoding: hex.prefix(6).reversed(), as: UTF8.self) : "onair-" + String(deviceLabel.prefix(26))
    }

    /// The password the network asks for: the operator's when it can be one (8 to 63
    /// printable ASCII characters, WPA2's rule), nil for an open network.
    public static func password(operatorToken: String?) -> String? {
        guard let token = operatorToken, WiFiSettings.passwordProblem(token) == nil, !WiFiSettings.isKey(token) else { return nil }
        return token
    }

    /// wpa_supplicant's configuration for the network (mode=2: access point), WPA2-PSK
    /// with CCMP when there is a password, on `frequency` (MHz; 2437 is channel 6).
    public static func supplicantConfig(ssid: String, password: String?, country: String?, frequency: Int = 2437) -> String {
        var text = "# onair: the setup network (onair-setup-ap@.service)\nctrl_interface=/run/wpa_supplicant\n"
        if let country { text += "country=\(country)\n" }
        text += "network={\n\tssid=\(Hex.lower(Array(ssid.utf8)))\n\tmode=2\n\tfrequency=\(frequency)\n"
        if let password {
            text += "\tkey_mgmt=WPA-PSK\n\tproto=RSN\n\tpairwise=CCMP\n\tgroup=CCMP\n\tpsk=\(Hex.lower(SupplicantConfig.psk(password: password, ssid: ssid)))\n"
        } else {
            text += "\tkey_mgmt=NONE\n"
        }
        return text + "}\n"
    }

    /// The network as a phone's camera reads it from a QR code: the `WIFI:` URI (ZXing's,
    /// now the Wi-Fi Alliance WPA3 Specification's §7 "Wi-Fi URI"), `T:WPA` or ZXing's
    /// `T:nopass`, which Android and iOS both take; `\ ; , " :` backslash-escaped as ZXing
    /// does (the board's own names never hold them). The password is never in it: the
    /// screen shows no secret, and the phone asks for it.
    public static func joinCode(ssid: String, secured: Bool) -> String {
        let escaped = ssid.unicodeScalars.map { "\\;,\":".unicodeScalars.contains($0) ? "\\\($0)" : "\($0)" }.joined()
        return "WIFI:T:\(secured ? "WPA" : "nopass");S:\(escaped);;"
    }
}
