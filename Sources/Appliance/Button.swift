import Devices
import Logging
import Publishing
import Streaming
import System
import Threading

/// `button.*`: where presses come from and what they mean.
public struct ButtonSettings: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable {
        /// A press starts, the next one stops.
        case toggle
        /// Records while held (the talk's "touch and hold"), at least `minimumHoldMs`.
        case hold
    }
    public enum LongPress: String, Sendable, CaseIterable { case stop, shutdown }
    /// `gpiochipN:LINE`.
    public var gpio: String?
    public var activeLow = true
    public var bias = "pull-up"
    public var debounceMs = 20
    /// `auto`: every keyboard-like evdev device; a path; nil: none.
    public var input: DeviceChoice? = .auto
    public var keys: Set<UInt16> = [167]  // KEY_RECORD
    public var mode: Mode = .toggle
    public var minimumHoldMs = 1000
    /// toggle: a press this soon after the last one that acted is ignored.
    public var minimumIntervalMs = 500
    public var longPressSeconds = 3.0
    public var longPress: LongPress = .stop
    /// Run after a long-press shutdown has drained the uploads.
    public var shutdownCommand = "systemctl poweroff"
    /// `tally.gpio`: the light that says what the appliance is doing.
    public var tally: String?
    public var tallyActiveLow = false
    public init() {}
}

/// What presses and releases mean, on one clock (pure, so a manual clock tests it).
/// toggle: a press acts at once (the moment is not lost to a slow finger); holding for
/// `long_press_s` is a long press (stop, and shut down if so configured); a press less than
/// `min_interval_ms` after the last one that acted is ignored with its release, so a double
/// tap or a contact bouncing longer than the debounce does not stop what it just started.
/// hold: press starts, release stops, but not before `min_hold_ms` after the press, so a
/// tap still records something usable.
struct ButtonLogic {
    enum Action: Equatable { case start, stop, toggle, longPress }

    let mode: ButtonSettings.Mode
    let minimumHold: Int64
    let minimumInterval: Int64
    let longPress: Int64
    private var pressedAt: Int64?
    /// The last press that acted (toggle), and whether the button is down in a press
    /// that did not.
    private var actedAt: Int64?
    private(set) var ignoring = false
    private var longFired = false
    private var stopDue: Int64?

    init(mode: ButtonSettings.Mode, minimumHoldMs: Int, longPressSeconds: Double, minimumIntervalMs: Int = 0) {
        self.mode = mode
        minimumHold = Int64(minimumHoldMs) * 1_000_000
        minimumInterval = Int64(minimumIntervalMs) * 1_000_000
        longPress = Int64(longPressSeconds * 1e9)
    }

    mutating func press(at now: Int64) -> [Action] {
        guard pressedAt == nil, !ignoring else { return [] }
        if mode == .toggle, let acted = actedAt, now - acted < minimumInterval {
            ignoring = true
            return []
        }
        pressedAt = now
        longFired = false
        switch mode {
        case .toggle:
            actedAt = now
            return [.toggle]
        case .hold:
            if stopDue != nil { stopDue = nil; return [] }  // pressed again inside the minimum: keep going
            return [.start]
        }
    }

    mutating func release(at now: Int64) -> [Action] {
        if ignoring { ignoring = false; return [] }
        guard let pressed = pressedAt else { return [] }
        pressedAt = nil
        guard mode == .hold else { return [] }
        if now - pressed >= minimumHold { return [.stop] }
        stopDue = pressed + minimumHold
        return []
    }

    /// Time passing: a held toggle button reaching the long press, a short hold's stop.
    mutating func tick(at now: Int64) -> [Action] {
        if mode == .toggle, let pressed = pressedAt, !longFired, longPress > 0, now - pressed >= longPress {
            longFired = true
            return [.longPress]
        }
        if let due = stopDue, now >= due {
            stopDue = nil
            return [.stop]
        }
        return []
    }

    /// When `tick` next has something to say, if anything.
    var nextDeadline: Int64? {
        if mode == .toggle, let pressed = pressedAt, !longFired, longPress > 0 { return pressed + longPress }
        return stopDue
    }
}

/// Edges from every button source → ButtonLogic → the session. Thread-safe: GPIO and
/// evdev threads call `edge`; the hold deadlines (long press, minimum hold) are a task on
/// the control scheduler, moved to each new deadline as edges come.
final class ButtonController: Sendable {
    private let logic: Locked<ButtonLogic>
    private let act: @Sendable (ButtonLogic.Action) -> Void
    private let log: Log
    private let scheduler: Scheduler
    private let task: Scheduler.Task
    /// With no deadline pending, the timer looks again this often.
    private static let idle: Int64 = 500_000_000

