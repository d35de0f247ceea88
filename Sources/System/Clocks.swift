#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// The kernel's clocks (clock_gettime(2), clock_nanosleep(2), adjtimex(2)).
public enum KernelClock {
    /// CLOCK_MONOTONIC in nanoseconds: never steps, counts from boot.
    public static func monotonic() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// CLOCK_REALTIME in ms since the Unix epoch: whatever the board believes the date is.
    public static func realtimeMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// CLOCK_REALTIME in ns since the Unix epoch.
    public static func realtime() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// Sleeps until `deadline` on CLOCK_MONOTONIC (absolute, so no drift from the time spent
    /// before the call); a signal does not cut it short.
    public static func sleepMonotonic(until deadline: Int64) {
        guard deadline > 0 else { return }
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    /// An NTP daemon disciplines CLOCK_REALTIME (adjtimex(2): STA_UNSYNC clear).
    public static var isSynchronized: Bool { onair_clock_synchronized() == 1 }

    /// When this process started, on CLOCK_MONOTONIC (a constructor's reading, before the
    /// Swift runtime and main ran).
    public static var processStart: Int64 { onair_process_start_ns() }
}
