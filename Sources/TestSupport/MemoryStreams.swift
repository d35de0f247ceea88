import System
import Threading

/// A listening stream port in memory, for a server on virtual time: the test connects
/// clients from addresses of its choosing, writes their bytes and reads what the server
/// sent them; nothing is bound, and `wait` returns at once with what is ready (the test
/// runs the server's turns itself).
public final class MemoryStreams: StreamPort {
    private let pending = Locked<[(Client, SocketAddress)]>([])

    public init() {}

    /// A client connecting from `source`; the server takes it at its next turn. The
    /// client takes at most `window` bytes the test has not read (as TCP's buffers would):
    /// past it, the server's sends take nothing.
    public func connect(from source: SocketAddress, window: Int = 1 << 20) -> Client {
        let client = Client(window: window)
        pending.withLock { $0.append((client, source)) }
        return client
    }

    public func accept() throws -> (StreamConnection, SocketAddress)? {
        pending.withLock { $0.isEmpty ? nil : $0.removeFirst() }.map { ($0.0, $0.1) }
    }

    public func wait(accepting: Bool, connections: [(StreamConnection, Poll.Events)], datagrams: [DatagramPort],
                     timeoutMs: Int32) -> (accept: Bool, connections: [Poll.Events]) {
        let states = connections.map { connection, watched -> Poll.Events in
            guard let client = connection as? Client else { return [] }
            return client.ready.intersection(watched.union([.hangUp, .error]))
        }
        return (accepting && pending.withLock { !$0.isEmpty }, states)
    }

    public func wake() {}

    /// Both ends of one connection: the server's (`StreamConnection`) and the test's.
    public final class Client: StreamConnection {
        private struct State {
            var toServer: [UInt8] = []
            var toClient: [UInt8] = []
            var closedByClient = false
            var closedByServer = false
        }

        private let state = Locked(State())
        let window: Int

        init(window: Int) { self.window = window }

        // MARK: The test's end

        /// Bytes from the client to the server.
        public func write(_ bytes: [UInt8]) { state.withLock { $0.toServer += bytes } }
        public func write(_ text: String) { write(Array(text.utf8)) }

        /// What the server sent since the last read.
        public func read() -> [UInt8] {
            state.withLock { state in
                defer { state.toClient = [] }
                return state.toClient
            }
        }

        /// The client's side closed (a client killed: the server reads the end of it).
        public func hangUp() { state.withLock { $0.closedByClient = true } }

        public var isClosedByServer: Bool { state.withLock { $0.closedByServer } }

        /// Bytes the client wrote that the server has not read yet.
        public var unread: Int { state.withLock { $0.toServer.count } }

        // MARK: The server's end

        var ready: Poll.Events {
            state.withLock { state in
                var events: Poll.Events = []
                if !state.toServer.isEmpty || state.closedByClient { events.insert(.readable) }
                if state.closedByClient { events.insert(.hangUp) }
                if state.toClient.count < window { events.insert(.writable) }
                return events
            }
        }

        public func receiveSome(into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
            try state.withLock { state -> Int? in
                guard !state.closedByServer else { throw Errno.badDescriptor }
                if state.toServer.isEmpty { return state.closedByClient ? 0 : nil }
                let count = min(buffer.count, state.toServer.count)
                buffer.copyBytes(from: state.toServer[0..<count])
                state.toServer.removeFirst(count)
                return count
            }
        }

        public func sendSome(_ buffer: UnsafeRawBufferPointer) throws -> Int {
            try state.withLock { state -> Int in
                guard !state.closedByServer else { throw Errno.badDescriptor }
                guard !state.closedByClient else { throw Errno.brokenPipe }
                let count = min(buffer.count, max(0, window - state.toClient.count))
                state.toClient += buffer[0..<count]
                return count
            }
        }

        /// The server's side closed.
        public func close() { state.withLock { $0.closedByServer = true } }
    }
}
