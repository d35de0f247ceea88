import Files
import HLS
import Layout
import Media
import Threading
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Spool

/// Publishes every stream from the local spool (the data directory) to one destination,
/// in the order PublishPlan allows, with `parallel` segment uploads at once. The media
/// thread reports what it stored; workers read the files back from disk and upload them.
public final class Publisher: @unchecked Sendable {  // every var under `condition`; `workers` set in init, joined in stop()

    public struct Counters: Sendable, Equatable {
        public var attempts = 0
        public var failures = 0
        public var bytes = 0
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
    var plans: [String: PublishPlan] = [:]
    var order: [String] = []
    /// Streams dropped for good (forgotten by their owner, or deleted for space): what the
    /// media thread still reports of one is ignored, never a plan begun mid-stream.
    var dropped = Set<String>()
    /// What a worker does: a stream's job, the list of streams, or a file of the site.
    enum Work {
        case stream(String, PublishPlan.Job)
        case catalog
        case site(String)
        /// The board's entry in the destination's devices.json (`Fleet`).
        case fleet
    }
    var ready: [(id: String, job: PublishPlan.Job)] = []
    /// Without worker threads, `runReady()` uploads through this.
    private let inlineTransport: Transport?
    /// The board's streams.json (Publisher+Site.swift): sent again whenever a playlist
    /// there advances; `siteFiles` (the viewer pages) once each.
    var catalog = SharedUpload()
    /// The index of published streams as last seen (`stamp`), and when it was looked at.
    var indexStamp: [Int] = []
    var indexCheckedAt: Int64 = 0
    /// The board's entry in devices.json (Publisher+Site.swift), only for a board with a
    /// folder; `lastSeen` reads the wall clock (nil while unsynchronised).
    var fleet = SharedUpload()
    let lastSeen: @Sendable () -> String?
    /// When the entry is due again (its "last seen"), and whether it says live.
    var fleetDueAt: Int64 = .max
    var fleetLive: Bool?
    /// Written and read back once; written again a few seconds later, since on a server
    /// that ignores If-Match (nginx) another board's write begun before this one may still
    /// land over it.
    var fleetConfirming = false
    static let heartbeatMilliseconds: Int64 = 60_000
    private var siteFiles: [String: [UInt8]]
    private var siteInFlight = Set<String>()
    private var siteNotBefore: [String: Int64] = [:]
    private var segmentsInFlight = 0
    private var stopping = false
    private var drainCancelled = false
    private var workers: [WorkerThread] = []
    /// Guards everything above; broadcast whenever it changes (workers and a drain wait).
    let condition = Condition()
    /// Orders playlist confirmations with their journal writes (`finish`).
    private let journaling = Lock()
    private var counts = Counters()
    private var lastFailure: String?

    /// Uploads tried, failed and bytes confirmed so far.
    public var counters: Counters { locked { counts } }
    /// The last upload that failed, and why.
    public var lastError: String? { locked { lastFailure } }

    /// `threads: false` starts no worker threads: whoever holds the publisher calls
    /// `runReady()` instead (tests, on a clock they move).
    public init(root: String, destination: String, folder: String = "", parallel: Int, retry: RetryPolicy, log: Log,
                siteFiles: [String: [UInt8]] = [:], lastSeen: @escaping @Sendable () -> String? = { nil }, clock: MediaClock = MonotonicClock(),
                jitter: @escaping @Sendable () -> Double = { .random(in: 0..<1) }, threads: Bool = true,
                makeTransport: @escaping @Sendable () -> Transport) {
        layout = StreamLayout(root: root)
        self.clock = clock
        self.jitter = jitter
        inlineTransport = threads ? nil : makeTransport()
        self.siteFiles = siteFiles
        self.destination = destination
        self.folder = folder.isEmpty || folder.hasSuffix("/") ? folder : folder + "/"
        self.lastSeen = lastSeen
        fleet.wanted = !folder.isEmpty
        self.parallel = max(1, parallel)
        self.retry = retry
        self.log = log
        // One worker more than segment slots, so playlists never queue behind segments.
        for index in 0...self.parallel where threads {
            // Workers hold the publisher until stop() ends their loop.
            workers.append(WorkerThread(name: "onair-publish-\(index)") { self.work(transport: makeTransport()) })
        }
    }

    // MARK: What the media thread reports

