import Synchronization

/// State that threads share, inside the one mutex that guards it (the standard library's
/// `Synchronization.Mutex`): the only way to the state is `withLock`, so the compiler,
/// not a comment, says what the lock guards (docs/ARCHITECTURE.md, Conventions). For
/// state a thread also waits on, `Condition<State>`. (A `Mutex<State>` itself would say
/// it too, but Swift 6.0.3's region checker refuses to pass its `sending` values through
/// a wrapper.)
public final class Locked<State>: @unchecked Sendable {  // `state` is touched only inside `mutex`
    private let mutex = Mutex(())
    private var state: State

    public init(_ state: State) { self.state = state }

    public func withLock<T, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        try mutex.withLock { _ throws(E) -> T in try body(&state) }
    }
}
