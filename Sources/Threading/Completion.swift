/// A one-shot signal between threads: fired once, waited for by any number.
public final class Completion: Sendable {
    private let state = Condition()
    private nonisolated(unsafe) var fired = false

    public init() {}

    public func signal() {
        state.withLock {
            fired = true
            state.broadcast()
        }
    }

    public var hasFired: Bool { state.withLock { fired } }

    public func wait() {
        state.withLock { while !fired { state.wait() } }
    }

    /// Waits at most `seconds` (CLOCK_MONOTONIC); true if it fired.
    public func wait(seconds: Double) -> Bool {
        let deadline = monotonicNanoseconds() + Int64(seconds * 1e9)
        return state.withLock {
            while !fired { if !state.wait(untilNanoseconds: deadline) { break } }
            return fired
        }
    }
}
