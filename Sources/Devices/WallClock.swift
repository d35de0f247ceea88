import Threading
#if canImport(Glibc)
import Glibc
#endif

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
