import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// The media clock: CLOCK_MONOTONIC nanoseconds. A protocol so tests can drive time.
public protocol MediaClock: Sendable {
    func now() -> Int64
    /// Sleeps until `deadline` (monotonic ns); returns at once if it has passed.
    func sleep(until deadline: Int64)
}

public struct MonotonicClock: MediaClock {
    public init() {}

    /// When this process started, on this clock (before the Swift runtime and main ran).
    public static var processStart: Int64 { onair_process_start_ns() }

    public func now() -> Int64 { monotonicNanoseconds() }

    public func sleep(until deadline: Int64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        // Absolute sleep: no drift from the time spent producing each frame; EINTR resumes.
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of every wait and timeout.
public func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}