    /// A StreamWriter observer: everything the writer made durable becomes publishable.
    public func observe(_ event: StreamEvent) {
        switch event {
        case .started(let id): update(id) { _ in }
        case .multivariantRewritten(let id): update(id) { $0.multivariantChanged() }
        case .segmentStored(let id, let sequence, _, let rendition):
            let now = nowMilliseconds
            update(id) { $0.segmentStored(sequence, in: rendition, at: now) }
        case .ended(let id): update(id) { $0.ended() }
        }
    }

    /// Picks up a stream an earlier run left (closed by Recovery): what its journal says
    /// the destination already has is not sent again, except index.m3u8 when recovery
    /// measured it again. Returns the segments still to send. `segments` is how many the
    /// stream holds (a ladder's renditions each say their own in their playlists).
    @discardableResult
    public func resume(_ id: String, segments: Int, multivariantRewritten: Bool = false) -> Int {
        let directory = layout.stream(id)
        let journal = Journal.read(directory, destination: journalKey)
        let renditions = self.renditions(id)
        let stored = renditions.count == 1 ? [segments] : renditions.map { rendition in
            FileSystem.readText("\(directory)/\(rendition.playlists[0])", followLinks: false).flatMap(MediaPlaylist.init(parsing:))?.entries.count ?? 0
        }
        return locked {
            var plan = PublishPlan(id: id, retry: retry, renditions: renditions)
            for (rendition, count) in zip(renditions, stored) {
                for sequence in stride(from: 1, through: count, by: 1) { plan.segmentStored(sequence, in: rendition.folder) }
            }
            plan.ended()
            if let journal { plan.restore(confirmedSegments: journal.confirmedSegments, listed: journal.listed, endlist: journal.endlist) }
            if multivariantRewritten { plan.multivariantChanged() }
            if plan.isComplete { return 0 }
            plans[id] = plan
            order.append(id)
            condition.broadcast()
            return plan.pendingSegments
        }
    }

    /// Whether the destination has confirmed all of stream `id`, ENDLIST included (its
    /// journal, for this destination and folder, says so).
    public func isPublished(_ id: String) -> Bool {
        Journal.read(layout.stream(id), destination: journalKey)?.endlist ?? false
    }

    /// Stops publishing a stream whose files are gone (deleted for space).
    public func forget(_ id: String) {
        locked {
            dropPlan(id)
            condition.broadcast()
        }
    }

    /// Inside `locked`: stream `id` is no longer published (its plan and queued jobs go).
    func dropPlan(_ id: String) {
        dropped.insert(id)
        plans[id] = nil
        order.removeAll { $0 == id }
        ready.removeAll { $0.id == id }
    }

    /// The renditions of stream `id` and their media playlists, as its index.m3u8 names
    /// them (written before anything is reported): each playlist's folder is its
    /// rendition's.
    func renditions(_ id: String) -> [(folder: String, playlists: [String])] {
        FileSystem.readText(layout.file(id, StreamLayout.index), followLinks: false).flatMap(MultivariantPlaylist.init(parsing:))?.renditions
            ?? MultivariantPlaylist(variants: []).renditions
    }

    private func update(_ id: String, _ change: (inout PublishPlan) -> Void) {
        locked {
            guard !dropped.contains(id) else { return }
            if plans[id] == nil {
                plans[id] = PublishPlan(id: id, retry: retry, renditions: renditions(id))
                order.append(id)
            }
            change(&plans[id]!)
            condition.broadcast()
        }
    }

    // MARK: State

    public var status: Status {
        let now = nowMilliseconds
        let (pending, oldest, active, counters, lastError) = locked {
            (plans.map { ($0.key, $0.value.unconfirmedSegments) }, plans.values.compactMap { $0.oldestUnconfirmedStoredAt }.min(),
             plans.values.filter { !$0.isComplete }.count, counts, lastFailure)
        }
        var bytes = 0
        for (id, segments) in pending {
            for segment in segments {
                var info = stat()
                if stat(layout.file(id, Self.segmentPath(segment.sequence, in: segment.folder)), &info) == 0 { bytes += Int(info.st_size) }
            }
        }
        return Status(destination: destination, pendingSegments: pending.reduce(0) { $0 + $1.1.count }, pendingBytes: bytes,
                      oldestPendingSeconds: oldest.map { Double(now - $0) / 1000 }, streamsPublishing: active,
                      attempts: counters.attempts, failures: counters.failures, bytes: counters.bytes, lastError: lastError)
    }

    /// Segments stored but not yet confirmed by the destination, over all streams.
    public var pendingSegments: Int { locked { plans.values.reduce(0) { $0 + $1.pendingSegments } } }

