import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Threading

/// A TCP proxy on a free loopback port in front of `upstream`, whose faults a test sets
/// at run time: `pass` forwards both ways; `stall` stops reading what the client sends
/// (a server that accepts and never reads: the client's socket fills); `cut()` ends every
/// connection now (a server that closes mid-stream).
public final class TCPFaultProxy: @unchecked Sendable {
    public enum Mode: Sendable { case pass, stall }
    public private(set) var port: UInt16 = 0
    private let upstream: UInt16
    private let listener: Int32
    private struct State {
        var mode = Mode.pass
        var sockets: [Int32] = []
        var threads: [WorkerThread] = []
        var connections = 0
        var stopped = false
    }
    private let state = Locked(State())

    public init(upstream: UInt16) throws {
        self.upstream = upstream
        // Small windows (inherited by what it accepts): a stall fills the client's socket
        // within a second, as a server across the world would, not after megabytes.
        (listener, port) = try RecordingServer.listen(receiveBuffer: 16_384)
        let acceptor = WorkerThread(name: "test-tcp-proxy") { [self] in acceptLoop() }
        state.withLock { $0.threads.append(acceptor) }
    }

    public var mode: Mode {
        get { state.withLock { $0.mode } }
        set { state.withLock { $0.mode = newValue } }
    }

    /// Connections taken so far.
    public var connections: Int { state.withLock { $0.connections } }

    /// Ends every connection open now.
    public func cut() {
        for socket in state.withLock({ $0.sockets }) { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    public func stop() {
        let threads = state.withLock { state -> [WorkerThread] in
            state.stopped = true
            return state.threads
        }
        cut()
        shutdown(listener, Int32(SHUT_RDWR))
        for thread in threads { thread.join() }
        close(listener)
        for socket in state.withLock({ $0.sockets }) { close(socket) }
    }

    private static func loopback(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 { return }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(upstream)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            let admitted = state.withLock { state -> Bool in
                guard !state.stopped, connected else { return false }
                state.connections += 1
                state.sockets += [client, server]
                state.threads.append(WorkerThread(name: "test-proxy-up") { [self] in pump(from: client, to: server, stallable: true) })
                state.threads.append(WorkerThread(name: "test-proxy-down") { [self] in pump(from: server, to: client, stallable: false) })
                return true
            }
            if !admitted { close(client); close(server) }
        }
    }

    private func pump(from source: Int32, to target: Int32, stallable: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if stallable {
                // Stalled: nothing is read, so the client's writes fill its socket.
                while state.withLock({ $0.mode == .stall && !$0.stopped }) {
                    var poll = pollfd(fd: source, events: 0x2000 /* POLLRDHUP */, revents: 0)
                    if Glibc.poll(&poll, 1, 50) > 0, poll.revents & (0x2000 | Int16(POLLHUP | POLLERR)) != 0 { break }
                }
            }
            let count = recv(source, &buffer, buffer.count, 0)
            guard count > 0, send(target, buffer, count, Int32(MSG_NOSIGNAL)) == count else {
                shutdown(source, Int32(SHUT_RDWR))
                shutdown(target, Int32(SHUT_RDWR))
                return
            }
        }
    }
}
