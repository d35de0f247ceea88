import Basics

/// What `make image` wrote about the image onair runs from (image/manifest.sh): its
/// version, board, Debian snapshot and kernel, as `key=value` lines.
public enum ImageManifest {
    public static let path = "/usr/share/onair/image.txt"

    /// image.txt's `key=value` lines.
    public static func fields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = parts[1].trimmingWhitespace() }
        }
        return fields
    }
}
