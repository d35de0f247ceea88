import Synchronization

/// The one mutex type (docs/ARCHITECTURE.md, Conventions): the standard library's
/// `Synchronization.Mutex` behind the `withLock` shape onair's call sites use, for state
/// that is not itself the lock's value.
public final class Lock: Sendable {
    private let mutex = Mutex(())

    public init() {}

    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try mutex.withLock { _ throws(E) -> T in try body() }
    }
}
