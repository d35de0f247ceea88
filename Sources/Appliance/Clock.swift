import Basics
import Logging
import Threading

/// `time.servers`: the NTP servers the image's systemd-timesyncd asks (`onair time-config`
/// writes them into its configuration at boot). Empty: Debian's pool, timesyncd's
/// FallbackNTP. An entry that is not a host name or an IP address is left out with one
/// line saying so, and onair keeps running: a camera must not stop because its clock
/// cannot be set, it only stops dating what it makes.
public struct TimeSettings: Sendable, Equatable {
    public var servers: [String] = []
    /// Where `time.servers` was set (`file:line`), for the line about a bad entry.
    public var origin: String?

    public init() {}

    /// The entries timesyncd can use.
    public var usable: [String] { servers.filter(Self.isHost) }

    /// One line per entry left out.
    public var problems: [String] {
        servers.filter { !Self.isHost($0) }.map {
            "\(origin ?? "time.servers"): time.servers: \(quoted($0)) is not a host name or an IP address; left out"
        }
    }

    /// A DNS name (RFC 1123 §2.1 labels), an IPv4 address, or an IPv6 address (hex digits
    /// and colons, optionally a dotted IPv4 tail).
    static func isHost(_ text: String) -> Bool {
        guard !text.isEmpty, text.count <= 253 else { return false }
        if text.contains(":") {
            return text.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." } && text.filter { $0 == ":" }.count >= 2
        }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        return labels.allSatisfy { label in
            !label.isEmpty && label.count <= 63 && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
    }

    /// The systemd-timesyncd drop-in (timesyncd.conf(5)) for /run/systemd/timesyncd.conf.d/.
    public var timesyncdConfig: String {
        var lines = ["# Written at boot by onair-time.service (onair time-config) from onair.conf's time.servers.", "[Time]"]
        let servers = usable
        lines.append(servers.isEmpty ? "# time.servers is not set: timesyncd's FallbackNTP, Debian's pool." : "NTP=" + servers.joined(separator: " "))
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Whether the wall clock can be trusted, watched once a second (on the monotonic
/// scheduler, so a step of the wall clock neither delays nor hurries it). Says on the
/// console when the clock becomes synchronised (or stops being), and by how much it was
/// stepped; warns once when no NTP server has answered a minute after the start.
final class ClockWatch: Sendable {
    private let clock: any WallClock
    private let log: Log
    private let servers: [String]
    private struct State {
        var last: ClockReading
        var lastStep: Int64?
        var warned = false
        var task: Scheduler.Task?
    }
    private let state: Locked<State>
    private let started: Int64

    /// A step the watch reports: more than this between two looks a second apart.
    static let stepThresholdMs: Int64 = 1000
    /// How long an unsynchronised clock is left before the one warning.
    static let patienceSeconds: Int64 = 60

    init(clock: any WallClock, servers: [String], log: Log) {
        self.clock = clock
        self.servers = servers
        self.log = log
        let last = clock.read()
        state = Locked(State(last: last))
        started = last.monotonic
        log(.clock, ("synchronized", last.synchronized), ("source", last.source), ("now", UTCDate.iso8601(milliseconds: last.wallMs)))
    }

    var reading: ClockReading { state.withLock { $0.last } }

    func start(on scheduler: Scheduler) {
        let task = scheduler.every(1, "clock") { [unowned self] _ in poll() }
        state.withLock { $0.task = task }
    }

    func stop(on scheduler: Scheduler) {
        if let task = state.withLock({ $0.task }) { scheduler.cancel(task) }
    }

    /// One look: a change of trust, a step, or a first minute without NTP, said once.
    func poll() {
        let now = clock.read()
        let (previous, warn) = state.withLock { [started] state -> (ClockReading, Bool) in
            let previous = state.last
            state.last = now
            let step = now.offsetMs - previous.offsetMs
            if abs(step) > Self.stepThresholdMs || now.synchronized != previous.synchronized { state.lastStep = now.monotonic }
            let warn = !now.synchronized && !state.warned && now.monotonic - started >= Self.patienceSeconds * 1_000_000_000
            if warn { state.warned = true }
            if now.synchronized { state.warned = false }
            return (previous, warn)
        }
        let step = Double(now.offsetMs - previous.offsetMs) / 1000
        if now.synchronized != previous.synchronized {
            log(.clockSynchronized, level: now.synchronized ? .info : .warn, ("synchronized", now.synchronized), ("step", step),
                ("source", now.source), ("now", UTCDate.iso8601(milliseconds: now.wallMs)))
        } else if abs(now.offsetMs - previous.offsetMs) > Self.stepThresholdMs {
            log(.clockStepped, level: .warn, ("step", step), ("synchronized", now.synchronized),
                ("now", UTCDate.iso8601(milliseconds: now.wallMs)))
        }
        if warn {
            log(.clockUnsynchronized, level: .warn, ("seconds", Self.patienceSeconds),
                ("servers", servers.isEmpty ? "debian pool" : servers.joined(separator: ",")),
                ("note", "no NTP answer yet: streams get ids that are not dates and no program date-time until one comes"))
        }
    }

    /// Whether dates may decide what is deleted (`record.keep_days`): the clock is
    /// synchronised and has not been stepped for ten minutes, so a wrong step that NTP is
    /// about to undo deletes nothing.
    var settled: Bool {
        state.withLock { state in
            state.last.synchronized && state.lastStep.map { state.last.monotonic - $0 >= 600_000_000_000 } ?? true
        }
    }
}
