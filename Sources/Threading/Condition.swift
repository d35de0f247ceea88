#if canImport(Glibc)
import Glibc
#endif

/// A mutex with a condition variable, for a thread that waits until another changes some
/// state: `withLock { while !ready { wait() } }`. Timed waits run on CLOCK_MONOTONIC, so a
/// wall-clock step (NTP on a board without an RTC) neither stretches nor cuts them. The
/// pthread objects live on the heap: they must not move while another thread uses them.
public final class Condition: @unchecked Sendable {  // the pthread objects are the synchronisation
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Inside `withLock`: releases the lock until signalled (or woken spuriously: recheck).
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Inside `withLock`: waits until signalled or until CLOCK_MONOTONIC reaches
    /// `deadlineNanoseconds`; false once the deadline has passed.
    @discardableResult
    public func wait(untilNanoseconds deadlineNanoseconds: Int64) -> Bool {
        var deadline = timespec(tv_sec: Int(deadlineNanoseconds / 1_000_000_000), tv_nsec: Int(deadlineNanoseconds % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &deadline) == 0
    }

    public func signal() { pthread_cond_signal(condition) }
    public func broadcast() { pthread_cond_broadcast(condition) }
}