    /// Waits until every ended stream is completely published, or `seconds` pass.
    @discardableResult
    public func drain(seconds: Double) -> Bool {
        let deadline = nowMilliseconds + Int64(seconds * 1000)
        return locked {
            while !plans.values.allSatisfy({ $0.isComplete || !$0.localEnded }) || catalog.pending || !siteFiles.isEmpty || fleetPending {
                if nowMilliseconds >= deadline || drainCancelled { return false }
                wait(until: min(deadline, nowMilliseconds + 100))
            }
            return true
        }
    }

    /// Makes a drain in progress (or the next one) return at once.
    public func cancelDrain() {
        locked {
            drainCancelled = true
            condition.broadcast()
        }
    }

    /// Stops the workers after their current upload; what is left stays in the spool.
    public func stop() {
        locked {
            stopping = true
            condition.broadcast()
        }
        for worker in workers { worker.join() }
    }

    // MARK: Workers

    private func work(transport: Transport) {
        while let work = nextWork() { perform(work, with: transport) }
    }

    /// Without worker threads: does every job that is due now on the clock, on the
    /// caller's thread, including what finishing one makes due; returns how many.
    @discardableResult
    public func runReady() -> Int {
        guard let transport = inlineTransport else { return 0 }
        var done = 0
        while let work = locked({ takeReady(now: nowMilliseconds) }) {
            perform(work, with: transport)
            done += 1
        }
        return done
    }

