#if canImport(Glibc)
import Glibc
#endif

/// State that threads share and wait on: a mutex, a condition variable, and the state
/// they guard, reachable only under the mutex (`withLock`), so the compiler says what the
/// lock guards. A thread that waits for the state to change gives `withLock(waitingFor:)`
/// a body that either finishes (`.done`) or asks to wait; the wait happens between two
/// calls of the body, never inside one. Timed waits run on CLOCK_MONOTONIC, so a
/// wall-clock step (NTP on a board without an RTC) neither stretches nor cuts them. The
/// pthread objects live on the heap: they must not move while another thread uses them.
public final class Condition<State>: @unchecked Sendable {  // `state` is touched only under `mutex`
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var state: State

    public init(_ state: State) {
        self.state = state
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

    public func withLock<T, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Under the lock, calls `body` until it is `.done`; after `.wait` it waits for a
    /// broadcast, after `.waitUntil(deadline)` for a broadcast or CLOCK_MONOTONIC to reach
    /// `deadline` (ns). A body past its deadline says `.done`; a spurious wake-up only
    /// calls it again.
    public func withLock<T>(waitingFor body: (inout State) -> ConditionStep<T>) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            switch body(&state) {
            case .done(let value): return value
            case .wait: pthread_cond_wait(condition, mutex)
            case .waitUntil(let deadline):
                var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                pthread_cond_timedwait(condition, mutex, &time)
            }
        }
    }

    /// Under the lock, waits until `ready` gives a value, or CLOCK_MONOTONIC reaches
    /// `deadline` (ns): nil then.
    public func withLock<T>(until deadline: Int64, waitingFor ready: (inout State) -> T?) -> T? {
        withLock(waitingFor: { state -> ConditionStep<T?> in
            if let value = ready(&state) { return .done(value) }
            return monotonicNanoseconds() >= deadline ? .done(nil) : .waitUntil(deadline)
        })
    }

    /// Wakes every thread waiting on the state (call it after changing it).
    public func broadcast() { pthread_cond_broadcast(condition) }
}

/// What a `Condition.withLock(waitingFor:)` body decided.
public enum ConditionStep<T> {
    case done(T)
    /// Nothing to do yet: wait for a broadcast.
    case wait
    /// Nothing to do yet: wait for a broadcast or CLOCK_MONOTONIC at this time (ns).
    case waitUntil(Int64)
}
