import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// The one thread type: a pthread that names itself (what `top -H` and gdb show) and is
/// joined by its owner. The media plane (capture, encode, publish) runs on these, never on
/// the cooperative pool the control plane shares.
public final class WorkerThread: Sendable {
    /// What the thread is for, for debuggers and logs (the kernel keeps 15 bytes of it).
    public let name: String
    private let thread: pthread_t
    private let isJoined = Locked(false)
    private final class Box {
        let name: String
        let body: () -> Void
        init(_ name: String, _ body: @escaping () -> Void) { self.name = name; self.body = body }
    }

    public init(name: String, _ body: @escaping () -> Void) {
        self.name = name
        let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            _ = onair_name_thread(box.name)
            box.body()
            return nil
        }, box)
        precondition(result == 0, "pthread_create failed: \(result)")
        self.thread = thread
    }

    /// Sends `signal` to this thread alone (pthread_kill): wakes one blocked in sigwait
    /// for it, so its owner can end it and join it.
    public func interrupt(with signal: Int32) {
        guard !isJoined.withLock({ $0 }) else { return }
        pthread_kill(thread, signal)
    }

    /// Waits for the body to return; later calls return at once. Called on the thread
    /// itself (its owner released there), it detaches instead of deadlocking.
    public func join() {
        let first = isJoined.withLock { joined -> Bool in defer { joined = true }; return !joined }
        guard first else { return }
        if pthread_equal(thread, pthread_self()) != 0 { pthread_detach(thread) } else { pthread_join(thread, nil) }
    }
}

/// A serial queue of jobs on one WorkerThread, started when the first job arrives and
/// joined by `stop()` or when its owner lets go of it (the thread holds only the queue).
public final class SerialWorker: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
        /// Started by the first job.
        var thread: WorkerThread?
    }
    private let name: String
    private let queue = Condition(Queue())

    public init(name: String) { self.name = name }

    private static func run(_ queue: Condition<Queue>) {
        while true {
            let job = queue.withLock(waitingFor: { queue -> ConditionStep<(@Sendable () -> Void)?> in
                if !queue.jobs.isEmpty { return .done(queue.jobs.removeFirst()) }
                return queue.stopping ? .done(nil) : .wait
            })
            guard let job else { return }
            job()
        }
    }

    deinit { stop() }

    /// Runs `job` after the ones before it, on the worker's thread; false (and never run)
    /// once the worker has stopped.
    @discardableResult
    public func async(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = queue.withLock { [name, queue] state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            if state.thread == nil { state.thread = WorkerThread(name: name) { Self.run(queue) } }
            return true
        }
        queue.broadcast()
        return accepted
    }

    /// Runs `job` after the ones before it, on the worker's thread, and waits for what it
    /// returns.
    public func sync<T: Sendable>(_ job: @escaping @Sendable () -> T) -> T {
        let result = Locked<T?>(nil)
        let done = Completion()
        let accepted = async {
            let value = job()
            result.withLock { $0 = value }
            done.signal()
        }
        // A worker that has stopped runs nothing more: the caller does it.
        guard accepted else { return job() }
        done.wait()
        return result.withLock { $0 }!
    }

    /// Finishes the jobs already queued, then joins the thread.
    public func stop() {
        let thread = queue.withLock { state -> WorkerThread? in
            state.stopping = true
            return state.thread
        }
        queue.broadcast()
        thread?.join()
    }
}

/// A thread that runs until its owner stops it: the body looks at `isStopped` between
/// bounded waits of its own (a poll(2) timeout, the next frame's time), and `stop()` says
/// so and joins it. Capture, the input sources and the synthetic source run this way.
public final class StoppableThread: Sendable {
    private let state = Locked<(stopped: Bool, thread: WorkerThread?)>((false, nil))

    public init() {}

    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Runs `body` on a thread named `name`.
    public func start(name: String, _ body: @escaping () -> Void) {
        let thread = WorkerThread(name: name, body)
        state.withLock { $0.thread = thread }
    }

    /// Asks the body to end, then `wake`s it (ends a wait it may be in), and waits until
    /// it has ended.
    public func stop(waking wake: () -> Void = {}) {
        let thread = state.withLock { state -> WorkerThread? in
            state.stopped = true
            defer { state.thread = nil }
            return state.thread
        }
        wake()
        thread?.join()
    }
}
