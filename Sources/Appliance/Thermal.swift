import Basics
import Devices
import Files
import Logging
import Threading

/// `thermal.*`: lower the frame rate instead of overheating.
public struct ThermalSettings: Sendable, Equatable {
    /// `auto`: the hottest /sys/class/thermal zone; a path to any file holding millidegrees
    /// C; nil: off.
    public var sensor: DeviceChoice? = .auto
    public var fpsSteps = [30, 24, 20, 15, 10]
    public var hotC = 80.0
    public var coolC = 70.0
    public var dwellSeconds = 5.0
    public init() {}
}

/// The thermal ladder (pure, on any clock): step down when it has been hot (or the
/// encoders have been dropping frames) for the dwell time, step up when it has been cool
/// for the dwell time; never faster than the dwell, either way. With a live quality ladder
/// the top rungs go first, one a step while more than one is left (the cost estimate's
/// order: a rung costs more than a few frames a second), then the frame rate; cooling
/// undoes them in the reverse order.
///
/// A rate the encoders could not keep up with is retried after twice as long each time it
/// fails again (up to 64 dwells): without that a board at its limit flaps between two
/// rates every other dwell, and every change is a discontinuity the viewers see.
struct ThermalLadder {
    enum Reason: String, Equatable { case hot, backlog = "encoder backlog", cool }
    enum Event: Equatable {
        /// The rate changes from `from` to `to`.
        case step(from: Int, to: Int, reason: Reason)
        /// The live ladder leaves out `to` top rungs instead of `from`.
        case rungs(from: Int, to: Int, reason: Reason)
        /// Hot (or behind) for a dwell at the lowest rate: nothing left to lower. Once per
        /// episode, so the operator knows the board is past what the ladder can do.
        case atLowest(fps: Int, reason: Reason)
    }

    /// One step: how many of the live ladder's top rungs are left out, at which rate.
    struct Level: Equatable {
        var dropped: Int
        var fps: Int
    }
    /// The frame rates, the configured one first.
    let steps: [Int]
    let levels: [Level]
    let hot: Double
    let cool: Double
    let dwell: Int64
    private(set) var index: Int
    private var hotSince: Int64?
    private var coolSince: Int64?
    private var lastChange: Int64?
    private var reportedLowest = false
    /// How many times the encoders fell behind at each step (by index).
    private var backlogs: [Int: Int] = [:]
    static let maximumBackoff = 6

    /// Starts at `fps`, the configured rate, which is also the top: the ladder lowers the
    /// rate and restores it, never raises it past what the camera was opened at (a board
    /// set to 15 fps on a 30,24,… ladder would otherwise climb to 30 when cool, and repeat
    /// every other picture).
    init(steps: [Int], fps: Int, rungs: Int = 1, hot: Double, cool: Double, dwellSeconds: Double) {
        self.steps = [fps] + Set(steps.filter { $0 < fps }).sorted(by: >)
        let lowest = max(1, rungs) - 1
        levels = (0...lowest).map { Level(dropped: $0, fps: fps) } + self.steps.dropFirst().map { Level(dropped: lowest, fps: $0) }
        self.hot = hot
        self.cool = cool
        dwell = Int64(dwellSeconds * 1e9)
        index = 0
    }

    var fps: Int { levels[index].fps }
    var dropped: Int { levels[index].dropped }

    private func change(from a: Int, to b: Int, reason: Reason) -> Event {
        let (from, to) = (levels[a], levels[b])
        return from.dropped != to.dropped ? .rungs(from: from.dropped, to: to.dropped, reason: reason) : .step(from: from.fps, to: to.fps, reason: reason)
    }

    /// How long it must stay cool before the rate goes back up to step `index`.
    func coolDwell(toward index: Int) -> Int64 {
        dwell << min(backlogs[index] ?? 0, Self.maximumBackoff)
    }

