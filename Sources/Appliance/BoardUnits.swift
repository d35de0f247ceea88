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

/// The board's FAT partition (`/boot/firmware`, where onair.conf lives) is mounted
/// read-only, so a power cut cannot leave it half-written: a write to it is made between
/// a remount read-write and one read-only again, as onair-slot-rpi does for the boot
/// files (mount(8)). Anywhere else the body runs as it is.
enum BootPartition {
    static let mountPoint = "/boot/firmware"

    static func writing<T>(_ path: String, mounts: String? = FileSystem.readText("/proc/self/mounts", limit: 1 << 20),
                           _ body: () throws -> T) throws -> T {
        guard path.hasPrefix(mountPoint + "/"), let mounts, isReadOnly(mounts) else { return try body() }
        guard ThisProcess.run(["mount", "-o", "remount,rw", mountPoint], eachLine: { _ in }) == 0 else { return try body() }
        defer {
            ThisProcess.syncFileSystems()
            _ = ThisProcess.run(["mount", "-o", "remount,ro", mountPoint], eachLine: { _ in })
        }
        return try body()
    }

    /// Whether /proc/self/mounts has the partition read-only (its last mount there).
    static func isReadOnly(_ mounts: String) -> Bool {
        guard let line = mounts.split(separator: "\n").last(where: { $0.split(separator: " ").dropFirst().first == Substring(mountPoint) }) else {
            return false
        }
        let fields = line.split(separator: " ")
        return fields.count > 3 && fields[3].split(separator: ",").contains("ro")
    }
}

