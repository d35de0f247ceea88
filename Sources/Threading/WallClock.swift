import System

/// One look at the wall clock, with whether anything vouches for it. A board without a
/// real-time clock starts at whatever its image last knew; until NTP answers, the date
/// is a guess, and onair dates nothing with it (no PROGRAM-DATE-TIME, no dated ids, no
/// retention by age). Every wait and timeout uses `MediaClock` (CLOCK_MONOTONIC), never
/// this.
public struct ClockReading: Sendable, Equatable {
    /// CLOCK_REALTIME, ms since the Unix epoch.
    public var wallMs: Int64
    /// CLOCK_MONOTONIC ns, read at the same moment.
    public var monotonic: Int64
    /// An NTP daemon disciplines the clock (the kernel's STA_UNSYNC is clear).
    public var synchronized: Bool
    /// Who vouches for it: "systemd-timesyncd", "chrony" or "ntp" when synchronised,
    /// "none" when not.
    public var source: String

    public init(wallMs: Int64, monotonic: Int64, synchronized: Bool, source: String) {
        self.wallMs = wallMs
        self.monotonic = monotonic
        self.synchronized = synchronized
        self.source = source
    }

    /// Wall minus monotonic, in ms: constant while the wall clock runs freely or is
    /// slewed, changed by exactly the step when it is stepped.
    public var offsetMs: Int64 { wallMs - monotonic / 1_000_000 }
}

/// The wall clock and its trust; a protocol so tests can step it.
public protocol WallClock: Sendable {
    func read() -> ClockReading
}

/// The kernel's clock: CLOCK_REALTIME, trusted when adjtimex(2) says an NTP daemon
/// synchronised it.
public struct SystemWallClock: WallClock {
    public init() {}

    public func read() -> ClockReading {
        let monotonic = monotonicNanoseconds()
        let wallMs = KernelClock.realtimeMilliseconds()
        let synchronized = KernelClock.isSynchronized
        return ClockReading(wallMs: wallMs, monotonic: monotonic,
                            synchronized: synchronized, source: synchronized ? Self.daemon() : "none")
    }

    /// Which daemon synchronised the clock, from the files each keeps in /run.
    static func daemon() -> String {
        // systemd-timesyncd touches this file at its first synchronisation (timesyncd(8)).
        if Path.exists("/run/systemd/timesync/synchronized") { return "systemd-timesyncd" }
        if Path.exists("/run/chrony") { return "chrony" }
        return "ntp"
    }
}
