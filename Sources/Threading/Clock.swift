import System

/// The media clock: CLOCK_MONOTONIC nanoseconds. A protocol so tests can drive time.
public protocol MediaClock: Sendable {
    func now() -> Int64
    /// Sleeps until `deadline` (monotonic ns); returns at once if it has passed.
    func sleep(until deadline: Int64)
}

public struct MonotonicClock: MediaClock {
    public init() {}

    /// When this process started, on this clock (before the Swift runtime and main ran).
    public static var processStart: Int64 { KernelClock.processStart }

    public func now() -> Int64 { monotonicNanoseconds() }

    public func sleep(until deadline: Int64) { KernelClock.sleepMonotonic(until: deadline) }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of every wait and timeout.
public func monotonicNanoseconds() -> Int64 { KernelClock.monotonic() }
