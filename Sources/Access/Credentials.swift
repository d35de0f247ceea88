import Basics
import COpenSSL

/// Who may watch (`[access]` in onair.conf): viewers, kept as salted digests, and device
/// accounts for NVRs and hubs, whose made-up secrets are kept as they are. Empty: the LAN
/// is open, as it was before there were users.
///
/// Why two kinds. HTTP's and RTSP's Digest (RFC 7616 §3.4.2) can be checked from
/// H(user:realm:password), so a viewer's password itself is never stored: the realm is
/// made at random once per config (`onair-<hex>`), which salts every stored digest. ONVIF's
/// WS-Security PasswordDigest (Base64(SHA-1(nonce + created + password)), UsernameToken
/// Profile §3.1) can only be checked by a server that holds the password, and most NVRs
/// and Home Assistant send nothing else; so an NVR gets a device account whose secret
/// onair makes up (no one's own password, and it opens watching only) and keeps readable.
public struct AccessList: Sendable, Equatable {
    public struct Viewer: Sendable, Equatable {
        public var name: String
        /// H(name:realm:password) by MD5 (what RTSP clients implement) and SHA-256.
        public var md5: [UInt8]
        public var sha256: [UInt8]
    }

    public var realm: String
    public var viewers: [Viewer]
    /// NVR and hub accounts: name → secret.
    public var devices: [(name: String, secret: String)]

    public init(realm: String = "", viewers: [Viewer] = [], devices: [(name: String, secret: String)] = []) {
        self.realm = realm
        self.viewers = viewers
        self.devices = devices
    }

    /// Nobody is named: anyone who reaches the board may watch.
    public var isOpen: Bool { viewers.isEmpty && devices.isEmpty }

    public static func == (a: AccessList, b: AccessList) -> Bool {
        a.realm == b.realm && a.viewers == b.viewers && a.devices.map(\.name) == b.devices.map(\.name) && a.devices.map(\.secret) == b.devices.map(\.secret)
    }

    /// The stored digest H(name:realm:password) of `name`'s credentials, by `algorithm`.
    func storedDigest(_ name: String, _ algorithm: DigestAlgorithm) -> [UInt8]? {
        if let viewer = viewers.first(where: { $0.name == name }) { return algorithm == .md5 ? viewer.md5 : viewer.sha256 }
        if let secret = secret(name) { return Self.credentialDigest(name, realm, secret, algorithm) }
        return nil
    }

    /// A device account's secret (the only credential ONVIF's PasswordDigest can be
    /// checked against); nil for a viewer or no one.
    public func secret(_ name: String) -> String? { devices.first { $0.name == name }?.secret }

    /// Whether `password` is `name`'s (a viewer's, by its digest; a device's secret).
    public func accepts(_ name: String, password: String) -> Bool {
        guard let stored = storedDigest(name, .sha256) else { return false }
        return Self.constantTimeEqual(Self.credentialDigest(name, realm, password, .sha256), stored)
    }

    // MARK: The config's values

    /// A user name as the config and the protocols carry it: letters, digits, `._-`,
    /// 1–32 characters (no `:`, which Basic and Digest's H(user:realm:…) would split on).
    public static func validName(_ name: String) -> Bool {
        (1...32).contains(name.utf8.count) && name.utf8.allSatisfy { isNameByte($0) }
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2E || byte == 0x5F || byte == 0x2D
    }

    /// A realm onair makes (`onair-` and 8 hex digits) or one an owner wrote: printable
    /// ASCII without quotes or backslashes (it goes inside a quoted header value), ≤ 64.
    public static func validRealm(_ realm: String) -> Bool {
        (1...64).contains(realm.utf8.count) && realm.utf8.allSatisfy { (0x20...0x7E).contains($0) && $0 != 0x22 && $0 != 0x5C }
    }

    public static func makeRealm() -> String {
        var generator = SystemRandomNumberGenerator()
        return "onair-" + hex((0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// `alice md5:<32 hex> sha-256:<64 hex>`: an `access.viewer` value.
    public static func viewer(_ value: String) -> Viewer? {
        let words = value.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard words.count == 3, validName(words[0]), words[1].hasPrefix("md5:"), words[2].hasPrefix("sha-256:"),
              let md5 = unhex(String(words[1].dropFirst(4))), md5.count == 16,
              let sha256 = unhex(String(words[2].dropFirst(8))), sha256.count == 32 else { return nil }
        return Viewer(name: words[0], md5: md5, sha256: sha256)
    }

    public static func viewerValue(name: String, password: String, realm: String) -> String {
        "\(name) md5:\(hex(credentialDigest(name, realm, password, .md5))) sha-256:\(hex(credentialDigest(name, realm, password, .sha256)))"
    }

    /// `frigate <secret>`: an `access.device` value (the secret: 16–128 printable ASCII,
    /// no spaces).
    public static func device(_ value: String) -> (name: String, secret: String)? {
        let words = value.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard words.count == 2, validName(words[0]), (16...128).contains(words[1].utf8.count),
              words[1].utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        return (words[0], words[1])
    }

    /// A device secret: 24 characters from an alphabet without look-alikes (≈ 137 bits).
    public static func makeSecret() -> String {
        let alphabet = Array("abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<24).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }

    // MARK: Digests

    /// H(name:realm:password), RFC 7616 §3.4.2's A1 for the non-session algorithms.
    static func credentialDigest(_ name: String, _ realm: String, _ password: String, _ algorithm: DigestAlgorithm) -> [UInt8] {
        hash(Array("\(name):\(realm):\(password)".utf8), algorithm)
    }

    /// libcrypto's MD5 (RFC 2617's clients) or SHA-256 (Basics' one) of `bytes`.
    public static func hash(_ bytes: [UInt8], _ algorithm: DigestAlgorithm) -> [UInt8] {
        guard algorithm == .md5 else { return SHA256.digest(bytes) }
        var out = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        _ = bytes.withUnsafeBytes { raw in EVP_Digest(raw.baseAddress, raw.count, &out, &length, EVP_md5(), nil) }
        return Array(out.prefix(Int(length)))
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        Hex.lower(bytes)
    }

    public static func unhex(_ text: String) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard bytes.count % 2 == 0, bytes.count <= 256 else { return nil }
        func nibble(_ b: UInt8) -> UInt8? {
            switch b {
            case 0x30...0x39: return b - 0x30
            case 0x61...0x66: return b - 0x61 + 10
            case 0x41...0x46: return b - 0x41 + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count / 2)
        var index = 0
        while index < bytes.count {
            guard let high = nibble(bytes[index]), let low = nibble(bytes[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    /// Compares without stopping at the first difference, so timing says nothing.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<max(a.count, b.count) { difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0) }
        return difference == 0
    }
}

/// The hash a Digest challenge names (RFC 7616 §3.3).
public enum DigestAlgorithm: String, Sendable {
    case md5 = "MD5"
    case sha256 = "SHA-256"
}
