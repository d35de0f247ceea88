/// RTP timestamps from the capture clock (RFC 3550 §5.1: "derived from a clock that
/// increments monotonically and linearly in time"): CLOCK_MONOTONIC nanoseconds at a
/// media clock's rate, modulo 2³². Every real-time sender takes its timestamps and its
/// sender reports' RTP times from here, so sound and picture share one time base.
public enum RTPClock {
    /// `nanoseconds` at `rate` Hz, rounded to the nearest tick (a stream's samples, a
    /// whole number of ticks apart, then stay exactly that far apart), wrapping; split so
    /// no product overflows whatever the time.
    public static func timestamp(_ nanoseconds: Int64, rate: Int64) -> UInt32 {
        let rate = max(1, rate)
        // Floored, so a time before the clock's zero (a test's) rounds the same way.
        var whole = nanoseconds / 1_000_000_000
        var rest = nanoseconds % 1_000_000_000
        if rest < 0 {
            whole -= 1
            rest += 1_000_000_000
        }
        // rest * rate stays below 1e9 * 2^31 for any clock rate RTP uses (< 2^31).
        let ticks = whole &* rate &+ (rest * min(rate, 1 << 31) + 500_000_000) / 1_000_000_000
        return UInt32(truncatingIfNeeded: ticks)
    }

    /// The 90 kHz clock of video (RFC 6184 §5.1).
    public static func video(_ nanoseconds: Int64) -> UInt32 { timestamp(nanoseconds, rate: 90_000) }
}
