import Logging

/// What the Wi-Fi logs: one line each, never a password.
extension Event {
    /// On a network of [wifi] (which section, its name).
    public static let wifiJoined = Event("wifi.joined", console: true)
    /// The address the network gave the board (DHCP): where it can be reached.
    public static let wifiAddress = Event("wifi.address", console: true)
    /// A try failed, in words (wrong password, network not found …); wpa_supplicant tries again.
    public static let wifiFailed = Event("wifi.failed", console: true)
    /// Off the network it was on.
    public static let wifiLeft = Event("wifi.left", console: true)
    /// No wifi.country: only the channels every country allows.
    public static let wifiNoCountry = Event("wifi.no_country", console: true)
}
