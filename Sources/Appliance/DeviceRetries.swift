import Devices
import Logging
import Threading

/// Devices the appliance goes on without (issue 33): a button or tally line another
/// driver or program holds, a chip or input device that is not there, a thermal sensor
/// that cannot be read. Each is said once — on the console and in `/api/status`: which,
/// why, and what still works — tried again every few seconds, and taken when it can be,
/// with one more line. A setting that is malformed is still a configuration error.
final class DeviceRetries: Sendable {
    struct Problem: Sendable, Equatable {
        /// The config key (`button.gpio`), what it names, and why it cannot be had.
        var key: String
        var device: String
        var problem: String
    }

    static let interval: Int64 = 5_000_000_000
    private let log: Log
    private let problems = Locked<[String: Problem]>([:])
    private let stopped = Locked(false)

    init(log: Log) { self.log = log }

    var unavailable: [Problem] { problems.withLock { $0.values.sorted { $0.key < $1.key } } }

    /// What `key` names is unavailable (`problem`), or available again (nil): one line
    /// when that changes, none while it stays the same. `others`: what still does the
    /// job (the other button sources, say).
    func set(_ key: String, device: String, problem: String?, others: String? = nil) {
        let changed = problems.withLock { problems -> (was: Problem?, now: Problem?)? in
            let was = problems[key]
            let now = problem.map { Problem(key: key, device: device, problem: $0) }
            guard was != now else { return nil }
            problems[key] = now
            return (was, now)
        }
        guard let changed else { return }
        if let now = changed.now {
            log(.deviceUnavailable, level: .warn, ("key", key), ("device", device), ("problem", now.problem),
                ("meanwhile", others ?? "-"), ("action", "tried again every \(Self.interval / 1_000_000_000) s"))
        } else if changed.was != nil {
            log(.deviceAvailable, ("key", key), ("device", device))
        }
    }

    /// Opens `device` now, or says why not and tries again every `interval` on
    /// `scheduler` until it opens; `took` gets it (on the scheduler's thread when later).
    func keepTrying<Device>(_ key: String, device: String, on scheduler: Scheduler, others: @escaping @Sendable () -> String,
                            open: @escaping @Sendable () throws -> Device, took: @escaping @Sendable (Device) -> Void) {
        do {
            took(try open())
            return
        } catch {
            set(key, device: device, problem: Self.reason(error), others: others())
        }
        _ = scheduler.schedule("retry \(key)", at: scheduler.clock.now() + Self.interval) { [self] now in
            guard !stopped.withLock({ $0 }) else { return nil }
            do {
                let opened = try open()
                set(key, device: device, problem: nil)
                took(opened)
                return nil
            } catch {
                set(key, device: device, problem: Self.reason(error), others: others())
                return now + Self.interval
            }
        }
    }

    /// No more tries (the appliance is stopping).
    func stop() { stopped.withLock { $0 = true } }

    /// A device error's reason alone: the key and the device are said beside it.
    static func reason(_ error: Error) -> String {
        if case .setting(_, _, let reason) = error as? DeviceError { return reason }
        return "\(error)"
    }
}
