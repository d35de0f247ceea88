/// One C library in the binary, for `onair version`: its own version string, and the Debian
/// package it was built from when it is linked in (toolchain/deps.sh records those). Static
/// linking means Debian's security updates reach onair only through a rebuild, so the
/// package version is what a user compares with Debian's security tracker.
public struct LibraryVersion: Sendable, Equatable {
    public var name: String
    public var version: String
    /// "ffmpeg 7:5.1.9-0+deb12u1"; empty when the library is Debian's shared one.
    public var debianSource: String

    public init(_ name: String, _ version: String, debianSource: String) {
        self.name = name
        self.version = version
        self.debianSource = debianSource
    }

    /// A library whose version string names it first ("libopus 1.3.1", "libsrtp2 2.5.0"):
    /// the number after the name.
    public init(_ name: String, versionString: String, debianSource: String) {
        self.init(name, String(versionString.split(separator: " ").last ?? Substring(versionString)), debianSource: debianSource)
    }

    /// `libavcodec 59.37.100 (static, Debian ffmpeg 5.1.9-0+deb12u1)`.
    public var line: String {
        let origin = debianSource.isEmpty ? "shared" : "static, Debian \(debianSource)"
        return "\(name)\(version.isEmpty ? "" : " " + version) (\(origin))"
    }
}

/// The Debian package behind a `ONAIR_DEBIAN_*` string of toolchain/deps.sh, or "".
public func debianSource(_ package: String, _ version: UnsafePointer<CChar>) -> String {
    let version = String(cString: version)
    return version.isEmpty ? "" : "\(package) \(version)"
}
