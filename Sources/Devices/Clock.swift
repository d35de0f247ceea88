import CLinux
import Threading
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

/// Wall-clock milliseconds since the Unix epoch (for PROGRAM-DATE-TIME and stream ids).
public func wallClockMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// The wall clock when a frame was captured (PROGRAM-DATE-TIME): now, stepped back over
/// the time the frame spent in queues since `captureTime` (monotonic ns; with --pace fast
/// frames run ahead of the clock, and the step back is none).
public func wallClockMilliseconds(atCapture captureTime: Int64, clock: MediaClock = MonotonicClock()) -> Int64 {
    wallClockMilliseconds() - max(0, clock.now() - captureTime) / 1_000_000
}
