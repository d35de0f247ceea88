import Files
import HLS
import Layout
import Logging
import Threading

/// Publishes the board to one destination: every stream in the local spool, in the order
/// PublishPlan allows (`StreamUploads`), and the board's site beside them — streams.json,
/// its entry in devices.json, the viewer pages (`SiteUploads`). One pool of workers does
/// both, `parallel` segment uploads at once and one worker more, so playlists and site
/// files never queue behind segments. The media thread reports what it stored; workers
/// read the files back from disk and upload them.
public final class Publisher: Sendable {
    public struct Counters: Sendable, Equatable {
        public var attempts = 0
        public var failures = 0
        public var bytes = 0
    }

    /// Everything the workers share, reachable only under its lock; broadcast whenever it
    /// changes (workers and a drain wait on it).
    struct State {
        var streams = StreamUploads()
        var site: SiteUploads
        var segmentsInFlight = 0
        var stopping = false
        var drainCancelled = false
        var counts = Counters()
        var lastFailure: String?
    }

    /// What a worker does: a stream's job, the list of streams, a file of the site, or the
    /// board's entry in the destination's devices.json (`Fleet`).
    enum Work {
        case stream(String, PublishPlan.Job)
        case catalog
        case site(String)
        case fleet
    }

    let layout: StreamLayout
    /// Names the destination in each stream's journal (never a secret).
    public let destination: String
    /// Where this board's files go under the destination: `<device.name>/` (or "" for
    /// the destination's root), so boards sharing one never write each other's files.
    public let folder: String
    /// What a stream's journal is kept against: the destination and the folder, so a
    /// stream journaled for another folder is published again whole, never split.
    var journalKey: String { Self.journalKey(destination: destination, folder: folder) }
    public static func journalKey(destination: String, folder: String) -> String {
        folder.isEmpty ? destination : "\(destination) \(folder.hasSuffix("/") ? folder : folder + "/")"
    }
    private let parallel: Int
    let retry: RetryPolicy
    let log: Log
    /// Every deadline and backoff is on this clock (CLOCK_MONOTONIC, or a test's).
    private let clock: MediaClock
    /// Spreads retries of many streams apart (PublishPlan's jitter): 0..<1.
    let jitter: @Sendable () -> Double
    /// The board's "last seen" for devices.json: the wall clock, nil while unsynchronised.
    let lastSeen: @Sendable () -> String?
    let state: Condition<State>
    /// Orders playlist confirmations with their journal writes (`finish`).
    let journaling = Lock()
    private let workers = Locked<[WorkerThread]>([])
    /// Without worker threads, `runReady()` uploads through a transport this makes, on its
    /// caller's thread (a transport belongs to one thread: none is kept between calls).
    private let inlineTransport: (@Sendable () -> Transport)?

    /// Uploads tried, failed and bytes confirmed so far.
    public var counters: Counters { state.withLock { $0.counts } }
    /// The last upload that failed, and why.
    public var lastError: String? { state.withLock { $0.lastFailure } }

    /// `threads: false` starts no worker threads: whoever holds the publisher calls
    /// `runReady()` instead (tests, on a clock they move).
    public init(root: String, destination: String, folder: String = "", parallel: Int, retry: RetryPolicy, log: Log,
                siteFiles: [String: [UInt8]] = [:], lastSeen: @escaping @Sendable () -> String? = { nil }, clock: MediaClock = MonotonicClock(),
                jitter: @escaping @Sendable () -> Double = { .random(in: 0..<1) }, threads: Bool = true,
                makeTransport: @escaping @Sendable () -> Transport) {
        layout = StreamLayout(root: root)
        self.clock = clock
        self.jitter = jitter
        inlineTransport = threads ? nil : makeTransport
        self.destination = destination
        self.folder = folder.isEmpty || folder.hasSuffix("/") ? folder : folder + "/"
        self.lastSeen = lastSeen
        state = Condition(State(site: SiteUploads(files: siteFiles, hasFolder: !folder.isEmpty)))
        self.parallel = max(1, parallel)
        self.retry = retry
        self.log = log
        // One worker more than segment slots, so playlists never queue behind segments.
        for index in 0...self.parallel where threads {
            // Workers hold the publisher until stop() ends their loop.
            let worker = WorkerThread(name: "onair-publish-\(index)") { self.work(transport: makeTransport()) }
            workers.withLock { $0.append(worker) }
        }
    }

    // MARK: State

    public var status: Status {
        let now = nowMilliseconds
        let (pending, oldest, active, counters, lastError) = state.withLock { state in
            (state.streams.unconfirmed, state.streams.oldestUnconfirmedStoredAt, state.streams.publishing, state.counts, state.lastFailure)
        }
        var bytes = 0
        for (id, segments) in pending {
            for segment in segments { bytes += Int(FileSystem.size(layout.file(id, Self.segmentPath(segment.sequence, in: segment.folder))) ?? 0) }
        }
        return Status(destination: destination, pendingSegments: pending.reduce(0) { $0 + $1.segments.count }, pendingBytes: bytes,
                      oldestPendingSeconds: oldest.map { Double(now - $0) / 1000 }, streamsPublishing: active,
                      attempts: counters.attempts, failures: counters.failures, bytes: counters.bytes, lastError: lastError)
    }

