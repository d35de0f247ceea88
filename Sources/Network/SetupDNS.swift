import Logging
import System
import Threading

/// The setup network's DNS server (RFC 1035): every name is the board. A phone that joins
/// `onair-…` asks for its makers' check hosts (connectivitycheck.gstatic.com,
/// captive.apple.com, www.msftconnecttest.com) and gets the board's address, so its check
/// lands on the board's captive page and the phone opens the setup page by itself.
public enum SetupDNS {
    /// The answer to one query datagram: the question's name as an A record of `address`
    /// (TTL 0: nothing outlives the setup network in a phone's cache); no record for
    /// another type (NODATA); FORMERR for a malformed question, NOTIMP for another
    /// opcode; nil for what is not a query at all. One pass over the datagram.
    public static func answer(_ query: [UInt8], address: [UInt8]) -> [UInt8]? {
        guard query.count >= 12, query.count <= 512, query[2] & 0x80 == 0 else { return nil }  // a response, or no header
        let opcode = (query[2] >> 3) & 0x0F
        var reply = Array(query[0..<2]) + [0x80 | (query[2] & 0x79) | 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        func refuse(_ code: UInt8) -> [UInt8] {
            reply[3] = code
            return reply
        }
        guard opcode == 0 else { return refuse(4) }
        // One question, no answers or authority; additional records (EDNS's OPT) are
        // allowed and left unanswered.
        guard query[4] == 0, query[5] == 1, query[6] == 0, query[7] == 0, query[8] == 0, query[9] == 0 else { return refuse(1) }
        var index = 12
        var length = 0
        while true {
            guard index < query.count else { return refuse(1) }
            let label = Int(query[index])
            if label == 0 { index += 1; break }
            // A label is at most 63 bytes, a name 255 (RFC 1035 §2.3.4); a compression
            // pointer has nothing before it to point at in a question.
            guard label <= 63 else { return refuse(1) }
            length += label + 1
            guard length <= 255, index + 1 + label <= query.count else { return refuse(1) }
            index += 1 + label
        }
        guard index + 4 <= query.count else { return refuse(1) }
        let type = UInt16(query[index]) << 8 | UInt16(query[index + 1])
        let klass = UInt16(query[index + 2]) << 8 | UInt16(query[index + 3])
        let question = query[12..<(index + 4)]
        reply[5] = 1
        reply += question
        // A (1) or ANY (255), in the Internet class (1) or any (255).
        guard type == 1 || type == 255, klass == 1 || klass == 255, address.count == 4 else { return reply }
        reply[7] = 1
        reply += [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4] + address
        return reply
    }
}

/// `SetupDNS` on a UDP port: one thread, one datagram at a time (each answered in time
/// linear in its 512 bytes at most), nothing kept between them.
public final class SetupDNSServer: Sendable {
    private let port: DatagramPort
    private let address: [UInt8]
    private let stopping = Locked(false)
    private let thread = Locked<WorkerThread?>(nil)

    /// Answers on `port` with `address` (the board's on the setup network).
    public init(port: DatagramPort, address: [UInt8]) {
        self.port = port
        self.address = address
    }

    /// Port 53 of `address` (root's, or CAP_NET_BIND_SERVICE's), or another for a test.
    public convenience init(bound address: [UInt8], port number: UInt16 = 53) throws {
        guard let socketAddress = SocketAddress(bytes: address, port: number) else { throw Errno.invalid }
        try self.init(port: UDPPort(FileDescriptor.datagramSocket(bound: socketAddress)), address: address)
    }

    /// The port's number (for a test that bound port 0).
    public var boundPort: UInt16? { ((port as? UDPPort).flatMap { try? $0.socket.boundAddress() })?.port }

    public func start() {
        let (port, address, stopping) = (self.port, self.address, self.stopping)
        thread.withLock {
            $0 = WorkerThread(name: "onair-dns") {
                var buffer = [UInt8](repeating: 0, count: 1500)
                while !stopping.withLock({ $0 }) {
                    port.wait(timeoutMs: 1000)
                    while let (count, from) = port.receive(into: &buffer) {
                        if let reply = SetupDNS.answer(Array(buffer[0..<count]), address: address) { port.send(reply, to: from) }
                    }
                }
            }
        }
    }

    public func stop() {
        stopping.withLock { $0 = true }
        port.wake()
        thread.withLock { $0 }?.join()
    }
}
