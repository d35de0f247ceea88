#if canImport(Glibc)
import Glibc
#endif
import CLinux

extension SocketAddress {
    /// The address's bytes (4 for IPv4, 16 for IPv6) and port, as a datagram's sender is
    /// told apart by; an IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a dual-stack socket
    /// reports for an IPv4 peer) is given as the IPv4 one.
    public var bytes: [UInt8] {
        withRawPointer { raw in
            if isIPv6 {
                let address = raw.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_addr
                let all = withUnsafeBytes(of: address) { Array($0) }
                return all.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] ? Array(all.suffix(4)) : all
            }
            return withUnsafeBytes(of: raw.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_addr) { Array($0) }
        }
    }

    public var port: UInt16 {
        withRawPointer { raw in
            isIPv6 ? UInt16(bigEndian: raw.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_port)
                : UInt16(bigEndian: raw.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_port)
        }
    }

    /// An address from its bytes (4: IPv4, 16: IPv6) and port; nil for any other length.
    public init?(bytes: [UInt8], port: UInt16) {
        var storage = sockaddr_storage()
        switch bytes.count {
        case 4:
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
                    a.pointee.sin_family = sa_family_t(AF_INET)
                    a.pointee.sin_port = port.bigEndian
                    withUnsafeMutableBytes(of: &a.pointee.sin_addr) { $0.copyBytes(from: bytes) }
                }
            }
            self.init(storage: storage, ipv6: false)
        case 16:
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    a.pointee.sin6_family = sa_family_t(AF_INET6)
                    a.pointee.sin6_port = port.bigEndian
                    withUnsafeMutableBytes(of: &a.pointee.sin6_addr) { $0.copyBytes(from: bytes) }
                }
            }
            self.init(storage: storage, ipv6: true)
        default:
            return nil
        }
    }

    /// The kernel's size of this family's sockaddr (with `withRawPointer`, what a C
    /// library that connects, libsrt, is given).
    public var length: socklen_t { socklen_t(isIPv6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size) }
}

extension FileDescriptor {
    /// A UDP socket bound to `address` (port 0: any), non-blocking, close-on-exec. An IPv6
    /// wildcard takes IPv4 too (IPV6_V6ONLY off), as one port for every peer needs.
    /// `bufferBytes` asks for send and receive buffers of that size (the kernel may give
    /// less: net.core.wmem_max).
    public static func datagramSocket(bound address: SocketAddress, bufferBytes: Int32 = 0) throws -> FileDescriptor {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let socket = FileDescriptor(adopting: try once {
            Glibc.socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        })
        if address.isIPv6 { try socket.setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0) }
        if bufferBytes > 0 {
            try socket.setOption(SOL_SOCKET, SO_SNDBUF, bufferBytes)
            try socket.setOption(SOL_SOCKET, SO_RCVBUF, bufferBytes)
        }
        _ = try address.withRawPointer { raw in
            try once { bind(socket.rawValue, raw.assumingMemoryBound(to: sockaddr.self), address.length) }
        }
        return socket
    }

    func setOption(_ level: Int32, _ name: Int32, _ value: Int32) throws {
        var value = value
        _ = try once { setsockopt(rawValue, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) }
    }

    /// The address a socket is bound to (getsockname(2)): the port the kernel chose.
    public func boundAddress() throws -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                try once { getsockname(rawValue, address, &length) }
            }
        }
        return SocketAddress(storage: storage, ipv6: Int32(storage.ss_family) == AF_INET6)
    }

    /// One datagram into `buffer` (a longer one is cut to its size): how many bytes, and
    /// from where; nil when none is waiting (the socket is non-blocking).
    public func receiveDatagram(into buffer: inout [UInt8]) throws -> (count: Int, from: SocketAddress)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let count = buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(rawValue, bytes.baseAddress, bytes.count, 0, $0, &length) }
            }
        }
        guard try Self.received(count) else { return nil }
        return (count, SocketAddress(storage: storage, ipv6: Int32(storage.ss_family) == AF_INET6))
    }

    /// A receive's result: true when a datagram came; false when none is there now (or the
    /// call was interrupted, or an ICMP port unreachable for an earlier send was reported:
    /// nothing to read either way); throws any other error.
    static func received(_ count: Int) throws -> Bool {
        guard count < 0 else { return true }
        let error = Errno.current
        if error == .again || error == .interrupted || error == .connectionRefused { return false }
        throw error
    }

    /// Sends one datagram to `address` (of the socket's family: the address a datagram
    /// came from); false when it could not go now — the socket's buffer is full, or the
    /// peer's host said the port is closed — and it is dropped, as the network might have.
    @discardableResult
    public func sendDatagram(_ bytes: [UInt8], to address: SocketAddress) throws -> Bool {
        let sent = bytes.withUnsafeBytes { raw in
            address.withRawPointer { sendto(rawValue, raw.baseAddress, raw.count, 0, $0.assumingMemoryBound(to: sockaddr.self), address.length) }
        }
        if sent < 0 {
            let error = Errno.current
            if [.again, .interrupted, .noBufferSpace, .connectionRefused].contains(error) { return false }
            throw error
        }
        return true
    }
}