    init(settings: ButtonSettings, scheduler: Scheduler, log: Log, act: @escaping @Sendable (ButtonLogic.Action) -> Void) {
        let logic = Locked(ButtonLogic(mode: settings.mode, minimumHoldMs: settings.minimumHoldMs, longPressSeconds: settings.longPressSeconds,
                                       minimumIntervalMs: settings.minimumIntervalMs))
        self.logic = logic
        self.log = log
        self.act = act
        self.scheduler = scheduler
        task = scheduler.schedule("button", at: scheduler.clock.now() + Self.idle) { now in
            let (actions, due) = logic.withLock { logic in (logic.tick(at: now), logic.nextDeadline) }
            for action in actions { Self.perform(action, source: "timer", log: log, act: act) }
            return due ?? now + Self.idle
        }
    }

    func edge(_ edge: ButtonEdge, source: String) {
        let (actions, due, ignored) = logic.withLock { logic in
            (edge.pressed ? logic.press(at: edge.time) : logic.release(at: edge.time), logic.nextDeadline, logic.ignoring)
        }
        if let due { scheduler.reschedule(task, at: due) }
        if edge.pressed && ignored {
            log(.buttonIgnored, ("source", source), ("reason", "within button.min_interval_ms of the last press"))
        } else if edge.pressed { log(.buttonPressed, ("source", source)) } else { log(.buttonReleased, ("source", source)) }
        for action in actions { Self.perform(action, source: source, log: log, act: act) }
    }

    private static func perform(_ action: ButtonLogic.Action, source: String, log: Log, act: @Sendable (ButtonLogic.Action) -> Void) {
        if action == .longPress { log(.buttonLongPress, ("source", source)) }
        act(action)
    }

    func stop() { scheduler.cancel(task) }
}

/// The tally light's language: on while recording (and, with destinations, while one of
/// them has the stream: on air), a slow blink (1 Hz) while armed with uploads still to
/// catch up, a fast blink (4 Hz) when something needs attention (the session failed, the
/// origin has not confirmed anything for 30 s, or a stream is recording but no
/// destination takes it).
enum TallyPattern: Equatable {
    case off, on, slowBlink, fastBlink

    /// `destinationsLive`: nil without destinations; else whether one takes the stream.
    static func of(state: Session.State, publish: Publisher.Status?, failed: Bool, destinationsLive: Bool? = nil) -> TallyPattern {
        if failed || (publish?.oldestPendingSeconds ?? 0) > 30 { return .fastBlink }
        if state == .recording && destinationsLive == false { return .fastBlink }
        if state == .recording || state == .finishing { return .on }
        if (publish?.pendingSegments ?? 0) > 0 { return .slowBlink }
        return .off
    }

    /// Lit or not at `milliseconds` on any clock.
    func lit(at milliseconds: Int64) -> Bool {
        switch self {
        case .off: return false
        case .on: return true
        case .slowBlink: return milliseconds % 1000 < 500
        case .fastBlink: return milliseconds % 250 < 125
        }
    }
}

/// Drives the tally line from the appliance's state, sixteen times a second (a task on
/// the control scheduler); dark once stopped.
final class TallyLight: Sendable {
    private let output: GPIOOutput
    private let scheduler: Scheduler
    private let task: Scheduler.Task

    init(output: GPIOOutput, scheduler: Scheduler, pattern: @escaping @Sendable () -> TallyPattern) {
        self.output = output
        self.scheduler = scheduler
        var last: Bool?
        task = scheduler.every(0.0625, "tally") { now in
            let lit = pattern().lit(at: now / 1_000_000)
            if lit != last { output.set(lit); last = lit }
        }
    }

    func stop() {
        scheduler.cancel(task)
        output.set(false)
    }
}

/// Each line on a terminal or a pipe toggles recording; end of input changes nothing.
/// The thread polls standard input and a pipe of its own, so `stop()` can wake it and
/// join it (a plain read of the terminal could not be interrupted).
final class StandardInputButton: Sendable {
    private let thread: WorkerThread
    private let wake: (read: FileDescriptor, write: FileDescriptor)

    /// Whether standard input is a terminal or a pipe (not a file, not /dev/null).
    static var usable: Bool {
        let input = FileDescriptor.standardInput
        guard let status = try? input.status() else { return false }
        return input.isTerminal || status.kind == .fifo
    }

    /// nil when standard input is neither a terminal nor a pipe (a file, /dev/null).
    init?(log: Log, toggle: @escaping @Sendable () -> Void) {
        let input = FileDescriptor.standardInput
        guard Self.usable, let ends = try? makePipe() else { return nil }
        wake = ends
        thread = WorkerThread(name: "onair-stdin") { [wake] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                guard let ready = try? Poll.wait([(input, .readable), (wake.read, .readable)], timeoutMs: -1) else { return }
                if !ready[1].isEmpty { return }
                guard !ready[0].isEmpty else { continue }
                guard let n = try? buffer.withUnsafeMutableBytes({ try input.read(into: $0) }), n > 0 else { return }  // end of input
                for _ in 0..<buffer[0..<n].filter({ $0 == UInt8(ascii: "\n") }).count {
                    log(.buttonPressed, ("source", "stdin"))
                    toggle()
                }
            }
        }
    }

    func stop() {
        try? wake.write.writeAll([1])
        thread.join()
        wake.read.close()
        wake.write.close()
    }
}
