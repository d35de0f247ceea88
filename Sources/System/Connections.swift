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

/// TCP as a client (a destination's connection to a platform's ingest): the addresses a
/// host name stands for, and a connect(2) that does not wait, so the caller's poll(2)
/// bounds it and can be woken out of it.
extension SocketAddress {
    /// The TCP addresses `host` names at `port` (getaddrinfo(3)): a numeric address as it
    /// is, a name as the resolver answers, IPv4 and IPv6 in the order it prefers. A name
    /// blocks for as long as the resolver tries (resolv.conf's timeout and attempts): call
    /// it on a thread that may wait.
    public static func resolve(_ host: String, port: UInt16) throws(ResolveError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            throw ResolveError(host: host, reason: status == EAI_SYSTEM ? Errno.current.description : String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var next = list
        while let entry = next?.pointee {
            next = entry.ai_next
            guard let address = entry.ai_addr, [AF_INET, AF_INET6].contains(entry.ai_family),
                  Int(entry.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size else { continue }
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(entry.ai_addrlen))) }
            addresses.append(SocketAddress(storage: storage, ipv6: entry.ai_family == AF_INET6))
        }
        guard !addresses.isEmpty else { throw ResolveError(host: host, reason: "no IPv4 or IPv6 address") }
        return addresses
    }
}

/// A host name the resolver could not turn into an address: the name and its words.
public struct ResolveError: Error, CustomStringConvertible, Sendable {
    public let host: String
    public let reason: String
    public var description: String { "cannot resolve \(host): \(reason)" }
}

extension FileDescriptor {
    /// A non-blocking, close-on-exec TCP socket whose connect(2) to `address` has begun:
    /// it is writable once connected or failed (`connectResult`). TCP_NODELAY: media
    /// written as it comes must not wait for Nagle. `sendBuffer`: at most this many bytes
    /// wait in the kernel (SO_SNDBUF, which Linux doubles), so a slow path shows as a full
    /// socket within seconds rather than as latency hidden in megabytes of buffer.
    public static func connecting(to address: SocketAddress, sendBuffer: Int32? = nil) throws -> FileDescriptor {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let socket = FileDescriptor(adopting: try once {
            Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        })
        try? socket.setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        if let sendBuffer { try? socket.setOption(SOL_SOCKET, SO_SNDBUF, sendBuffer) }
        let result = address.withRawPointer { connect(socket.rawValue, $0.assumingMemoryBound(to: sockaddr.self), address.length) }
        if result < 0 {
            let error = Errno.current
            guard error == Errno(rawValue: EINPROGRESS) || error == .interrupted else { throw error }
        }
        return socket
    }

    /// A connecting socket's outcome once it is writable (SO_ERROR): nil when connected.
    public func connectResult() -> Errno? {
        var value: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(rawValue, SOL_SOCKET, SO_ERROR, &value, &size) == 0 else { return Errno.current }
        return value == 0 ? nil : Errno(rawValue: value)
    }
}
