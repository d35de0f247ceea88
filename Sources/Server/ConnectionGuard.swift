#if canImport(Glibc)
import Glibc
#endif

/// The request deadline libmicrohttpd does not have: its timeout counts idle time, so a
/// client that trickles a byte a second holds a connection forever (issue 13, slowloris).
/// Every connection must send a complete request head within `requestSeconds` of opening,
/// or of the previous response; a sweep once a second shuts down those that did not.
/// Shutting down (not closing) leaves the descriptor to libmicrohttpd, which then sees the
/// end of the stream and closes it itself; the table's lock is held across the shutdown,
/// and libmicrohttpd reports a close before it closes the descriptor, so the number cannot
/// have been reused by then.
final class ConnectionGuard: @unchecked Sendable {  // state under `mutex`
    struct Entry {
        var fd: Int32
        var deadline: UInt64
        var inRequest: Bool
    }

    let requestNanoseconds: UInt64
    // Heap storage: a pthread object must not move, and Swift does not promise a stored
    // property's address.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var entries: [UInt: Entry] = [:]
    private var stopping = false
    private var thread: pthread_t?
    private(set) var expired = 0

    init(requestSeconds: Double) {
        requestNanoseconds = UInt64(requestSeconds * 1e9)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(wake, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        stop()
        pthread_cond_destroy(wake)
        pthread_mutex_destroy(mutex)
        wake.deallocate()
        mutex.deallocate()
    }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

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
            expired += count
            return count
        }
    }

    /// Sweeps once a second on a thread of its own until `stop`.
    func start() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var handle = pthread_t()
        guard pthread_create(&handle, nil, { raw in
            let guardian = Unmanaged<ConnectionGuard>.fromOpaque(raw!).takeRetainedValue()
            guardian.run()
            return nil
        }, box) == 0 else {
            Unmanaged<ConnectionGuard>.fromOpaque(box).release()
            return
        }
        thread = handle
    }

    private func run() {
        pthread_mutex_lock(mutex)
        while !stopping {
            let next = Self.now() + 1_000_000_000
            var deadline = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
            pthread_cond_timedwait(wake, mutex, &deadline)
            if stopping { break }
            pthread_mutex_unlock(mutex)
            sweep()
            pthread_mutex_lock(mutex)
        }
        pthread_mutex_unlock(mutex)
    }

    func stop() {
        guard let thread = locked({ () -> pthread_t? in
            stopping = true
            pthread_cond_signal(wake)
            defer { self.thread = nil }
            return self.thread
        }) else { return }
        pthread_join(thread, nil)
    }
}