    private func perform(_ work: Work, with transport: Transport) {
        switch work {
        case .stream(let id, let job):
            let (path, body) = load(id, job)
            let started = nowMilliseconds
            let failure = upload("\(folder)\(id)/\(path)", body, with: transport, missing: "the local \(path)")
            finish(id, job, path: path, bytes: body?.count ?? 0, error: failure, took: nowMilliseconds - started)
        case .catalog: uploadCatalog(with: transport)
        case .fleet: uploadFleetEntry(with: transport)
        case .site(let name):
            let failure = upload(name, locked { siteFiles[name] }, with: transport, missing: name)
            finishShared(path: name, error: failure) {
                siteInFlight.remove(name)
                if failure == nil { siteFiles[name] = nil; siteNotBefore[name] = nil } else { siteNotBefore[name] = nowMilliseconds + retry.quickMilliseconds.last! }
            }
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
    func finishShared(path: String, error: UploadError?, _ change: () -> Void) {
        locked {
            counts.attempts += 1
            if let error { counts.failures += 1; lastFailure = "\(path): \(error)" }
            change()
            condition.broadcast()
        }
        if let error { log.emit(.uploadRetry, level: .warn, [("path", path), ("error", "\(error)")]) } else { log.emit(.uploadOk, level: .info, [("path", path)]) }
    }

    private func nextWork() -> Work? {
        locked {
            while !stopping {
                let now = nowMilliseconds
                if let work = takeReady(now: now) { return work }
                // Sleep until the next retry falls due (at most a second); only future
                // times count, or a stale one would make this spin.
                let pendingSite = siteFiles.keys.compactMap { siteNotBefore[$0] }
                let wake = (plans.values.compactMap(\.nextRetry) + pendingSite + [catalog.due, fleetDue].compactMap { $0 })
                    .filter { $0 > now }.min()
                wait(until: min(wake ?? Int64.max, now + 1000))
            }
            return nil
        }
    }

    /// Inside `locked`: the next job due at `now`, marked as started; nil if none is.
    private func takeReady(now: Int64) -> Work? {
        noticeIndexChange(now: now)
        if ready.isEmpty {
            for id in order {
                for job in plans[id]!.start(now: now, segmentSlots: parallel - segmentsInFlight) {
                    if case .segment = job { segmentsInFlight += 1 }
                    ready.append((id, job))
                }
            }
        }
        if !ready.isEmpty {
            let (id, job) = ready.removeFirst()
            return .stream(id, job)
        }
        if let name = siteFiles.keys.sorted().first(where: { !siteInFlight.contains($0) && siteNotBefore[$0, default: 0] <= now }) {
            siteInFlight.insert(name)
            return .site(name)
        }
        if catalog.start(now: now) { return .catalog }
        if !folder.isEmpty && fleet.start(now: now, alsoDue: fleetLive != isLive || now >= fleetDueAt) { return .fleet }
        return nil
    }

    /// A playlist's outcome is recorded under `journaling`: the journal written from one
    /// confirmation must already count every playlist confirmed before it, or two
    /// renditions' last playlists finishing together would each write ENDLIST unseen.
    private func finish(_ id: String, _ job: PublishPlan.Job, path: String, bytes: Int, error: UploadError?, took: Int64) {
        if case .playlist = job {
            journaling.withLock { record(id, job, path: path, bytes: bytes, error: error, took: took) }
        } else {
            record(id, job, path: path, bytes: bytes, error: error, took: took)
        }
    }

    private func record(_ id: String, _ job: PublishPlan.Job, path: String, bytes: Int, error: UploadError?, took: Int64) {
        // The journal records a confirmed playlist before the plan does, so whoever sees
        // the stream complete (drain) also finds it complete on disk.
        if error == nil, case .playlist = job, let (confirmed, after) = locked({ plans[id].map { ($0.confirmedThrough, $0.afterConfirming(job)) } }) {
            // Per rendition, in the plan's order.
            let journal = Journal(destination: journalKey, confirmedSegments: confirmed, listed: after.listed, endlist: after.endlist)
            do { try journal.write(layout.stream(id)) } catch { log.emit(.journalFailed, level: .warn, [("id", id), ("error", "\(error)")]) }
        }
        let now = nowMilliseconds
        var complete = false
        let event: (Event, [(String, Any)])? = locked {
            if case .segment = job { segmentsInFlight -= 1 }
            counts.attempts += 1
            guard plans[id] != nil else { return nil }  // forgotten while uploading
            plans[id]!.finish(job, succeeded: error == nil, now: now, jitter: jitter())
            condition.broadcast()
            if let error {
                counts.failures += 1
                lastFailure = "\(folder)\(id)/\(path): \(error)"
                let (failures, notBefore) = plans[id]!.retryState(of: job)
                return (Event.uploadRetry, [("path", "\(folder)\(id)/\(path)"), ("attempt", failures),
                                         ("error", "\(error)"), ("next_ms", (notBefore ?? now) - now)])
            }
            counts.bytes += bytes
            if case .playlist = job { catalog.wanted = true }
            complete = plans[id]!.isComplete
            return nil
        }
        if let event { log.emit(event.0, level: .warn, event.1); return }
        log.emit(.uploadOk, level: .info, [("path", "\(folder)\(id)/\(path)"), ("bytes", bytes), ("ms", took)])
        if case .playlist(let name, let count, _) = job {
            log.emit(.playlistPublished, level: .info, [("id", id), ("playlist", name), ("seq", count)])
            if complete { log.emit(.streamPublished, level: .info, [("id", id), ("segments", count)]) }
        }
    }

    /// The bytes a job uploads, read from the spool; a playlist is the local playlist cut
    /// to the confirmed segments.
    private func load(_ id: String, _ job: PublishPlan.Job) -> (String, [UInt8]?) {
        let directory = layout.stream(id)
        func read(_ name: String) -> [UInt8]? { FileSystem.read("\(directory)/\(name)", followLinks: false) }
        switch job {
        case .initSegment(let folder):
            let path = StreamLayout.path(StreamLayout.initSegment, in: folder)
            return (path, read(path))
        case .segment(let sequence, let folder):
            let path = Self.segmentPath(sequence, in: folder)
            return (path, read(path))
        case .multivariant: return (StreamLayout.index, read(StreamLayout.index))
        case .playlist(let name, let count, let ended):
            guard let text = read(name), let local = MediaPlaylist(parsing: String(decoding: text, as: UTF8.self)),
                  local.entries.count >= count, !ended || local.isEnded else { return (name, nil) }
            return (name, Array(local.prefix(count).render().utf8))
        }
    }

    /// A segment's path in its stream's directory.
    static func segmentPath(_ sequence: Int, in folder: String) -> String {
        StreamLayout.path(StreamLayout.segment(sequence), in: folder)
    }

    // MARK: Locking

    func locked<T>(_ body: () -> T) -> T { condition.withLock(body) }

    /// Inside `locked`: until something changes or the clock reaches `deadline` (ms),
    /// waited for on CLOCK_MONOTONIC as that far from now.
    private func wait(until deadline: Int64) {
        let left = min(max(0, deadline - nowMilliseconds), Int64.max / 2_000_000)
        condition.wait(untilNanoseconds: monotonicNanoseconds() + left * 1_000_000)
    }

    var nowMilliseconds: Int64 { clock.now() / 1_000_000 }
}
