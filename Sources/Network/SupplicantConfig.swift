import Basics
import COpenSSL

/// wpa_supplicant's configuration for `[wifi]` (wpa_supplicant.conf(5)), made at boot into
/// /run (`onair wifi-config`), never onto the read-only root. Nothing a person types is
/// written as text: the SSID and SAE's password as hex, WPA2's as the 256-bit key derived
/// from it (IEEE 802.11-2020 §J.4.1), so no name or password — quotes, '#', non-ASCII —
/// can end its line or be read as something else (wpa_supplicant's own line reader takes
/// '#' after a closing quote as a comment).
public enum SupplicantConfig {
    /// Where wpa_supplicant answers on its control interface, one socket per interface.
    public static let controlDirectory = "/run/wpa_supplicant"

    public static func render(_ settings: WiFiSettings) -> String {
        var lines = [
            "# Made by onair wifi-config from onair.conf's [wifi] at boot; changes here are lost.",
            "ctrl_interface=\(controlDirectory)",
            "update_config=0",
            // Scan again every 10 s while no network of the list is joined (wpa_supplicant
            // otherwise backs off to minutes), so a router switched on later is found soon.
            "autoscan=periodic:10",
        ]
        if let country = settings.country { lines.append("country=\(country)") }
        for network in settings.joinable {
            guard let ssid = network.ssid else { continue }
            lines.append("network={")
            lines.append("\tssid=\(Hex.lower(Array(ssid.utf8)))")
            if network.hidden { lines.append("\tscan_ssid=1") }
            lines.append("\tpriority=\(network.priority)")
            // id_str comes back in wpa_supplicant's events: which section was joined.
            lines.append("\tid_str=\"\(network.name.isEmpty ? "wifi" : network.name)\"")
            switch network.security {
            case .open:
                lines.append("\tkey_mgmt=NONE")
            case .auto:
                // WPA3's transition mode: SAE where the network offers it, else WPA2; the
                // management frames protected where both sides can.
                lines.append("\tkey_mgmt=WPA-PSK WPA-PSK-SHA256 SAE")
                lines.append("\tieee80211w=1")
            case .wpa2:
                lines.append("\tkey_mgmt=WPA-PSK WPA-PSK-SHA256")
            case .wpa3:
                lines.append("\tkey_mgmt=SAE")
                lines.append("\tieee80211w=2")
            }
            if let password = network.password, network.security != .open {
                let isKey = WiFiSettings.isKey(password)
                if network.security != .wpa3 {
                    lines.append("\tpsk=" + (isKey ? password.lowercased() : Hex.lower(psk(password: password, ssid: ssid))))
                }
                // SAE (WPA3) takes the password itself, never a derived key.
                if network.security != .wpa2 && !isKey { lines.append("\tsae_password=\(Hex.lower(Array(password.utf8)))") }
            }
            lines.append("}")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// WPA2-Personal's key: PBKDF2-HMAC-SHA1(password, SSID, 4096 rounds, 256 bits)
    /// (IEEE 802.11-2020 §J.4.1), as wpa_passphrase(8) makes it.
    public static func psk(password: String, ssid: String) -> [UInt8] {
        var key = [UInt8](repeating: 0, count: 32)
        let salt = Array(ssid.utf8)
        let secret = Array(password.utf8).map { CChar(bitPattern: $0) }
        let made = PKCS5_PBKDF2_HMAC_SHA1(secret, Int32(secret.count), salt, Int32(salt.count), 4096, 32, &key)
        precondition(made == 1, "PBKDF2 of 32 bytes cannot fail")
        return key
    }
}
