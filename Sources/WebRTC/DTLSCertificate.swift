import COpenSSL
import Files

/// The board's DTLS certificate (RFC 8827 §6.5, RFC 5763 §5): self-signed ECDSA P-256,
/// made once and kept, so a viewer's browser sees the same fingerprint across restarts.
/// Browsers check it only against the `a=fingerprint` of onair's SDP answer.
public struct DTLSCertificate: Sendable, Equatable {
    /// The certificate's PEM, then its private key's.
    public let pem: String
    /// SHA-256 of the certificate's DER.
    public let fingerprint: [UInt8]

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case generation
        /// Not a certificate and the key that goes with it.
        case invalid
        public var description: String {
            switch self {
            case .generation: return "OpenSSL could not make a P-256 certificate"
            case .invalid: return "not a PEM certificate followed by its private key"
            }
        }
    }

    /// A new certificate with a random serial number, CN `commonName`.
    public static func generate(commonName: String = "onair") throws -> DTLSCertificate {
        guard let text = onair_dtls_certificate_pem(commonName) else { throw Failure.generation }
        defer { onair_free(text) }
        return try DTLSCertificate(pem: String(cString: text))
    }

    /// One kept before: the certificate and its key must parse and match.
    public init(pem: String) throws {
        var digest = [UInt8](repeating: 0, count: 32)
        let bytes = Array(pem.utf8)
        guard bytes.count < 1 << 16, bytes.withUnsafeBufferPointer({ raw in
            raw.withMemoryRebound(to: CChar.self) { onair_dtls_certificate_check($0.baseAddress, $0.count, &digest) }
        }) == 1 else { throw Failure.invalid }
        self.pem = pem
        fingerprint = digest
    }

    /// `sha-256 AB:CD:…`, as `a=fingerprint` carries it (RFC 8122 §5).
    public var sdpFingerprint: String {
        "sha-256 " + fingerprint.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: ":")
    }
}

extension DTLSCertificate {
    /// The certificate kept at `path` (StreamLayout.dtlsCertificate), or a new one written
    /// there (mode 0600: it holds the private key). One that does not read as a
    /// certificate and its key is set aside (`.corrupt`, for a person to look at) and
    /// replaced; `replaced` then says why, for the log.
    public static func kept(at path: String) throws -> (certificate: DTLSCertificate, created: Bool, replaced: String?) {
        var replaced: String?
        if let bytes = FileSystem.read(path, limit: FileSystem.smallLimit, followLinks: false) {
            if let certificate = try? DTLSCertificate(pem: String(decoding: bytes, as: UTF8.self)) { return (certificate, false, nil) }
            replaced = AtomicFile.setAside(path, because: "\(path) is not a certificate and its key")
        }
        let certificate = try generate()
        try AtomicFile.makeDirectories(AtomicFile.directory(of: path))
        try AtomicFile.write(Array(certificate.pem.utf8), to: path, permissions: 0o600)
        return (certificate, true, replaced)
    }
}