    /// One reading; returns what the ladder did, if anything.
    mutating func observe(temperature: Double?, pressure: Bool, at now: Int64) -> Event? {
        let isHotReading = temperature.map { $0 >= hot } ?? false
        let isHot = isHotReading || pressure
        let isCool = !pressure && (temperature.map { $0 <= cool } ?? true)
        hotSince = isHot ? (hotSince ?? now) : nil
        coolSince = isCool ? (coolSince ?? now) : nil
        if hotSince == nil { reportedLowest = false }
        let settled = lastChange.map { now - $0 >= dwell } ?? true
        if let since = hotSince, now - since >= dwell, settled {
            let reason: Reason = isHotReading ? .hot : .backlog
            guard index + 1 < levels.count else {
                if reportedLowest { return nil }
                reportedLowest = true
                return .atLowest(fps: fps, reason: reason)
            }
            if reason == .backlog { backlogs[index, default: 0] += 1 }
            index += 1
            lastChange = now
            hotSince = now  // the next step down needs another whole dwell of heat
            return change(from: index - 1, to: index, reason: reason)
        }
        if let since = coolSince, index > 0, now - since >= coolDwell(toward: index - 1), settled {
            index -= 1
            lastChange = now
            coolSince = now
            return change(from: index + 1, to: index, reason: .cool)
        }
        return nil
    }
}

/// Reads the sensor once a second (a task on the control scheduler, on its clock) and
/// moves the session along the ladder.
final class ThermalWatch: Sendable {
    private let scheduler: Scheduler
    /// None without a sensor.
    private let task: Scheduler.Task?
    private let latest = Locked<Double?>(nil)

    var temperature: Double? { latest.withLock { $0 } }

    /// The hottest `/sys/class/thermal/thermal_zone*/temp`, in °C.
    static func hottestZone(root: String = "/sys/class/thermal") -> Double? {
        let zones = (FileSystem.names(in: root) ?? []).filter { $0.hasPrefix("thermal_zone") }
        return zones.compactMap { read(root + "/" + $0 + "/temp") }.max()
    }

    /// A file holding millidegrees C (the kernel's unit).
    static func read(_ path: String) -> Double? {
        guard let text = FileSystem.readText(path),
              let value = Double(text.trimmingWhitespace()) else { return nil }
        return value / 1000
    }

    /// `rungs`: the live ladder's rungs, top first (`WxH@RATE`; one without a ladder).
    init(settings: ThermalSettings, fps: Int, rungs: [String] = [], scheduler: Scheduler, log: Log, dropped: @escaping @Sendable () -> Int,
         temperature report: @escaping @Sendable (Double?) -> Void, setRate: @escaping @Sendable (Int) -> Void,
         setDroppedRungs: @escaping @Sendable (Int) -> Void = { _ in },
         availability: @escaping @Sendable (_ problem: String?) -> Void = { _ in }) {
        self.scheduler = scheduler
        guard let sensor = settings.sensor else {
            task = nil
            return
        }
        var ladder = ThermalLadder(steps: settings.fpsSteps, fps: fps, rungs: rungs.count, hot: settings.hotC, cool: settings.coolC,
                                   dwellSeconds: settings.dwellSeconds)
        if ladder.fps != fps { setRate(ladder.fps) }
        var lastDropped = dropped()
        task = scheduler.every(1, "thermal") { [latest] now in
            let temperature = sensor.name.map { Self.read($0) } ?? Self.hottestZone()
            // A named sensor that cannot be read is said (once, while it lasts); the rate
            // then follows only the encoder's pressure.
            if sensor.name != nil { availability(temperature == nil ? "cannot be read as millidegrees" : nil) }
            latest.withLock { $0 = temperature }
            report(temperature)
            let drops = dropped()
            defer { lastDropped = drops }
            let celsius = temperature.map { ($0 * 10).rounded() / 10 } ?? -1
            switch ladder.observe(temperature: temperature, pressure: drops > lastDropped, at: now) {
            case .step(let from, let to, let reason)?:
                log(.thermalStep, level: .warn, ("from", from), ("to", to), ("temp_c", celsius), ("reason", reason.rawValue))
                setRate(to)
            case .rungs(_, let to, let reason)?:
                // Which rungs go (or come back), and what viewers are offered now.
                log(.thermalRungs, level: .warn, ("dropped", to == 0 ? "none" : rungs[..<to].joined(separator: ",")),
                    ("live", rungs[to...].joined(separator: ",")), ("temp_c", celsius), ("reason", reason.rawValue))
                setDroppedRungs(to)
            case .atLowest(let fps, let reason)?:
                log(.thermalLimit, level: .warn, ("fps", fps), ("temp_c", celsius), ("reason", reason.rawValue),
                    ("note", "already at the lowest of thermal.fps_steps"))
            case nil:
                break
            }
        }
    }

    func stop() {
        if let task { scheduler.cancel(task) }
    }
}
