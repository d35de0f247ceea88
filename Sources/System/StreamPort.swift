/// A connection of a `StreamPort`: what has come, what goes, never waiting. A TCP
/// connection (`FileDescriptor`) is the kernel's; TestSupport's `MemoryStreams` makes a
/// test's.
public protocol StreamConnection: AnyObject, Sendable {
    /// What has come, into `buffer`: how many bytes (0: the peer closed its side), nil
    /// when nothing waits.
    func receiveSome(into buffer: UnsafeMutableRawBufferPointer) throws -> Int?
    /// What the connection takes now of `buffer` (0 when it takes nothing); a connection
    /// the peer reset throws.
    func sendSome(_ buffer: UnsafeRawBufferPointer) throws -> Int
    func close()
}

extension FileDescriptor: StreamConnection {}

/// A listening stream socket as a server's one thread uses it (the RTSP server): wait
/// until a connection can be taken, one of those taken is ready, a datagram came on one
/// of the server's datagram ports, or the thread is woken; take a connection. `TCPPort`
/// is the kernel's; a test gives an in-memory one (TestSupport's `MemoryStreams`), so the
/// server's protocol code runs on virtual time with nothing bound.
public protocol StreamPort: Sendable {
    /// The next connection waiting and its peer; nil when none waits. Running out of
    /// descriptors throws.
    func accept() throws -> (StreamConnection, SocketAddress)?
    /// Waits at most `timeoutMs` until a connection waits to be taken (when `accepting`),
    /// one of `connections` has one of the events it is watched for, one of `datagrams`
    /// has a datagram, or `wake` is called; says whether one waits to be taken and what
    /// each connection has, in order.
    func wait(accepting: Bool, connections: [(StreamConnection, Poll.Events)], datagrams: [DatagramPort],
              timeoutMs: Int32) -> (accept: Bool, connections: [Poll.Events])
    /// Ends a `wait` now, or the next one at once (from any thread).
    func wake()
}

/// A TCP socket listening, its connections and a pipe to wake its thread with, all waited
/// on in one poll(2) with the server's UDP ports.
public final class TCPPort: StreamPort {
    public let listener: FileDescriptor
    private let pipe: WakePipe

    public init(_ listener: FileDescriptor) throws {
        self.listener = listener
        pipe = try WakePipe()
    }

    public func accept() throws -> (StreamConnection, SocketAddress)? {
        try listener.acceptConnection().map { ($0.0, $0.1) }
    }

    public func wait(accepting: Bool, connections: [(StreamConnection, Poll.Events)], datagrams: [DatagramPort],
                     timeoutMs: Int32) -> (accept: Bool, connections: [Poll.Events]) {
        var watched: [(FileDescriptor, Poll.Events)] = [(pipe.read, .readable)]
        // Only the kernel's ports can be polled here; a server gives this port its UDPPorts.
        watched += datagrams.compactMap { ($0 as? UDPPort).map { ($0.socket, .readable) } }
        if accepting { watched.append((listener, .readable)) }
        let first = watched.count
        // A connection not the kernel's (none, from this port) is never ready.
        let descriptors = connections.map { ($0.0 as? FileDescriptor, $0.1) }
        watched += descriptors.compactMap { descriptor, events in descriptor.map { ($0, events) } }
        let ready = (try? Poll.wait(watched, timeoutMs: timeoutMs)) ?? watched.map { _ in [] }
        pipe.drain()
        var next = first
        let states = descriptors.map { descriptor, _ -> Poll.Events in
            guard descriptor != nil else { return [] }
            defer { next += 1 }
            return ready[next]
        }
        return (accepting && !ready[first - 1].isEmpty, states)
    }

    public func wake() { pipe.wake() }
}
