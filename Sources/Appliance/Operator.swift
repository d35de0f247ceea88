import Devices
import Files
import Logging
import System
import Threading

/// systemd's notify protocol without libsystemd (sd_notify(3)): datagrams to the socket
/// named by NOTIFY_SOCKET (`@` for the abstract namespace). READY=1 once the deferred
/// start is done, STATUS= with the console line, WATCHDOG=1 while the pipeline lives.
struct SystemdNotifier: Sendable {
    let socketPath: String
    /// Half of WATCHDOG_USEC, the interval systemd asks pings at; nil without a watchdog.
    let watchdogInterval: Double?

    init?(environment: [String: String] = Environment.variables) {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        socketPath = path
        watchdogInterval = environment["WATCHDOG_USEC"].flatMap(Double.init).map { $0 / 2_000_000 }
    }

    @discardableResult
    func send(_ message: String) -> Bool { FileDescriptor.sendDatagram(message, toUnixSocket: socketPath) }
}

/// The operator's view while the appliance runs: a status line on the serial console
/// every `console.interval_s` (and a line for each important event), and systemd's
/// STATUS=/WATCHDOG=1, on the control scheduler at the shorter of the two intervals.
final class OperatorReport: Sendable {
    private let device: String?
    /// The console's descriptor (opened again after a hang-up), and the report's task.
    private let state: Locked<(console: FileDescriptor?, task: (Scheduler, Scheduler.Task)?)>
    private let notifier: SystemdNotifier?
    private let interval: Double
    private let snapshot: @Sendable () -> StatusSnapshot
    private let alive: @Sendable () -> Bool

    /// `device`: a path to write lines to (a tty, or any file), or nil.
    init(device: String?, interval: Double, notifier: SystemdNotifier?, log: Log,
         snapshot: @escaping @Sendable () -> StatusSnapshot, alive: @escaping @Sendable () -> Bool) {
        self.device = device
        var console: FileDescriptor?
        if let device {
            do { console = try Self.open(device) } catch { log(.consoleUnavailable, level: .warn, ("device", device), ("error", "\(error)")) }
        }
        state = Locked((console, nil))
        self.notifier = notifier
        self.interval = interval
        self.snapshot = snapshot
        self.alive = alive
        if console != nil {
            log.listen { [weak self] event, _, fields in
                guard event.onConsole else { return }
                self?.write("onair: \(event) " + fields.map { "\($0.0)=\(Log.logfmtValue($0.1))" }.joined(separator: " "))
            }
        }
    }

    private static func open(_ path: String) throws -> FileDescriptor {
        try FileDescriptor.open(path, .writeOnly, options: [.create, .noControllingTerminal, .append, .nonBlocking])
    }

    /// The device `console.device = auto` means: the Raspberry Pi's serial alias, else its
    /// PL011 UART, else none (logs stay on stderr).
    static func autoDevice(exists: (String) -> Bool = { FileSystem.exists($0) }) -> String? {
        ["/dev/serial0", "/dev/ttyAMA0"].first(where: exists)
    }

    /// The first status line now, then one every `interval`; WATCHDOG=1 at the
    /// watchdog's pace too. A task on the control scheduler.
    func start(on scheduler: Scheduler) {
        guard state.withLock({ $0.console != nil }) || notifier != nil else { return }
        let tick = Int64(min(interval, notifier?.watchdogInterval ?? interval) * 1e9)
        var nextLine = scheduler.clock.now()
        var lastFrames = snapshot().framesIn, lastAt = scheduler.clock.now()
        let task = scheduler.schedule("console report", at: nextLine) { [self] now in
            if now >= nextLine {
                let state = snapshot()
                let fps = Double(state.framesIn - lastFrames) / max(0.001, Double(now - lastAt) / 1e9)
                (lastFrames, lastAt) = (state.framesIn, now)
                let line = state.consoleLine(fpsActual: fps)
                write(line)
                notifier?.send("STATUS=\(line)")
                nextLine = now + Int64(interval * 1e9)
            }
            if notifier?.watchdogInterval != nil && alive() { notifier?.send("WATCHDOG=1") }
            return now + tick
        }
        state.withLock { $0.task = (scheduler, task) }
    }

    func stop() {
        if let (scheduler, task) = state.withLock({ $0.task }) { scheduler.cancel(task) }
    }

    private func write(_ line: String) {
        // Serial consoles want CR LF; a slow one drops a line rather than stall the run.
        let text = line + "\r\n"
        state.withLock { [device] state in
            guard let fd = state.console else { return }
            let bytes = Array(text.utf8)
            do { _ = try bytes.withUnsafeBytes { try fd.write($0) } } catch let error as Errno where error == .ioError {
                // A getty starting on the same tty hangs it up (vhangup): every file opened
                // on it before then fails with EIO from then on. Open it again.
                fd.close()
                state.console = device.flatMap { try? Self.open($0) }
                if let again = state.console { _ = try? bytes.withUnsafeBytes { try again.write($0) } }
            } catch {}
        }
    }
}
