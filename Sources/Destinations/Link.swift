import COpenSSL
import System

/// One connection to a destination's server: TCP, or TLS over it (rtmps://) with the
/// server's certificate checked against its name. Nothing here waits: the destination's
/// one poll(2) (`wait`) bounds every step, and its wake pipe ends a wait at once, so
/// stopping never waits on a server.
final class Link {
    let socket: FileDescriptor
    private var tls: OpaquePointer?
    /// TLS asked to write before it can read (a renegotiation, a key update) or the
    /// reverse: the next wait watches for that too.
    private var tlsWants: Poll.Events = []
    /// The length of a TLS write that has to be repeated (OpenSSL wants the same length).
    private var pendingWrite = 0
    /// The kernel holds at most twice this for a destination: 512 KiB, 20 Mbit/s at a
    /// 200 ms round trip, and a few seconds of a live stream, so a server that takes the
    /// stream too slowly is seen (Broadcast drops to the next IDR) within seconds.
    static let sendBuffer: Int32 = 256 << 10

    private init(socket: FileDescriptor, tls: OpaquePointer?) {
        self.socket = socket
        self.tls = tls
    }

    deinit { close() }

    /// Resolves `host`, connects to its first address that answers, and for `secure`
    /// makes the TLS handshake, all before `deadline` (CLOCK_MONOTONIC ns). `wake`'s pipe
    /// ends it early when `stopped` says so.
    static func open(host: String, port: UInt16, secure: Bool, deadline: Int64, wake: WakePipe,
                     stopped: () -> Bool) throws(LinkError) -> Link {
        let addresses: [SocketAddress]
        do { addresses = try SocketAddress.resolve(host, port: port) } catch { throw .failed(error.description) }
        var last = "no address"
        for address in addresses {
            if stopped() { throw .stopped }
            let socket: FileDescriptor
            do { socket = try FileDescriptor.connecting(to: address, sendBuffer: sendBuffer) } catch {
                last = "cannot connect to \(shown(address)): \(error)"
                continue
            }
            let ready = try waitFor(socket, .writable, deadline: deadline, wake: wake, stopped: stopped)
            guard ready else { throw .failed("timed out connecting to \(shown(address))") }
            if let error = socket.connectResult() {
                last = "cannot connect to \(shown(address)): \(error)"
                continue
            }
            let link = Link(socket: socket, tls: nil)
            if secure { try link.handshake(host: host, deadline: deadline, wake: wake, stopped: stopped) }
            return link
        }
        throw .failed(last)
    }

    private static func shown(_ address: SocketAddress) -> String {
        address.isIPv6 ? "[\(address.host)]:\(address.port)" : "\(address.host):\(address.port)"
    }

    /// Waits until `socket` has `events` (true), the deadline passes (false), or the
    /// destination is stopped (throws).
    private static func waitFor(_ socket: FileDescriptor, _ events: Poll.Events, deadline: Int64, wake: WakePipe,
                                stopped: () -> Bool) throws(LinkError) -> Bool {
        while true {
            if stopped() { throw .stopped }
            let left = deadline - KernelClock.monotonic()
            guard left > 0 else { return false }
            let ready = (try? Poll.wait([(socket, events), (wake.read, .readable)], timeoutMs: Int32(min(left / 1_000_000 + 1, 1000)))) ?? [[], []]
            wake.drain()
            if !ready[0].isEmpty { return true }
        }
    }

    private func handshake(host: String, deadline: Int64, wake: WakePipe, stopped: () -> Bool) throws(LinkError) {
        let literal = SocketAddress(numeric: host, port: 0, ipv6: host.contains(":")) != nil
        guard let tls = onair_tls_client_new(socket.rawValue, host, literal ? 1 : 0) else { throw .failed("TLS: cannot set up a client") }
        self.tls = tls
        while true {
            let result = onair_tls_handshake(tls)
            if result == 1 { return }
            let events: Poll.Events
            switch Int(result) {
            case ONAIR_TLS_WANT_READ: events = .readable
            case ONAIR_TLS_WANT_WRITE: events = .writable
            default: throw .failed("TLS with \(host): \(failure())")
            }
            guard try Self.waitFor(socket, events, deadline: deadline, wake: wake, stopped: stopped) else {
                throw .failed("timed out in the TLS handshake with \(host)")
            }
        }
    }

