import System
import Threading

/// A UDP port in memory, for a server on virtual time: the test delivers datagrams from an
/// address of its choosing and takes what the server sent; nothing is bound, and `wait`
/// returns at once (the test runs the server's turns itself).
public final class MemoryDatagrams: DatagramPort {
    private let state = Locked<(incoming: [([UInt8], SocketAddress)], outgoing: [([UInt8], SocketAddress)])>(([], []))

    public init() {}

    /// A datagram for the server, as if from `source`.
    public func deliver(_ datagram: [UInt8], from source: SocketAddress) { state.withLock { $0.incoming.append((datagram, source)) } }

    /// What the server sent since the last call, in order.
    public func sent() -> [(bytes: [UInt8], to: SocketAddress)] {
        state.withLock { state in
            defer { state.outgoing = [] }
            return state.outgoing.map { ($0.0, $0.1) }
        }
    }

    public func wait(timeoutMs: Int32) {}

    public func receive(into buffer: inout [UInt8]) -> (count: Int, from: SocketAddress)? {
        guard let (datagram, source) = state.withLock({ $0.incoming.isEmpty ? nil : $0.incoming.removeFirst() }) else { return nil }
        // As recvfrom(2): what does not fit the buffer is lost.
        let count = min(datagram.count, buffer.count)
        buffer.replaceSubrange(0..<count, with: datagram[0..<count])
        return (count, source)
    }

    @discardableResult
    public func send(_ datagram: [UInt8], to address: SocketAddress) -> Bool {
        state.withLock { $0.outgoing.append((datagram, address)) }
        return true
    }

    public func wake() {}
}
