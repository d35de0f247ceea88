import Basics
import Files
import System

/// `device.name`: what a board is called where many publish to one destination. It names
/// the board's folder there (`<publish prefix>/<device>/<id>/…`), ends every stream id
/// (so ids cannot collide across boards), and is shown on the console line, in
/// `/api/status`, as a `/metrics` label and in the viewer.
enum DeviceName {
    /// A DNS label's length: a name that is also a hostname, an S3 key part and a file name.
    static let maximumLength = 63

    /// Why `name` cannot be a device name, or nil: 1–63 letters, digits, `.`, `-` or `_`,
    /// starting with a letter or digit, so it is a path segment of one component on every
    /// destination, needs no escaping in a URL, and is never `.` or `..`.
    static func problem(_ name: String) -> String? {
        let allowed = "expected 1 to \(maximumLength) letters, digits, '.', '-' or '_', starting with a letter or digit"
        guard !name.isEmpty else { return allowed + ", got an empty name" }
        guard name.count <= maximumLength else { return allowed + ", got \(name.count) characters" }
        let valid = name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) }
        guard valid, let first = name.unicodeScalars.first, first.properties.isAlphabetic || ("0"..."9").contains(first) else {
            return allowed + ", got \"\(name.prefix(40))\""
        }
        return nil
    }

    /// Hostnames too generic to tell boards apart: the images' own, and a fresh system's.
    static let genericHostnames: Set<String> = ["onair", "localhost", "localhost.localdomain", ""]

    /// `device.name = auto`: the hostname, unless it is a generic one (every board flashed
    /// from the same image is called onair); then `onair-` and six hex digits derived once
    /// from the machine id and kept in the data directory (`device-id`), so the name stays
    /// when the image's read-only root makes a new transient machine id at every boot.
    static func automatic(hostname: String? = currentHostname(), dataDirectory: String,
                          machineID: () -> String? = { FileSystem.readText("/etc/machine-id") }) -> String {
        if let hostname, !genericHostnames.contains(hostname.lowercased()), problem(hostname) == nil { return hostname }
        let path = dataDirectory + "/device-id"
        func sixHex(_ text: String?) -> String? {
            let hex = (text ?? "").trimmingWhitespace().lowercased()
            guard hex.count >= 6, hex.allSatisfy(\.isHexDigit), hex.contains(where: { $0 != "0" }) else { return nil }
            return String(hex.prefix(6))
        }
        if let kept = sixHex(FileSystem.readText(path)) { return "onair-" + kept }
        let made = sixHex(machineID()) ?? String(UInt32.random(in: 0x100000...0xFFFFFF), radix: 16)
        // Kept durably: a name that changed after a power cut would leave the board's
        // published streams under a folder it no longer updates. If the write fails the
        // machine id gives the same name again at the next start.
        try? AtomicFile.write(Array((made + "\n").utf8), to: path)
        return "onair-" + made
    }

    static func currentHostname() -> String? { ThisProcess.hostname }
}