/// The machine's own addresses (getifaddrs(3)): those of interfaces that are up, by family,
/// link-local IPv6 left out (a host candidate there needs a zone, which SDP cannot carry).
public enum NetworkInterfaces {
    public static func addresses(ipv6: Bool, loopback: Bool) -> [SocketAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var found: [SocketAddress] = []
        var entry = list
        while let current = entry?.pointee {
            defer { entry = current.ifa_next }
            guard let address = current.ifa_addr, current.ifa_flags & UInt32(IFF_UP) != 0,
                  loopback || current.ifa_flags & UInt32(IFF_LOOPBACK) == 0 else { continue }
            let family = Int32(address.pointee.sa_family)
            if family == AF_INET && !ipv6 {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: MemoryLayout<sockaddr_in>.size)) }
                found.append(SocketAddress(storage: storage, ipv6: false))
            } else if family == AF_INET6 && ipv6 {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: MemoryLayout<sockaddr_in6>.size)) }
                let candidate = SocketAddress(storage: storage, ipv6: true)
                if !(candidate.bytes.count == 16 && candidate.bytes[0] == 0xFE && candidate.bytes[1] & 0xC0 == 0x80) { found.append(candidate) }
            }
        }
        return found
    }
}

extension NetworkInterfaces {
    /// The up, non-loopback interfaces with IPv4 addresses: name, address and prefix
    /// length (from the netmask), as ONVIF's GetNetworkInterfaces and WS-Discovery's
    /// multicast membership need them.
    public static func ipv4() -> [(name: String, address: [UInt8], prefixLength: Int)] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var found: [(name: String, address: [UInt8], prefixLength: Int)] = []
        var entry = list
        while let current = entry?.pointee {
            defer { entry = current.ifa_next }
            guard let address = current.ifa_addr, Int32(address.pointee.sa_family) == AF_INET, current.ifa_flags & UInt32(IFF_UP) != 0,
                  current.ifa_flags & UInt32(IFF_LOOPBACK) == 0 else { continue }
            let bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) } }
            let mask = current.ifa_netmask.map { netmask in
                netmask.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }
            } ?? 0
            found.append((String(cString: current.ifa_name), bytes, mask.nonzeroBitCount))
        }
        return found
    }
}

extension FileDescriptor {
    /// Joins an IPv4 multicast group (IP_ADD_MEMBERSHIP) on the interface with `interface`'s
    /// address: datagrams to the group arriving there are delivered to this socket.
    public func joinMulticast(group: [UInt8], interface: [UInt8]) throws {
        guard group.count == 4, interface.count == 4 else { throw Errno.invalid }
        var request = ip_mreq()
        withUnsafeMutableBytes(of: &request.imr_multiaddr) { $0.copyBytes(from: group) }
        withUnsafeMutableBytes(of: &request.imr_interface) { $0.copyBytes(from: interface) }
        _ = try once { setsockopt(rawValue, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreq>.size)) }
    }

    /// Where this socket's multicast datagrams leave (IP_MULTICAST_IF): the interface with
    /// `interface`'s address; they go one hop (TTL 1, WS-Discovery §3.1.1's scope).
    public func sendMulticast(from interface: [UInt8]) throws {
        guard interface.count == 4 else { throw Errno.invalid }
        var address = in_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: interface) }
        _ = try once { setsockopt(rawValue, Int32(IPPROTO_IP), IP_MULTICAST_IF, &address, socklen_t(MemoryLayout<in_addr>.size)) }
        try setOption(Int32(IPPROTO_IP), IP_MULTICAST_TTL, 1)
    }

    /// SO_REUSEADDR before binding: another discovery listener on the same port (another
    /// ONVIF service on the board) does not keep this one out.
    public static func sharedDatagramSocket(bound address: SocketAddress) throws -> FileDescriptor {
        let socket = FileDescriptor(adopting: try once {
            Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        })
        try socket.setOption(SOL_SOCKET, SO_REUSEADDR, 1)
        _ = try address.withRawPointer { raw in
            try once { bind(socket.rawValue, raw.assumingMemoryBound(to: sockaddr.self), address.length) }
        }
        return socket
    }
}

/// An IPv4 interface's address and prefix: what is on its link.
public struct InterfaceAddress: Hashable, Sendable {
    public var address: [UInt8]
    public var prefixLength: Int

    public init(address: [UInt8], prefixLength: Int) {
        self.address = address
        self.prefixLength = max(0, min(32, prefixLength))
    }

    /// Whether `other` (4 bytes) is in this interface's subnet.
    public func contains(_ other: [UInt8]) -> Bool {
        guard address.count == 4, other.count == 4 else { return false }
        let mask: UInt32 = prefixLength == 0 ? 0 : ~UInt32(0) << (32 - prefixLength)
        func value(_ bytes: [UInt8]) -> UInt32 { bytes.reduce(0) { $0 << 8 | UInt32($1) } }
        return value(address) & mask == value(other) & mask
    }
}

extension FileDescriptor {
    /// Asks the kernel to say, with each datagram, the local address it came in on
    /// (IP_PKTINFO, ip(7)); read them with `receiveDatagramWithLocal`.
    public func reportLocalAddresses() throws { try setOption(Int32(IPPROTO_IP), IP_PKTINFO, 1) }

    /// One IPv4 datagram, its sender, and the local address it was received on (the
    /// receiving interface's own address for a multicast one); nil when none waits.
    public func receiveDatagramWithLocal(into buffer: inout [UInt8]) throws -> (count: Int, from: SocketAddress, local: [UInt8])? {
        var source = sockaddr_storage()
        var local: [UInt8] = [0, 0, 0, 0]
        let count = buffer.withUnsafeMutableBytes { bytes in
            local.withUnsafeMutableBufferPointer { local in
                withUnsafeMutablePointer(to: &source) { Int(onair_receive_with_local(rawValue, bytes.baseAddress, UInt(bytes.count), $0, local.baseAddress)) }
            }
        }
        guard try Self.received(count) else { return nil }
        return (count, SocketAddress(storage: source, ipv6: false), local)
    }
}
