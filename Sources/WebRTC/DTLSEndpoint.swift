import COpenSSL

/// One side of a DTLS-SRTP handshake (RFC 5763, RFC 5764) over datagrams the caller
/// carries: OpenSSL's DTLS 1.2 on memory BIOs, so the one UDP thread moves bytes and no
/// socket belongs to a peer. onair is the passive side (the browser's `setup:active`
/// makes it the client). When done, the SRTP profile and keys come from the handshake
/// (`SSL_export_keying_material`, §4.2), and the peer's certificate fingerprint is there
/// to compare with its SDP's. Not Sendable: one thread owns a session.
public final class DTLSEndpoint {
    public enum SRTPProfile: Int, Sendable, Equatable {
        /// RFC 5764 §4.1.2: 16-byte keys, 14-byte salts.
        case aes128CmSha1_80 = 0x0001
        /// RFC 7714 §14.2: 16-byte keys, 12-byte salts.
        case aeadAes128Gcm = 0x0007

        var keyLength: Int { 16 }
        var saltLength: Int { self == .aeadAes128Gcm ? 12 : 14 }
    }

    /// The keys of both directions (RFC 5764 §4.2: client key, server key, client salt,
    /// server salt, in that order in the exported material).
    public struct Keys: Sendable, Equatable {
        public var profile: SRTPProfile
        public var clientKey: [UInt8], serverKey: [UInt8], clientSalt: [UInt8], serverSalt: [UInt8]
        public init(profile: SRTPProfile, clientKey: [UInt8], serverKey: [UInt8], clientSalt: [UInt8], serverSalt: [UInt8]) {
            self.profile = profile
            self.clientKey = clientKey
            self.serverKey = serverKey
            self.clientSalt = clientSalt
            self.serverSalt = serverSalt
        }
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case setup
        case handshake
        public var description: String {
            switch self {
            case .setup: return "OpenSSL could not set up DTLS with the board's certificate"
            case .handshake: return "the DTLS handshake failed"
            }
        }
    }

    private let ssl: OpaquePointer
    public let isServer: Bool
    public private(set) var isConnected = false

    public init(certificate: DTLSCertificate, server: Bool) throws {
        let bytes = Array(certificate.pem.utf8)
        guard let ssl = bytes.withUnsafeBufferPointer({ raw in
            raw.withMemoryRebound(to: CChar.self) { onair_dtls_new($0.baseAddress, $0.count, server ? 1 : 0) }
        }) else { throw Failure.setup }
        self.ssl = ssl
        isServer = server
    }

    deinit { onair_dtls_free(ssl) }

    /// Feeds a datagram that came from the peer (or nothing, to begin as the client) and
    /// returns the datagrams to send back. Throws when the handshake fails.
    public func receive(_ datagram: [UInt8] = []) throws -> [[UInt8]] {
        let result = datagram.withUnsafeBufferPointer { onair_dtls_step(ssl, $0.baseAddress, $0.count) }
        guard result >= 0 else { throw Failure.handshake }
        if result >= 1 { isConnected = true }
        if result == 2 { isClosed = true }
        return outgoing()
    }

    /// The peer sent close_notify: the session is over.
    public private(set) var isClosed = false

    /// A close_notify for the peer (nothing before the handshake is done).
    public func close() -> [[UInt8]] {
        onair_dtls_shutdown(ssl)
        return outgoing()
    }

    /// After the retransmission timer (about a second): the flight to send again, if any.
    public func retransmit() -> [[UInt8]] {
        onair_dtls_timeout(ssl) == 1 ? outgoing() : []
    }

    /// The outbox, in datagrams of at most 1200 bytes (the MTU the endpoint was given).
    private func outgoing() -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 1200)
        while true {
            let n = buffer.withUnsafeMutableBufferPointer { onair_dtls_outgoing(ssl, $0.baseAddress, $0.count) }
            guard n > 0 else { return datagrams }
            datagrams.append(Array(buffer[0..<Int(n)]))
        }
    }

    /// The SRTP profile and keys, once connected; nil before, or when none was agreed.
    public var keys: Keys? {
        guard isConnected, let profile = SRTPProfile(rawValue: Int(onair_dtls_srtp_profile(ssl))) else { return nil }
        let k = profile.keyLength, s = profile.saltLength
        var material = [UInt8](repeating: 0, count: 2 * (k + s))
        guard material.withUnsafeMutableBufferPointer({ onair_dtls_export(ssl, $0.baseAddress, $0.count) }) == 1 else { return nil }
        return Keys(profile: profile, clientKey: Array(material[0..<k]), serverKey: Array(material[k..<(2 * k)]),
                    clientSalt: Array(material[(2 * k)..<(2 * k + s)]), serverSalt: Array(material[(2 * k + s)...]))
    }

    /// SHA-256 of the peer's certificate, once it has sent one.
    public var peerFingerprint: [UInt8]? {
        var digest = [UInt8](repeating: 0, count: 32)
        return onair_dtls_peer_fingerprint(ssl, &digest) == 1 ? digest : nil
    }
}
