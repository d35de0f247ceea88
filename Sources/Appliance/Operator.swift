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
    /// The console's descriptor (opened again after a hang-up), the report's task, and
    /// what the console has not taken yet.
    private let state: Locked<State>
    private struct State {
        var console: FileDescriptor?
        var task: (Scheduler, Scheduler.Task)?
        /// Bytes a slow console (a full tty buffer: EAGAIN, or a short write) has not
        /// taken yet, sent before anything newer; whole lines, oldest dropped past `limit`.
        var pending: [UInt8] = []
        /// The first pending line is partly on the console already: it is finished, never
        /// dropped or split.
        var begun = false
        var dropped = 0

        /// Where the lines that may be dropped or preceded begin.
        var firstWhole: Int { begun ? (pending.firstIndex(of: 10).map { $0 + 1 } ?? pending.count) : 0 }
    }
    /// At most this many bytes wait for the console (a minute of lines at 115200 baud is
    /// 690 KB: this is a few seconds' worth, enough for a burst of events).
    static let pendingLimit = 16 << 10
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
        state = Locked(State(console: console))
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
            flush()
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

    /// A line for the console, after those still waiting. A slow console never stalls the
    /// run: what it does not take waits (bounded) and goes with the next line or tick.
    private func write(_ line: String) {
        // Serial consoles want CR LF.
        let bytes = Array((line + "\r\n").utf8)
        state.withLock { state in
            guard state.console != nil else { return }
            state.pending += bytes
            if state.pending.count > Self.pendingLimit {
                // Whole lines go, oldest first, and the console is told how many.
                let from = state.firstWhole
                var cut = max(from + 1, state.pending.count - Self.pendingLimit)
                while cut < state.pending.count, state.pending[cut - 1] != 10 { cut += 1 }
                state.dropped += state.pending[from..<cut].filter { $0 == 10 }.count
                state.pending.removeSubrange(from..<cut)
            }
            send(&state)
        }
    }

    /// What waits for the console, sent now (a tick of the report).
    func flush() { state.withLock { send(&$0) } }

    private func send(_ state: inout State) {
        var reopened = false
        while let fd = state.console {
            // Lines were dropped: said where they were, once the console is at a line's end
            // (never inside one, and never itself dropped: it is written or kept as a count).
            let note = state.dropped > 0 && !state.begun
                ? Array("onair: console.dropped lines=\(state.dropped) why=\"the console took lines slower than they came\"\r\n".utf8) : []
            guard !note.isEmpty || !state.pending.isEmpty else { return }
            do {
                if !note.isEmpty {
                    let written = try note.withUnsafeBytes { try fd.write($0) }
                    guard written > 0 else { return }
                    state.dropped = 0
                    if written < note.count { state.pending.insert(contentsOf: note[written...], at: 0); state.begun = true }
                    continue
                }
                let written = try state.pending.withUnsafeBytes { try fd.write($0) }
                guard written > 0 else { return }
                state.begun = state.pending[written - 1] != 10 || (state.begun && !state.pending[..<written].contains(10))
                state.pending.removeFirst(written)
            } catch let error as Errno where error == .ioError && !reopened {
                // A getty starting on the same tty hangs it up (vhangup): every file opened
                // on it before then fails with EIO from then on. Open it again.
                fd.close()
                state.console = device.flatMap { try? Self.open($0) }
                reopened = true
            } catch let error as Errno where error == .again {
                return  // the tty's buffer is full: the rest goes with the next line or tick
            } catch {
                state.pending = []  // the console is gone: nothing will take them
                state.begun = false
                return
            }
        }
    }
}
