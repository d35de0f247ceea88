import Synchronization

/// State that threads share, inside the one mutex that guards it (the standard library's
/// `Synchronization.Mutex`): the only way to the state is `withLock`, so the compiler,
/// not a comment, says what the lock guards (docs/ARCHITECTURE.md, Conventions). For
/// state a thread also waits on, `Condition<State>`. (A `Mutex<State>` itself would say
/// it too, but Swift 6.0.3's region checker refuses to pass its `sending` values through
/// a wrapper.) It is Sendable only where its state is (as swift-nio's `NIOLockedValueBox`):
/// a lock makes access exclusive, not a thread-bound value safe to touch from another thread.
public final class Locked<State> {
    private let lock = Lock()
    private var state: State

    public init(_ state: State) { self.state = state }

    public func withLock<T, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        try lock.withLock { () throws(E) -> T in try body(&state) }
    }
}

extension Locked: @unchecked Sendable where State: Sendable {}  // `state` is touched only inside `mutex`
