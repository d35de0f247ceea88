#if canImport(Glibc)
import Glibc
#endif
import Threading

/// The request deadline libmicrohttpd does not have: its timeout counts idle time, so a
/// client that trickles a byte a second holds a connection forever (issue 13, slowloris).
/// Every connection must send a complete request head within `requestSeconds` of opening,
/// or of the previous response; a sweep once a second shuts down those that did not.
/// Shutting down (not closing) leaves the descriptor to libmicrohttpd, which then sees the
/// end of the stream and closes it itself; the table's lock is held across the shutdown,
/// and libmicrohttpd reports a close before it closes the descriptor, so the number cannot
/// have been reused by then.
final class ConnectionGuard: @unchecked Sendable {  // state under `condition`
    struct Entry {
        var fd: Int32
        var deadline: UInt64
        var inRequest: Bool
    }

    let requestNanoseconds: UInt64
    private let condition = Condition()
    private var entries: [UInt: Entry] = [:]
    private var stopping = false
    private var thread: WorkerThread?
    private var expiredCount = 0

    init(requestSeconds: Double) {
        requestNanoseconds = UInt64(requestSeconds * 1e9)
    }

    deinit { stop() }

    static func now() -> UInt64 { UInt64(monotonicNanoseconds()) }

    private func locked<T>(_ body: () -> T) -> T { condition.withLock(body) }

    func opened(_ connection: UInt, fd: Int32) {
        let deadline = Self.now() + requestNanoseconds
        locked { entries[connection] = Entry(fd: fd, deadline: deadline, inRequest: false) }
    }

    func closed(_ connection: UInt) { locked { _ = entries.removeValue(forKey: connection) } }

    /// The request head is complete: the response may take as long as the client reads.
    func requestArrived(_ connection: UInt) { locked { entries[connection]?.inRequest = true } }

    /// The response is sent: the next request head has its own deadline.
    func responded(_ connection: UInt) {
        let deadline = Self.now() + requestNanoseconds
        locked {
            entries[connection]?.inRequest = false
            entries[connection]?.deadline = deadline
        }
    }

    var open: Int { locked { entries.count } }
    /// Connections shut down so far for want of a request head in time.
    var expired: Int { locked { expiredCount } }

    /// Shuts down every connection past its deadline; returns how many.
    @discardableResult
    func sweep(now: UInt64 = ConnectionGuard.now()) -> Int {
        locked {
            var count = 0
            for (key, entry) in entries where !entry.inRequest && entry.deadline <= now {
                shutdown(entry.fd, Int32(SHUT_RDWR))
                entries[key]?.deadline = UInt64.max  // once is enough; the close follows
                count += 1
            }
            expiredCount += count
            return count
        }
    }

    /// Sweeps once a second on a thread of its own until `stop`.
    func start() {
        thread = WorkerThread(name: "onair-http-gate") { [self] in run() }
    }

    private func run() {
        while true {
            let stop = locked { () -> Bool in
                let next = monotonicNanoseconds() + 1_000_000_000
                while !stopping && condition.wait(untilNanoseconds: next) {}
                return stopping
            }
            if stop { return }
            sweep()
        }
    }

    func stop() {
        locked {
            stopping = true
            condition.broadcast()
        }
        thread?.join()
        thread = nil
    }
}
