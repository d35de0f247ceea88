import Files
import Logging
import System

/// The board's own services that read onair.conf when they start (image/rootfs): after
/// the settings page saves a key one of them reads, it is started again, so Wi-Fi, a fixed
/// address, the name on the LAN and the time servers apply at once rather than at the next boot. Only
/// on the board: onair runs as its systemd service there (NOTIFY_SOCKET) and the units
/// are installed; anywhere else nothing is touched.
enum BoardUnits {
    /// The units to start again for `keys`, in order (each writes what the next reads).
    static func units(for keys: [String], wifiInterface: String) -> [String] {
        var units: [String] = []
        if keys.contains(where: { $0.hasPrefix("wifi.") }) { units.append("onair-wifi@\(wifiInterface).service") }
        if keys.contains(where: { $0 == "device.name" || $0 == "server.listen" || $0 == "rtsp.port" }) {
            // The hostname and the DNS-SD files, then the responder that announces them.
            units += ["onair-names.service", "systemd-resolved.service"]
        }
        if keys.contains(where: { $0.hasPrefix("network.") }) { units += ["onair-network.service", "systemd-networkd.service"] }
        if keys.contains("time.servers") { units += ["onair-time.service", "systemd-timesyncd.service"] }
        return units
    }

    /// Whether this onair is the board's service (and so may restart its units).
    static var onTheBoard: Bool {
        Environment.variables["NOTIFY_SOCKET"] != nil && FileSystem.exists("/etc/systemd/system/onair-wifi@.service")
    }

    /// `systemctl restart` of the units, without waiting for them (--no-block: a unit
    /// that takes long never holds the page's answer); what systemctl says is logged.
    static func restart(_ units: [String], log: Log) {
        guard !units.isEmpty, onTheBoard else { return }
        let status = ThisProcess.run(["systemctl", "--no-block", "restart"] + units) { line in
            log(.settingsUnits, level: .warn, ("units", units.joined(separator: ",")), ("said", line))
        }
        log(.settingsUnits, ("units", units.joined(separator: ",")), ("status", status.map { "\($0)" } ?? "not run"))
    }
}

extension Event {
    /// The board's units restarted for saved settings.
    static let settingsUnits = Event("settings.units")
}