    /// Segments stored but not yet confirmed by the destination, over all streams.
    public var pendingSegments: Int { state.withLock { $0.streams.pendingSegments } }

    /// Waits until every ended stream is completely published, or `seconds` pass.
    @discardableResult
    public func drain(seconds: Double) -> Bool {
        let deadline = nowMilliseconds + Int64(seconds * 1000)
        return state.withLock(waitingFor: { state -> ConditionStep<Bool> in
            if state.streams.endedComplete && !state.site.pending(isLive: state.streams.isLive) { return .done(true) }
            let now = nowMilliseconds
            if now >= deadline || state.drainCancelled { return .done(false) }
            return .waitUntil(waitDeadline(min(deadline, now + 100)))
        })
    }

    /// Makes a drain in progress (or the next one) return at once.
    public func cancelDrain() {
        state.withLock { $0.drainCancelled = true }
        state.broadcast()
    }

    /// Stops the workers after their current upload; what is left stays in the spool.
    public func stop() {
        state.withLock { $0.stopping = true }
        state.broadcast()
        for worker in workers.withLock({ $0 }) { worker.join() }
    }

    // MARK: Workers

    private func work(transport: Transport) {
        while let work = nextWork() { perform(work, with: transport) }
    }

    /// Without worker threads: does every job that is due now on the clock, on the
    /// caller's thread, including what finishing one makes due; returns how many.
    @discardableResult
    public func runReady() -> Int {
        guard let transport = inlineTransport?() else { return 0 }
        var done = 0
        while let work = state.withLock({ takeReady(&$0, now: nowMilliseconds) }) {
            perform(work, with: transport)
            done += 1
        }
        return done
    }

    private func perform(_ work: Work, with transport: Transport) {
        switch work {
        case .stream(let id, let job): upload(id, job, with: transport)
        case .catalog: uploadCatalog(with: transport)
        case .fleet: uploadFleetEntry(with: transport)
        case .site(let name): uploadSiteFile(name, with: transport)
        }
    }

    func upload(_ path: String, _ body: [UInt8]?, with transport: Transport, missing: String) -> UploadError? {
        guard let body else { return UploadError(status: nil, message: "cannot read \(missing)") }
        let (type, cache) = MediaType.of(path)
        do { try transport.put(path, body: body, contentType: type, cacheControl: cache) } catch let error as UploadError {
            return error
        } catch { return UploadError(status: nil, message: "\(error)") }
        return nil
    }

    /// Records a catalog or site upload: counters, the state change, and the log line.
    func finishShared(path: String, error: UploadError?, _ change: (inout State) -> Void) {
        state.withLock { state in
            state.counts.attempts += 1
            if let error { state.counts.failures += 1; state.lastFailure = "\(path): \(error)" }
            change(&state)
        }
        state.broadcast()
        if let error { log.emit(.uploadRetry, level: .warn, [("path", path), ("error", "\(error)")]) } else { log.emit(.uploadOk, level: .info, [("path", path)]) }
    }

    private func nextWork() -> Work? {
        state.withLock(waitingFor: { state -> ConditionStep<Work?> in
            if state.stopping { return .done(nil) }
            let now = nowMilliseconds
            if let work = takeReady(&state, now: now) { return .done(work) }
            // Sleep until the next retry falls due (at most a second); only future times
            // count, or a stale one would make this spin.
            let wake = (state.streams.retries + state.site.wakeTimes(isLive: state.streams.isLive)).filter { $0 > now }.min()
            return .waitUntil(waitDeadline(min(wake ?? Int64.max, now + 1000)))
        })
    }

    /// The next job due at `now`, marked as started; nil if none is. Streams first, then
    /// the site.
    private func takeReady(_ state: inout State, now: Int64) -> Work? {
        noticeIndexChange(&state, now: now)
        if let (id, job) = state.streams.take(now: now, segmentSlots: parallel - state.segmentsInFlight) {
            if case .segment = job { state.segmentsInFlight += 1 }
            return .stream(id, job)
        }
        return state.site.take(now: now, isLive: state.streams.isLive)
    }

    // MARK: Time

    /// A deadline on this clock (ms) as CLOCK_MONOTONIC nanoseconds, for a wait.
    private func waitDeadline(_ deadline: Int64) -> Int64 {
        let left = min(max(0, deadline - nowMilliseconds), Int64.max / 2_000_000)
        return monotonicNanoseconds() + left * 1_000_000
    }

    var nowMilliseconds: Int64 { clock.now() / 1_000_000 }
}
