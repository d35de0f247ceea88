import Devices
#if canImport(Glibc)
import Files
import Glibc
#endif
import Threading
import Media

/// `thermal.*`: lower the frame rate instead of overheating.
public struct ThermalSettings: Sendable, Equatable {
    /// `auto`: the hottest /sys/class/thermal zone; a path to any file holding millidegrees
    /// C; nil: off.
    public var sensor: String? = "auto"
    public var fpsSteps = [30, 24, 20, 15, 10]
    public var hotC = 80.0
    public var coolC = 70.0
    public var dwellSeconds = 5.0
    public init() {}
}

/// The frame-rate ladder (pure, on any clock): step down when it has been hot (or the
/// encoders have been dropping frames) for the dwell time, step up when it has been cool
/// for the dwell time; never faster than the dwell, either way.
struct ThermalLadder {
    let steps: [Int]
    let hot: Double
    let cool: Double
    let dwell: Int64
    private(set) var index: Int
    private var hotSince: Int64?
    private var coolSince: Int64?
    private var lastChange: Int64?

    /// Starts at `fps`, the configured rate, which is also the top: the ladder lowers the
    /// rate and restores it, never raises it past what the camera was opened at (a board
    /// set to 15 fps on a 30,24,… ladder would otherwise climb to 30 when cool, and repeat
    /// every other picture).
    init(steps: [Int], fps: Int, hot: Double, cool: Double, dwellSeconds: Double) {
        self.steps = [fps] + Set(steps.filter { $0 < fps }).sorted(by: >)
        self.hot = hot
        self.cool = cool
        dwell = Int64(dwellSeconds * 1e9)
        index = 0
    }

    var fps: Int { steps[index] }

    /// One reading; returns the step taken, if any: (from, to, reason).
    mutating func observe(temperature: Double?, pressure: Bool, at now: Int64) -> (from: Int, to: Int, reason: String)? {
        let isHot = (temperature.map { $0 >= hot } ?? false) || pressure
        let isCool = !pressure && (temperature.map { $0 <= cool } ?? true)
        hotSince = isHot ? (hotSince ?? now) : nil
        coolSince = isCool ? (coolSince ?? now) : nil
        let settled = lastChange.map { now - $0 >= dwell } ?? true
        if let since = hotSince, now - since >= dwell, settled, index + 1 < steps.count {
            index += 1
            lastChange = now
            hotSince = now  // the next step down needs another whole dwell of heat
            return (steps[index - 1], steps[index], pressure && !(temperature.map { $0 >= hot } ?? false) ? "encoder backlog" : "hot")
        }
        if let since = coolSince, now - since >= dwell, settled, index > 0 {
            index -= 1
            lastChange = now
            coolSince = now
            return (steps[index + 1], steps[index], "cool")
        }
        return nil
    }
}

/// Reads the sensor once a second and moves the session along the ladder.
final class ThermalWatch: @unchecked Sendable {  // `latest` under `lock`; `thread` only in start()/stop()
    private let done = Completion()
    private var thread: WorkerThread?
    private let lock = Lock()
    private var latest: Double?

    var temperature: Double? { lock.withLock { latest } }

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

    init(settings: ThermalSettings, fps: Int, log: Log, dropped: @escaping @Sendable () -> Int,
         temperature report: @escaping @Sendable (Double?) -> Void, setRate: @escaping @Sendable (Int) -> Void) {
        guard let sensor = settings.sensor else { return }
        var ladder = ThermalLadder(steps: settings.fpsSteps, fps: fps, hot: settings.hotC, cool: settings.coolC,
                                   dwellSeconds: settings.dwellSeconds)
        if ladder.fps != fps { setRate(ladder.fps) }
        thread = WorkerThread(name: "onair-thermal") { [self] in
            let clock = MonotonicClock()
            var lastDropped = dropped()
            while !done.wait(seconds: 1) {
                let temperature = sensor == "auto" ? Self.hottestZone() : Self.read(sensor)
                lock.withLock { latest = temperature }
                report(temperature)
                let drops = dropped()
                defer { lastDropped = drops }
                if let step = ladder.observe(temperature: temperature, pressure: drops > lastDropped, at: clock.now()) {
                    log("thermal.step", level: .warn, ("from", step.from), ("to", step.to),
                        ("temp_c", temperature.map { ($0 * 10).rounded() / 10 } ?? -1), ("reason", step.reason))
                    setRate(step.to)
                }
            }
        }
    }

    func stop() {
        done.signal()
        thread?.join()
        thread = nil
    }
}
