#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// TCP as a server on one thread uses it (the RTSP server): a listening socket and the
/// connections it accepts, all non-blocking, so one poll(2) loop serves every client and
/// no client's slowness can hold the loop.
extension FileDescriptor {
    /// A TCP socket listening on `address` (port 0: any), non-blocking, close-on-exec,
    /// SO_REUSEADDR (a restarted appliance rebinds at once); an IPv6 wildcard takes IPv4 too.
    public static func listeningSocket(bound address: SocketAddress, backlog: Int32 = 64) throws -> FileDescriptor {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let socket = FileDescriptor(adopting: try once {
            Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        })
        try socket.setOption(SOL_SOCKET, SO_REUSEADDR, 1)
        if address.isIPv6 { try socket.setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0) }
        _ = try address.withRawPointer { raw in
            try once { bind(socket.rawValue, raw.assumingMemoryBound(to: sockaddr.self), address.length) }
        }
        _ = try once { listen(socket.rawValue, backlog) }
        return socket
    }

    /// The next connection waiting (accept4(2)), non-blocking and close-on-exec, with
    /// TCP_NODELAY (media written as it comes must not wait for Nagle); nil when none is
    /// waiting or it went before it could be taken. Running out of descriptors throws.
    public func acceptConnection() throws -> (FileDescriptor, SocketAddress)? {
        var storage = sockaddr_storage()
        var length = UInt32(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &storage) { onair_accept(rawValue, $0, &length) }
        guard fd >= 0 else {
            let error = Errno.current
            if [.again, .interrupted, Errno(rawValue: ECONNABORTED)].contains(error) { return nil }
            throw error
        }
        let connection = FileDescriptor(adopting: fd)
        try? connection.setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        return (connection, SocketAddress(storage: storage, ipv6: Int32(storage.ss_family) == AF_INET6))
    }

    /// send(2) of what the socket takes now, without SIGPIPE: how many bytes went (0 when
    /// its buffer is full). A connection the peer reset throws.
    public func sendSome(_ buffer: UnsafeRawBufferPointer) throws -> Int {
        let sent = send(rawValue, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
        if sent < 0 {
            let error = Errno.current
            if error == .again || error == .interrupted { return 0 }
            throw error
        }
        return sent
    }

    /// recv(2) of what has come: how many bytes (0: the peer closed its side), nil when
    /// nothing is waiting.
    public func receiveSome(into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
        let count = recv(rawValue, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
        if count < 0 {
            let error = Errno.current
            if error == .again || error == .interrupted { return nil }
            throw error
        }
        return count
    }
}

extension SocketAddress {
    /// The same address at another port (a client's RTP port, from its RTSP connection's).
    public func with(port: UInt16) -> SocketAddress {
        var storage = self.storage
        withUnsafeMutablePointer(to: &storage) { pointer in
            if isIPv6 {
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port = port.bigEndian }
            } else {
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port = port.bigEndian }
            }
        }
        return SocketAddress(storage: storage, ipv6: isIPv6)
    }

    /// The address as text (an IPv4-mapped one as IPv4): `192.168.1.20`,
    /// `2001:db8:0:0:0:0:0:1` (groups uncompressed, as SDP and logs carry it).
    public var host: String { Self.host(bytes) }

    public static func host(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map { String($0) }.joined(separator: ".") }
        return stride(from: 0, to: bytes.count - 1, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }
}

/// Why a server of the appliance's (WebRTC's UDP port, RTSP's TCP port) could not listen:
/// one line naming the service and the address.
public enum ListenError: Error, CustomStringConvertible {
    /// The address to bind is not a numeric IPv4 or IPv6 address.
    case badHost(service: String, host: String)
    case cannotBind(service: String, address: String, Errno)

    public var description: String {
        switch self {
        case .badHost(let service, let host): return "\(service): \(host) is not a numeric address"
        case .cannotBind(let service, let address, let error): return "\(service): cannot bind \(address): \(error)"
        }
    }
}
