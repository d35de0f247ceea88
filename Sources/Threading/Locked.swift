import Synchronization

/// State that threads share, inside the one mutex that guards it (the standard library's
/// `Synchronization.Mutex`): the only way to the state is `withLock`, so the compiler,
/// not a comment, says what the lock guards (docs/ARCHITECTURE.md, Conventions). For
/// state a thread also waits on, `Condition<State>`.
public final class Locked<State>: Sendable {
    private let mutex: Mutex<State>

    public init(_ state: sending State) { mutex = Mutex(state) }

    public func withLock<T, E: Error>(_ body: (inout sending State) throws(E) -> sending T) throws(E) -> sending T {
        try mutex.withLock(body)
    }
}
