#if canImport(Glibc)
import Glibc
#endif

/// The periodic control loops (button deadlines, tally light, thermal watch, console
/// report, status history) on one named thread and one clock, instead of a thread and a
/// wait object each. A task runs at its deadline and says when it wants to run next; the
/// media plane never runs here.
///
/// `start()` runs the thread on CLOCK_MONOTONIC; a test leaves it unstarted, moves a
/// `ManualClock` and calls `runDue()`, so nothing waits in real time.
public final class Scheduler: Sendable {
    public struct Task: Hashable, Sendable { let id: Int }

    private struct Entry {
        var name: String
        var deadline: Int64
        /// Runs at the deadline (given the time), returns the next deadline or nil to end.
        var body: (Int64) -> Int64?
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        var nextID = 0
        var stopped = false
        var thread: WorkerThread?
        /// The task whose body is running, and on which thread.
        var running: (id: Int, thread: pthread_t)?
    }

    public let clock: MediaClock
    private let name: String
    private let state = Condition(State())

    public init(clock: MediaClock = MonotonicClock(), name: String = "onair-control") {
        self.clock = clock
        self.name = name
    }

    /// Runs `body` at `deadline` (this clock's nanoseconds), then whenever it asks.
    @discardableResult
    public func schedule(_ name: String, at deadline: Int64, _ body: @escaping (Int64) -> Int64?) -> Task {
        defer { state.broadcast() }
        return state.withLock { state in
            state.nextID += 1
            state.entries[state.nextID] = Entry(name: name, deadline: deadline, body: body)
            return Task(id: state.nextID)
        }
    }

    /// Runs `body` every `seconds`, the first time one period from now. Periods are kept
    /// on the grid they started on, so a slow run does not make every later one late.
    @discardableResult
    public func every(_ seconds: Double, _ name: String, _ body: @escaping (Int64) -> Void) -> Task {
        let period = max(1, Int64(seconds * 1e9))
        var due = clock.now() + period
        return schedule(name, at: due) { now in
            body(now)
            due += period * max(1, (now - due) / period + 1)  // the next slot after now
            return due
        }
    }

    /// Moves a task's next run (a button press brings its hold deadline forward).
    public func reschedule(_ task: Task, at deadline: Int64) {
        state.withLock { $0.entries[task.id]?.deadline = deadline }
        state.broadcast()
    }

    /// The task does not run again; if it is running now, this waits until it is done
    /// (unless called from the task itself), so its owner can clean up after it.
    public func cancel(_ task: Task) {
        state.withLock(waitingFor: { state in
            state.entries[task.id] = nil
            guard let running = state.running, running.id == task.id, pthread_equal(running.thread, pthread_self()) == 0 else { return .done(()) }
            return .wait
        })
    }

    /// Names of the tasks still scheduled, soonest first.
    public var pending: [String] {
        state.withLock { $0.entries.values.sorted { $0.deadline < $1.deadline }.map(\.name) }
    }

    /// Runs every task whose deadline has come, each once, in deadline order; returns
    /// how many ran.
    @discardableResult
    public func runDue() -> Int {
        let now = clock.now()
        let due = state.withLock { state -> [(Int, Entry)] in
            state.entries.filter { $0.value.deadline <= now }.sorted { $0.value.deadline < $1.value.deadline }.map { ($0.key, $0.value) }
        }
        var ran = 0
        for (id, entry) in due {
            // Cancelled by a task that ran before it in this round: skipped.
            guard state.withLock({ state -> Bool in
                guard state.entries[id] != nil else { return false }
                state.running = (id, pthread_self())
                return true
            }) else { continue }
            let next = entry.body(now)
            ran += 1
            state.withLock { state in
                state.running = nil
                // Cancelled or moved while it ran: what was said meanwhile stands.
                guard state.entries[id]?.deadline == entry.deadline else { return }
                if let next { state.entries[id]?.deadline = next } else { state.entries[id] = nil }
            }
            state.broadcast()
        }
        return ran
    }

    /// The thread: sleeps on CLOCK_MONOTONIC until the soonest deadline (or a change).
    public func start() {
        let thread = WorkerThread(name: name) { [self] in
            while true {
                let proceed = state.withLock(waitingFor: { [clock] state -> ConditionStep<Bool> in
                    if state.stopped { return .done(false) }
                    guard let soonest = state.entries.values.map(\.deadline).min() else { return .wait }
                    return soonest <= clock.now() ? .done(true) : .waitUntil(soonest)
                })
                guard proceed else { return }
                runDue()
            }
        }
        state.withLock { $0.thread = thread }
    }

    /// Ends the thread; no task runs after this returns.
    public func stop() {
        let thread = state.withLock { state -> WorkerThread? in
            state.stopped = true
            state.entries = [:]
            defer { state.thread = nil }
            return state.thread
        }
        state.broadcast()
        thread?.join()
    }
}
