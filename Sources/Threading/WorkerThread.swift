import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// The one thread type: a pthread that names itself (what `top -H` and gdb show) and is
/// joined by its owner. The media plane (capture, encode, publish) runs on these, never on
/// the cooperative pool the control plane shares.
public final class WorkerThread: @unchecked Sendable {  // `thread` set in init only; `isJoined` under `joined`
    /// What the thread is for, for debuggers and logs (the kernel keeps 15 bytes of it).
    public let name: String
    private var thread = pthread_t()
    private let joined = Lock()
    private nonisolated(unsafe) var isJoined = false
    private final class Box {
        let name: String
        let body: () -> Void
        init(_ name: String, _ body: @escaping () -> Void) { self.name = name; self.body = body }
    }

    public init(name: String, _ body: @escaping () -> Void) {
        self.name = name
        let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
        let result = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            _ = onair_name_thread(box.name)
            box.body()
            return nil
        }, box)
        precondition(result == 0, "pthread_create failed: \(result)")
    }

    /// Sends `signal` to this thread alone (pthread_kill): wakes one blocked in sigwait
    /// for it, so its owner can end it and join it.
    public func interrupt(with signal: Int32) {
        guard !joined.withLock({ isJoined }) else { return }
        pthread_kill(thread, signal)
    }

    /// Waits for the body to return; later calls return at once. Called on the thread
    /// itself (its owner released there), it detaches instead of deadlocking.
    public func join() {
        let first = joined.withLock { () -> Bool in defer { isJoined = true }; return !isJoined }
        guard first else { return }
        if pthread_equal(thread, pthread_self()) != 0 { pthread_detach(thread) } else { pthread_join(thread, nil) }
    }
}

/// A serial queue of jobs on one WorkerThread, started when the first job arrives and
/// joined by `stop()` or when its owner lets go of it (the thread holds only the queue).
public final class SerialWorker: Sendable {
    private final class Queue: @unchecked Sendable {  // `jobs` and `stopping` under `state`
        let state = Condition()
        var jobs: [@Sendable () -> Void] = []
        var stopping = false

        func run() {
            while true {
                let job = state.withLock { () -> (@Sendable () -> Void)? in
                    while jobs.isEmpty && !stopping { state.wait() }
                    return jobs.isEmpty ? nil : jobs.removeFirst()
                }
                guard let job else { return }
                job()
            }
        }
    }
    private let name: String
    private let queue = Queue()
    private nonisolated(unsafe) var thread: WorkerThread?

    public init(name: String) { self.name = name }

    deinit { stop() }

    /// Runs `job` after the ones before it, on the worker's thread.
    public func async(_ job: @escaping @Sendable () -> Void) {
        queue.state.withLock {
            guard !queue.stopping else { return }
            queue.jobs.append(job)
            if thread == nil { thread = WorkerThread(name: name) { [queue] in queue.run() } }
            queue.state.signal()
        }
    }

    /// Finishes the jobs already queued, then joins the thread.
    public func stop() {
        let thread = queue.state.withLock { () -> WorkerThread? in
            queue.stopping = true
            queue.state.signal()
            return self.thread
        }
        thread?.join()
    }
}
