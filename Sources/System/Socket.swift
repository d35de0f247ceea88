#if canImport(Glibc)
import Glibc
#endif

/// A numeric IPv4 or IPv6 address and a port, as the kernel's sockaddr (inet_pton(3)):
/// what the web server binds.
public struct SocketAddress: Sendable {
    public let isIPv6: Bool
    let storage: sockaddr_storage

    /// nil when `host` is not a numeric address of its family (no name is looked up).
    public init?(numeric host: String, port: UInt16, ipv6: Bool) {
        var storage = sockaddr_storage()
        let parsed = withUnsafeMutablePointer(to: &storage) { pointer -> Bool in
            if ipv6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    a.pointee.sin6_family = sa_family_t(AF_INET6)
                    a.pointee.sin6_port = port.bigEndian
                    return inet_pton(AF_INET6, host, &a.pointee.sin6_addr) == 1
                }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
                a.pointee.sin_family = sa_family_t(AF_INET)
                a.pointee.sin_port = port.bigEndian
                return inet_pton(AF_INET, host, &a.pointee.sin_addr) == 1
            }
        }
        guard parsed else { return nil }
        self.init(storage: storage, ipv6: ipv6)
    }

    init(storage: sockaddr_storage, ipv6: Bool) {
        self.storage = storage
        isIPv6 = ipv6
    }

    /// The address alone in network order: 4 bytes, or 16 for IPv6.
    public var addressBytes: [UInt8] {
        withUnsafeBytes(of: storage) { raw in
            isIPv6 ? Array(raw[8..<24]) : Array(raw[4..<8])
        }
    }

    /// The sockaddr's bytes, for a C library that binds it (libmicrohttpd).
    public func withRawPointer<T>(_ body: (UnsafeRawPointer) throws -> T) rethrows -> T {
        try withUnsafeBytes(of: storage) { try body($0.baseAddress!) }
    }
}

extension FileDescriptor {
    /// A descriptor another library owns (libmicrohttpd's connections): this object never
    /// closes it.
    public convenience init(borrowing rawValue: Int32) {
        self.init(adopting: rawValue)
        _ = release()
    }

    /// shutdown(2) both ways: the peer sees the end, and a thread blocked on the socket
    /// returns, while the descriptor stays open for its owner to close.
    public func shutdown() { _ = Glibc.shutdown(rawValue, Int32(SHUT_RDWR)) }

    /// Sends a datagram to the AF_UNIX socket at `path` (sd_notify(3)'s protocol); a
    /// leading "@" names an abstract socket.
    public static func sendDatagram(_ message: String, toUnixSocket path: String) -> Bool {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        let socket = FileDescriptor(adopting: fd)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                message.withCString { sendto(socket.rawValue, $0, strlen($0), 0, address, length) }
            }
        }
        return sent >= 0
    }
}

extension ThisProcess {
    /// The soft limit on open descriptors (RLIMIT_NOFILE), or nil when it cannot be read.
    public static var openFileLimit: Int? {
        var files = rlimit()
        return getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files) == 0 ? Int(clamping: files.rlim_cur) : nil
    }
}

extension SocketAddress {
    /// What a per-address limit counts a client's address as: IPv4's four bytes (also
    /// when mapped into IPv6), IPv6's /64 — one host is given a whole /64 and can take any
    /// address in it (RFC 8981), so counting exact addresses would count one host many
    /// times; anything that is not a numeric address, as its first 64 bytes of text.
    public static func clientGroup(_ client: String) -> [UInt8] {
        if client.contains(":"), let address = SocketAddress(numeric: client, port: 0, ipv6: true) {
            let bytes = address.addressBytes
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes[12...]) }
            return Array(bytes[..<8])
        }
        if let address = SocketAddress(numeric: client, port: 0, ipv6: false) { return address.addressBytes }
        return Array(client.utf8.prefix(64))
    }
}
