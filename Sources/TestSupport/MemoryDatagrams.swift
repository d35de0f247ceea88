import System
import Threading

/// A UDP port in memory, for a server on virtual time: the test delivers datagrams from an
/// address of its choosing (and, for a multicast port, to a local address of its choosing)
/// and takes what the server sent; nothing is bound, and `wait` returns at once (the test
/// runs the server's turns itself).
public final class MemoryDatagrams: MulticastPort {
    public struct Sent: Sendable {
        public var bytes: [UInt8]
        public var to: SocketAddress
        /// The interface a multicast datagram was sent out of; nil for one sent as unicast.
        public var from: [UInt8]?
    }

    private struct State {
        var incoming: [(bytes: [UInt8], from: SocketAddress, local: [UInt8])] = []
        var outgoing: [Sent] = []
        var joined: [[UInt8]] = []
    }

    private let state = Locked(State())

    public init() {}

    /// A datagram for the server, as if from `source`, come in on the local address `local`.
    public func deliver(_ datagram: [UInt8], from source: SocketAddress, local: [UInt8] = [127, 0, 0, 1]) {
        state.withLock { $0.incoming.append((datagram, source, local)) }
    }

    /// What the server sent since the last call, in order.
    public func sent() -> [Sent] {
        state.withLock { state in
            defer { state.outgoing = [] }
            return state.outgoing
        }
    }

    /// The interfaces the server joined a group on, in order.
    public var joined: [[UInt8]] { state.withLock { $0.joined } }

    public func wait(timeoutMs: Int32) {}

    public func receive(into buffer: inout [UInt8]) -> (count: Int, from: SocketAddress)? {
        receiveWithLocal(into: &buffer).map { ($0.count, $0.from) }
    }

    public func receiveWithLocal(into buffer: inout [UInt8]) -> (count: Int, from: SocketAddress, local: [UInt8])? {
        guard let datagram = state.withLock({ $0.incoming.isEmpty ? nil : $0.incoming.removeFirst() }) else { return nil }
        // As recvfrom(2): what does not fit the buffer is lost.
        let count = min(datagram.bytes.count, buffer.count)
        buffer.replaceSubrange(0..<count, with: datagram.bytes[0..<count])
        return (count, datagram.from, datagram.local)
    }

    @discardableResult
    public func send(_ datagram: [UInt8], to address: SocketAddress) -> Bool {
        state.withLock { $0.outgoing.append(Sent(bytes: datagram, to: address, from: nil)) }
        return true
    }

    public func join(group: [UInt8], interface: [UInt8]) { state.withLock { $0.joined.append(interface) } }

    @discardableResult
    public func send(_ datagram: [UInt8], to group: SocketAddress, from interface: [UInt8]) -> Bool {
        state.withLock { $0.outgoing.append(Sent(bytes: datagram, to: group, from: interface)) }
        return true
    }

    public func wake() {}
}
