import Synchronization

/// A mutex around an operation rather than data: one at a time through it (the journal
/// writes after a playlist is confirmed, the storage keeper's pruning). State that
/// threads share is kept in `Locked<State>` or `Condition<State>` instead, so the compiler
/// says what guards it (docs/ARCHITECTURE.md, Conventions).
public final class Lock: Sendable {
    private let mutex = Mutex(())

    public init() {}

    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try mutex.withLock { _ throws(E) -> T in try body() }
    }
}
