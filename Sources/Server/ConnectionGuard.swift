import System
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
final class ConnectionGuard: Sendable {
    struct Entry {
        /// libmicrohttpd's socket: shut down here, closed by it.
        var socket: FileDescriptor
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

    /// The connections and what has become of them.
    private struct Table {
        var entries: [UInt: Entry] = [:]
        var stopping = false
        var thread: WorkerThread?
        var expired = 0
        var displaced = 0
        /// Entries not yet shut down.
        var live = 0

        /// The connection to give way, if any may; never `spared` (the newcomer).
        func victim(sparing spared: UInt) -> UInt? {
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

        /// Ends a connection once; libmicrohttpd closes it and says so.
        mutating func shut(_ key: UInt) {
            guard let entry = entries[key], !entry.shut else { return }
            entry.socket.shutdown()
            entries[key]?.shut = true
            entries[key]?.deadline = UInt64.max
            live -= 1
        }
    }

    let requestNanoseconds: UInt64
    /// Connections kept at most; libmicrohttpd admits `reserve` more, to displace from.
    let limit: Int
    static func reserve(for limit: Int) -> Int { max(16, limit / 8) }
    private let table = Condition(Table())

    init(requestSeconds: Double, limit: Int = .max) {
        requestNanoseconds = UInt64(requestSeconds * 1e9)
        self.limit = limit
    }

    deinit { stop() }

    static func now() -> UInt64 { UInt64(monotonicNanoseconds()) }

    func opened(_ connection: UInt, socket: FileDescriptor) {
        let now = Self.now()
        table.withLock { [requestNanoseconds, limit] table in
            table.entries[connection] = Entry(socket: socket, deadline: now + requestNanoseconds, inRequest: false, since: now)
            table.live += 1
            if table.live > limit, let victim = table.victim(sparing: connection) {
                table.shut(victim)
                table.displaced += 1
            }
        }
    }

    func closed(_ connection: UInt) {
        table.withLock { table in
            if let entry = table.entries.removeValue(forKey: connection), !entry.shut { table.live -= 1 }
        }
    }

    /// The request head is complete: the response may take as long as the client reads.
    func requestArrived(_ connection: UInt) { table.withLock { $0.entries[connection]?.inRequest = true } }

    /// Its request is held (a blocking playlist reload, a hinted part): displaceable.
    func held(_ connection: UInt) {
        let now = Self.now()
        table.withLock { table in
            table.entries[connection]?.held = true
            table.entries[connection]?.since = now
        }
    }

    /// The response is sent: the next request head has its own deadline.
    func responded(_ connection: UInt) {
        let now = Self.now()
        table.withLock { [requestNanoseconds] table in
            table.entries[connection]?.inRequest = false
            table.entries[connection]?.held = false
            table.entries[connection]?.served += 1
            table.entries[connection]?.since = now
            table.entries[connection]?.deadline = now + requestNanoseconds
        }
    }

    var open: Int { table.withLock { $0.live } }
    /// Connections shut down so far for want of a request head in time.
    var expired: Int { table.withLock { $0.expired } }
    /// Connections that gave way to a newcomer at the limit.
    var displaced: Int { table.withLock { $0.displaced } }

    /// Shuts down every connection past its deadline; returns how many.
    @discardableResult
    func sweep(now: UInt64 = ConnectionGuard.now()) -> Int {
        table.withLock { table in
            let due = table.entries.filter { !$0.value.inRequest && !$0.value.shut && $0.value.deadline <= now }.map(\.key)
            for key in due { table.shut(key) }  // once is enough; the close follows
            table.expired += due.count
            return due.count
        }
    }

    /// Sweeps once a second on a thread of its own until `stop`.
    func start() {
        let thread = WorkerThread(name: "onair-http-gate") { [self] in run() }
        table.withLock { $0.thread = thread }
    }

    private func run() {
        while true {
            let next = monotonicNanoseconds() + 1_000_000_000
            let stop = table.withLock(until: next, waitingFor: { $0.stopping ? true : nil }) ?? false
            if stop { return }
            sweep()
        }
    }

    func stop() {
        let thread = table.withLock { table -> WorkerThread? in
            table.stopping = true
            defer { table.thread = nil }
            return table.thread
        }
        table.broadcast()
        thread?.join()
    }
}
