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

/// The two clocks a real-time server reads: CLOCK_MONOTONIC for its timers and timeouts,
/// and the wall clock for the NTP times RTCP and WS-Discovery carry. Given to the server,
/// so its tests run on virtual time (a manual clock moved, then the server woken) and wait
/// for nothing.
public struct ServerClock: Sendable {
    public var monotonic: any MediaClock
    /// CLOCK_REALTIME − CLOCK_MONOTONIC now, in ns.
    public var wallOffset: @Sendable () -> Int64

    public init(monotonic: any MediaClock, wallOffset: @escaping @Sendable () -> Int64) {
        self.monotonic = monotonic
        self.wallOffset = wallOffset
    }

    /// The kernel's clocks.
    public static var system: ServerClock {
        ServerClock(monotonic: MonotonicClock(), wallOffset: { KernelClock.realtime() - KernelClock.monotonic() })
    }

    /// Monotonic ns.
    public func now() -> Int64 { monotonic.now() }
    /// Wall-clock ns since 1970 (Unix time).
    public func wall() -> Int64 { monotonic.now() + wallOffset() }
}