    private func failure() -> String {
        guard let tls else { return "" }
        var text = [CChar](repeating: 0, count: 256)
        onair_tls_failure(tls, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// What the connection must be watched for besides reading: writing while `sending`,
    /// and whatever TLS asked for.
    func events(sending: Bool) -> Poll.Events {
        var events: Poll.Events = [.readable]
        if sending { events.insert(.writable) }
        return events.union(tlsWants)
    }

    /// What has come: bytes (empty: nothing now). Throws when the server closed or the
    /// connection failed.
    func receive() throws(LinkError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        guard let tls else {
            let count: Int?
            do { count = try buffer.withUnsafeMutableBytes { try socket.receiveSome(into: $0) } } catch { throw .failed("the connection failed: \(error)") }
            guard let count else { return [] }
            guard count > 0 else { throw .failed("the server closed the connection") }
            return Array(buffer.prefix(count))
        }
        tlsWants = []
        let result = buffer.withUnsafeMutableBytes { onair_tls_read(tls, $0.baseAddress, Int32($0.count)) }
        switch Int(result) {
        case 1...: return Array(buffer.prefix(Int(result)))
        case 0: throw .failed("the server closed the connection")
        case ONAIR_TLS_WANT_READ: return []
        case ONAIR_TLS_WANT_WRITE: tlsWants = .writable; return []
        default: throw .failed("TLS: \(failure())")
        }
    }

    /// Sends what the connection takes now of `bytes` (a prefix): how many went.
    func send(_ bytes: ArraySlice<UInt8>) throws(LinkError) -> Int {
        guard !bytes.isEmpty else { return 0 }
        guard let tls else {
            do { return try bytes.withUnsafeBytes { try socket.sendSome($0) } } catch { throw .failed("the connection failed: \(error)") }
        }
        tlsWants = []
        // A write OpenSSL could not finish is repeated with at least its length.
        let length = max(pendingWrite, min(bytes.count, 16_384))
        let result = bytes.withUnsafeBytes { onair_tls_write(tls, $0.baseAddress, Int32(min(length, $0.count))) }
        switch Int(result) {
        case 1...: pendingWrite = 0; return Int(result)
        case ONAIR_TLS_WANT_WRITE: pendingWrite = length; return 0
        case ONAIR_TLS_WANT_READ: pendingWrite = length; tlsWants = .readable; return 0
        case 0: throw .failed("the server closed the connection")
        default: throw .failed("TLS: \(failure())")
        }
    }

    /// Sends all of `bytes` before `deadline`, or as much as goes (the last words of a
    /// connection: FCUnpublish and deleteStream).
    func flush(_ bytes: [UInt8], deadline: Int64) {
        var rest = bytes[...]
        while !rest.isEmpty, KernelClock.monotonic() < deadline {
            guard let sent = try? send(rest) else { return }
            rest = rest.dropFirst(sent)
            if sent == 0 { _ = try? Poll.wait(socket, for: events(sending: true), timeoutMs: 50) }
        }
    }

    func close() {
        if let tls { onair_tls_close(tls) }
        tls = nil
        socket.shutdown()
    }
}

/// Why a connection to a destination failed, in words (never the key: it is not part of
/// a connection).
enum LinkError: Error, CustomStringConvertible {
    case failed(String)
    /// The destination was stopped while it waited.
    case stopped

    var description: String {
        switch self {
        case .failed(let text): return text
        case .stopped: return "stopped"
        }
    }
}
