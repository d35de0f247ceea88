import Basics
import CSRTP

/// One direction of SRTP (RFC 3711) and SRTCP under the keys a DTLS handshake gave
/// (RFC 5764 §4.2), through libsrtp2: the sender's session protects every packet onair
/// sends one viewer, the receiver's checks what that viewer sends back (its RTCP). Not
/// Sendable: one thread owns a peer's sessions.
public final class SRTPSession {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case setup
        /// libsrtp's status: 7 authentication failed, 9/10 replayed, ….
        case packet(Int)
        public var description: String {
            switch self {
            case .setup: return "libsrtp2 did not accept the negotiated profile and keys"
            case .packet(let status): return "SRTP refused the packet (libsrtp2 status \(status))"
            }
        }
    }

    public enum Direction: Sendable { case outbound, inbound }

    private let session: srtp_t

    /// libsrtp's ciphers are set up once per process; a Swift global is made exactly once.
    private static let ready: Bool = onair_srtp_init() != 0

    /// A session from a master key and salt of `profile` (16-byte key; 14-byte salt for
    /// AES-CM, 12 for AES-GCM).
    public init(profile: DTLSEndpoint.SRTPProfile, key: [UInt8], salt: [UInt8], direction: Direction) throws {
        guard Self.ready else { throw Failure.setup }
        let material = key + salt
        guard let session = material.withUnsafeBufferPointer({
            onair_srtp_new(Int32(profile.rawValue), $0.baseAddress, $0.count, direction == .inbound ? 1 : 0)
        }) else { throw Failure.setup }
        self.session = session
    }

    /// The sessions of the side that sent `keys` as server (onair): it sends with the
    /// server's key and receives with the client's (RFC 5764 §4.2).
    public static func server(_ keys: DTLSEndpoint.Keys) throws -> (send: SRTPSession, receive: SRTPSession) {
        (try SRTPSession(profile: keys.profile, key: keys.serverKey, salt: keys.serverSalt, direction: .outbound),
         try SRTPSession(profile: keys.profile, key: keys.clientKey, salt: keys.clientSalt, direction: .inbound))
    }

    /// The client's: the mirror image (a test's browser side).
    public static func client(_ keys: DTLSEndpoint.Keys) throws -> (send: SRTPSession, receive: SRTPSession) {
        (try SRTPSession(profile: keys.profile, key: keys.clientKey, salt: keys.clientSalt, direction: .outbound),
         try SRTPSession(profile: keys.profile, key: keys.serverKey, salt: keys.serverSalt, direction: .inbound))
    }

    deinit { srtp_dealloc(session) }

    public func protect(rtp packet: [UInt8]) throws -> [UInt8] { try run(packet, grows: true, srtp_protect) }
    public func protect(rtcp packet: [UInt8]) throws -> [UInt8] { try run(packet, grows: true, srtp_protect_rtcp) }
    public func unprotect(rtp packet: [UInt8]) throws -> [UInt8] { try run(packet, grows: false, srtp_unprotect) }
    public func unprotect(rtcp packet: [UInt8]) throws -> [UInt8] { try run(packet, grows: false, srtp_unprotect_rtcp) }

    /// libsrtp works in place: the packet is copied into a buffer with room for the tag
    /// (and SRTCP's index), and cut to the length libsrtp leaves.
    private func run(_ packet: [UInt8], grows: Bool,
                     _ call: (srtp_t?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) -> srtp_err_status_t) throws -> [UInt8] {
        // Bounded by the datagram it came in or the packet onair made: far below Int32.max.
        guard packet.count <= 65_536 else { throw Failure.packet(Int(srtp_err_status_bad_param.rawValue)) }
        var buffer = packet
        if grows { buffer.append(contentsOf: repeatElement(0, count: Int(onair_srtp_max_trailer()))) }
        var length = Int32(packet.count)
        let status = buffer.withUnsafeMutableBytes { call(session, $0.baseAddress, &length) }
        guard status == srtp_err_status_ok, length >= 0, Int(length) <= buffer.count else { throw Failure.packet(Int(status.rawValue)) }
        buffer.removeLast(buffer.count - Int(length))
        return buffer
    }
}

extension SRTPSession {
    /// libsrtp2, for `onair version`.
    public static var libraryVersion: LibraryVersion {
        LibraryVersion("libsrtp2", versionString: String(cString: srtp_get_version_string()),
                       debianSource: debianSource("libsrtp2", onair_debian_libsrtp2()))
    }
}
