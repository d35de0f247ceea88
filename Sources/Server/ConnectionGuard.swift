#if canImport(Glibc)
import Glibc
#endif
import Threading

/// The request deadline libmicrohttpd does not have: its timeout counts idle time, so a
/// client that trickles a byte a second holds a connection forever (issue 13, slowloris).
/// Every connection must send a complete request head within `requestSeconds` of opening,
/// or of the previous response; a sweep once a second shuts down those that did not.
///
/// And the displacement libmicrohttpd does not do (issue 29): at its connection limit it
/// refuses newcomers, so 2,000 hostile sockets from 100 addresses (32 per-address limits
/// fill 1,024) kept viewers out. libmicrohttpd's own limit is set `reserve` above
/// `limit`; past `limit`, each new connection displaces the one that has done least: one
/// that never completed a request head first, then an idle keep-alive, then a held
/// request (last: a suspended connection leaves libmicrohttpd's count only once it is
/// resumed), oldest first. A connection busy answering a request is never displaced.
///
/// Shutting down (not closing) leaves the descriptor to libmicrohttpd, which then sees the
/// end of the stream and closes it itself; the table's lock is held across the shutdown,
/// and libmicrohttpd reports a close before it closes the descriptor, so the number cannot
/// have been reused by then.
final class ConnectionGuard: @unchecked Sendable {  // state under `condition`
    struct Entry {
        var fd: Int32
        var deadline: UInt64
        var inRequest: Bool
        /// When it opened, or was last answered (or held): how long it has done nothing new.
        var since: UInt64
        /// Responses sent on it: 0 means its first request head never came.
        var served = 0
        /// A low-latency request suspended until its part comes.
        var held = false
        /// Shut down already; gone once libmicrohttpd reports the close.
        var shut = false
    }

    let requestNanoseconds: UInt64
    /// Connections kept at most; libmicrohttpd admits `reserve` more, to displace from.
    let limit: Int
    static func reserve(for limit: Int) -> Int { max(16, limit / 8) }
    private let condition = Condition()
    private var entries: [UInt: Entry] = [:]
    private var stopping = false
    private var thread: WorkerThread?
    private var expiredCount = 0
    private var displacedCount = 0
    /// Entries not yet shut down.
    private var live = 0

    init(requestSeconds: Double, limit: Int = .max) {
        requestNanoseconds = UInt64(requestSeconds * 1e9)
        self.limit = limit
    }

    deinit { stop() }

    static func now() -> UInt64 { UInt64(monotonicNanoseconds()) }

    private func locked<T>(_ body: () -> T) -> T { condition.withLock(body) }

    func opened(_ connection: UInt, fd: Int32) {
        let now = Self.now()
        locked {
            entries[connection] = Entry(fd: fd, deadline: now + requestNanoseconds, inRequest: false, since: now)
            live += 1
            if live > limit, let victim = victim(sparing: connection) {
                shut(victim)
                displacedCount += 1
            }
        }
    }

    func closed(_ connection: UInt) {
        locked {
            if let entry = entries.removeValue(forKey: connection), !entry.shut { live -= 1 }
        }
    }

    /// The request head is complete: the response may take as long as the client reads.
    func requestArrived(_ connection: UInt) { locked { entries[connection]?.inRequest = true } }

    /// Its request is held (a blocking playlist reload, a hinted part): displaceable.
    func held(_ connection: UInt) {
        let now = Self.now()
        locked {
            entries[connection]?.held = true
            entries[connection]?.since = now
        }
    }

    /// The response is sent: the next request head has its own deadline.
    func responded(_ connection: UInt) {
        let now = Self.now()
        locked {
            entries[connection]?.inRequest = false
            entries[connection]?.held = false
            entries[connection]?.served += 1
            entries[connection]?.since = now
            entries[connection]?.deadline = now + requestNanoseconds
        }
    }

    /// Inside `locked`: the connection to give way, if any may; never `spared` (the newcomer).
    private func victim(sparing spared: UInt) -> UInt? {
        var best: (key: UInt, rank: Int, since: UInt64)?
        for (key, entry) in entries where key != spared && !entry.shut {
            let rank: Int
            if !entry.inRequest && entry.served == 0 { rank = 0 }   // its first head is not in
            else if !entry.inRequest { rank = 1 }                  // idle between requests
            else if entry.held { rank = 2 }                        // held: libmicrohttpd frees it
            else { continue }                                        // only when it resumes; being answered
            if best.map({ rank < $0.rank || rank == $0.rank && entry.since < $0.since }) ?? true { best = (key, rank, entry.since) }
        }
        return best?.key
    }

    /// Inside `locked`: ends a connection once; libmicrohttpd closes it and says so.
    private func shut(_ key: UInt) {
        guard let entry = entries[key], !entry.shut else { return }
        shutdown(entry.fd, Int32(SHUT_RDWR))
        entries[key]?.shut = true
        entries[key]?.deadline = UInt64.max
        live -= 1
    }

    var open: Int { locked { live } }
    /// Connections shut down so far for want of a request head in time.
    var expired: Int { locked { expiredCount } }
    /// Connections that gave way to a newcomer at the limit.
    var displaced: Int { locked { displacedCount } }

    /// Shuts down every connection past its deadline; returns how many.
    @discardableResult
    func sweep(now: UInt64 = ConnectionGuard.now()) -> Int {
        locked {
            var count = 0
            for (key, entry) in entries where !entry.inRequest && !entry.shut && entry.deadline <= now {
                shut(key)  // once is enough; the close follows
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
