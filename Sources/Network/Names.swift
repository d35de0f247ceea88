/// The board's name on its LAN: device.name as the hostname systemd-resolved announces over
/// multicast DNS (RFC 6762: NAME.local), and its services for DNS-SD (RFC 6763) as
/// systemd.dnssd(5) files, so `http://cam1.local:8080` works from a phone on the same
/// network and an NVR or a browser's discovery lists the viewer and the RTSP stream.
public enum NetworkNames {
    /// Where systemd-resolved reads service files at its start (the root is read-only).
    public static let dnssdDirectory = "/run/systemd/dnssd"
    /// What `onair names --set-hostname` leaves: the label it set, so a run knows its
    /// `.local` name is announced (a development machine's hostname is not onair's).
    public static let announcedFile = "/run/onair/hostname"

    /// `name` as a DNS label (RFC 1123 §2.1: letters, digits and hyphens, not at either
    /// end, at most 63): lower case, '.' and '_' (which device.name allows) as '-'.
    public static func label(_ name: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in name.lowercased().unicodeScalars.prefix(63) {
            if ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) { scalars.append(scalar) } else { scalars.append("-") }
        }
        let trimmed = String(scalars).split(separator: "-", omittingEmptySubsequences: true).joined(separator: "-")
        return trimmed.isEmpty ? "onair" : trimmed
    }

    /// A service file (systemd.dnssd(5)): announced under the host's name (`%H`), with
    /// TXT `path=` where its clients start (RFC 6763 §6, and the convention of `_http._tcp`).
    public static func serviceFile(type: String, port: UInt16, path: String) -> String {
        """
        # Made by onair names at boot from onair.conf; changes here are lost.
        [Service]
        Name=%H
        Type=\(type)
        Port=\(port)
        TxtText=path=\(path)

        """
    }
}
