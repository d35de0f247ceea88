/// A one-shot signal between threads: fired once, waited for by any number.
public final class Completion: Sendable {
    private let fired = Condition(false)

    public init() {}

    public func signal() {
        fired.withLock { $0 = true }
        fired.broadcast()
    }

    public var hasFired: Bool { fired.withLock { $0 } }

    public func wait() {
        fired.withLock(waitingFor: { $0 ? .done(()) : .wait })
    }

    /// Waits at most `seconds` (CLOCK_MONOTONIC); true if it fired.
    public func wait(seconds: Double) -> Bool {
        let deadline = monotonicNanoseconds() + Int64(seconds * 1e9)
        return fired.withLock(until: deadline, waitingFor: { $0 ? true : nil }) ?? false
    }
}
