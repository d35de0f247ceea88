/// A datagram socket as a server's one thread uses it: wait until a datagram came or the
/// thread is woken, take what came, send. `UDPPort` is the kernel's; a test gives an
/// in-memory one (TestSupport's `MemoryDatagrams`), so the server's protocol code runs on
/// virtual time with nothing bound (as swift-nio's EmbeddedChannel, pion's vnet).
public protocol DatagramPort: Sendable {
    /// Waits until a datagram may be read, `wake` is called, or `timeoutMs` pass.
    func wait(timeoutMs: Int32)
    /// The next datagram that came, if any; never waits.
    func receive(into buffer: inout [UInt8]) -> (count: Int, from: SocketAddress)?
    /// False when it could not be sent now (the socket's buffer is full).
    @discardableResult
    func send(_ datagram: [UInt8], to address: SocketAddress) -> Bool
    /// Ends a `wait` now, or the next one at once (from any thread).
    func wake()
}

/// A pipe a thread waiting in poll(2) watches, so another thread can end its wait.
public final class WakePipe: Sendable {
    public let read: FileDescriptor
    private let write: FileDescriptor

    public init() throws { (read, write) = try makePipe(nonBlocking: true) }

    /// A byte down the pipe (a full pipe wakes the thread as well).
    public func wake() { _ = try? [UInt8(1)].withUnsafeBytes { try write.write($0) } }

    /// Takes what woke the thread, after its poll.
    public func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while ((try? bytes.withUnsafeMutableBytes { try read.read(into: $0) }) ?? 0) > 0 {}
    }
}

/// A bound UDP socket and a pipe to wake its thread with. A port that another port's wait
/// watches (RTSP's RTP and RTCP ports, in its TCP port's poll) needs no pipe of its own.
public final class UDPPort: DatagramPort {
    public let socket: FileDescriptor
    private let pipe: WakePipe?

    public init(_ socket: FileDescriptor, waitedOnElsewhere: Bool = false) throws {
        self.socket = socket
        pipe = waitedOnElsewhere ? nil : try WakePipe()
    }

    public func wait(timeoutMs: Int32) {
        _ = try? Poll.wait([(socket, .readable)] + (pipe.map { [($0.read, .readable)] } ?? []), timeoutMs: timeoutMs)
        pipe?.drain()
    }

    public func receive(into buffer: inout [UInt8]) -> (count: Int, from: SocketAddress)? {
        (try? socket.receiveDatagram(into: &buffer)) ?? nil
    }

    @discardableResult
    public func send(_ datagram: [UInt8], to address: SocketAddress) -> Bool {
        (try? socket.sendDatagram(datagram, to: address)) ?? false
    }

    public func wake() { pipe?.wake() }
}

/// A datagram port on every IPv4 interface at once, as WS-Discovery uses one: it joins a
/// multicast group per interface, sends to the group out of a chosen interface, and says
/// which local address each datagram came in on. `UDPPort` over a socket made with
/// `sharedDatagramSocket` and `reportLocalAddresses` is the kernel's; `MemoryDatagrams` a
/// test's.
public protocol MulticastPort: DatagramPort {
    /// Joins `group` on the interface with the address `interface` (IP_ADD_MEMBERSHIP).
    func join(group: [UInt8], interface: [UInt8])
    /// Sends to `group` out of the interface with the address `interface`, one hop.
    @discardableResult
    func send(_ datagram: [UInt8], to group: SocketAddress, from interface: [UInt8]) -> Bool
    /// The next datagram that came, with the local address it came in on; never waits.
    func receiveWithLocal(into buffer: inout [UInt8]) -> (count: Int, from: SocketAddress, local: [UInt8])?
}

extension UDPPort: MulticastPort {
    public func join(group: [UInt8], interface: [UInt8]) {
        try? socket.joinMulticast(group: group, interface: interface)
    }

    @discardableResult
    public func send(_ datagram: [UInt8], to group: SocketAddress, from interface: [UInt8]) -> Bool {
        guard (try? socket.sendMulticast(from: interface)) != nil else { return false }
        return send(datagram, to: group)
    }

    public func receiveWithLocal(into buffer: inout [UInt8]) -> (count: Int, from: SocketAddress, local: [UInt8])? {
        (try? socket.receiveDatagramWithLocal(into: &buffer)) ?? nil
    }
}
