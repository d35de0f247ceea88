import System
import Threading

/// At most `perMinute` lines a minute about refused clients: thousands of requests thrown
/// at the board must not flood its log; the ones left out are counted in the next line.
public final class RefusalLog: Sendable {
    public let perMinute: Int
    private let state = Locked((minute: Int64(0), count: 0, suppressed: 0))

    public init(perMinute: Int) { self.perMinute = max(1, perMinute) }

    /// Logs `event` with `fields` and the count left out before it, unless this minute's
    /// lines are spent.
    public func emit(_ event: Event, to log: Log, _ fields: [(String, Any)], level: Log.Level = .warn, now: Int64 = KernelClock.monotonic()) {
        let minute = now / 60_000_000_000
        let (emit, suppressed) = state.withLock { state -> (Bool, Int) in
            if state.minute != minute { state = (minute, 0, state.suppressed) }
            state.count += 1
            guard state.count <= perMinute else { state.suppressed += 1; return (false, 0) }
            defer { state.suppressed = 0 }
            return (true, state.suppressed)
        }
        if emit { log.emit(event, level: level, fields + [("suppressed_before", suppressed)]) }
    }
}
