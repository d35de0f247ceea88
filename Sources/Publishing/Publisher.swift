import Files
import HLS
import Media
import Threading
#if canImport(Glibc)
import Glibc
#endif
import Logging

/// Publishes every stream from the local spool (the data directory) to one destination,
/// in the order PublishPlan allows, with `parallel` segment uploads at once. The media
/// thread reports what it stored; workers read the files back from disk and upload them.
public final class Publisher: @unchecked Sendable {  // every var under `condition`; `workers` set in init, joined in stop()

    public struct Counters: Sendable, Equatable {
        public var attempts = 0
        public var failures = 0
        public var bytes = 0
    }

    private let root: String
    /// Names the destination in each stream's journal (never a secret).
    public let destination: String
    /// Where this board's files go under the destination: `<device.name>/` (or "" for
    /// the destination's root), so boards sharing one never write each other's files.
    public let folder: String
    /// What a stream's journal is kept against: the destination and the folder, so a
    /// stream journaled for another folder is published again whole, never split.
    private var journalKey: String { Self.journalKey(destination: destination, folder: folder) }
    public static func journalKey(destination: String, folder: String) -> String {
        folder.isEmpty ? destination : "\(destination) \(folder.hasSuffix("/") ? folder : folder + "/")"
    }
    private let parallel: Int
    private let retry: RetryPolicy
    private let log: Log
    /// Every deadline and backoff is on this clock (CLOCK_MONOTONIC, or a test's).
    private let clock: MediaClock
    /// Spreads retries of many streams apart (PublishPlan's jitter): 0..<1.
    private let jitter: @Sendable () -> Double
    private var plans: [String: PublishPlan] = [:]
    private var order: [String] = []
    /// What a worker does: a stream's job, the list of streams, or a file of the site.
    enum Work {
        case stream(String, PublishPlan.Job)
        case catalog
        case site(String)
        /// The board's entry in the destination's devices.json (`Fleet`).
        case fleet
    }
    private var ready: [(id: String, job: PublishPlan.Job)] = []
    /// Without worker threads, `runReady()` uploads through this.
    private let inlineTransport: Transport?
    /// streams.json at the destination's root: sent again whenever a playlist there
    /// advances, one upload at a time; `siteFiles` (the viewer page) once each.
    private var catalogDirty = false
    private var catalogInFlight = false
    private var catalogFailures = 0
    private var catalogNotBefore: Int64 = 0
    /// The board's entry in devices.json: written at the start, whenever it goes live or
    /// stops being live, and every `heartbeatMilliseconds` (its "last seen"); only for a
    /// board with a folder. `lastSeen` reads the wall clock (nil while unsynchronised).
    private let lastSeen: @Sendable () -> String?
    private var fleetDirty = false
    private var fleetInFlight = false
    private var fleetFailures = 0
    private var fleetNotBefore: Int64 = 0
    private var fleetDueAt: Int64 = .max
    private var fleetLive: Bool?
    /// Written and read back once; written again a few seconds later, since on a server
    /// that ignores If-Match (nginx) another board's write begun before this one may still
    /// land over it.
    private var fleetConfirming = false
    static let heartbeatMilliseconds: Int64 = 60_000
    /// The index of published streams as last seen (`stamp`), and when it was looked at.
    private var indexStamp: [Int] = []
    private var indexCheckedAt: Int64 = 0
    private var siteFiles: [String: [UInt8]]
    private var siteInFlight = Set<String>()
    private var siteNotBefore: [String: Int64] = [:]
    private var segmentsInFlight = 0
    private var stopping = false
    private var drainCancelled = false
    private var workers: [WorkerThread] = []
    /// Guards everything above; broadcast whenever it changes (workers and a drain wait).
    private let condition = Condition()
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
        self.root = root
        self.clock = clock
        self.jitter = jitter
        inlineTransport = threads ? nil : makeTransport()
        self.siteFiles = siteFiles
        self.destination = destination
        self.folder = folder.isEmpty || folder.hasSuffix("/") ? folder : folder + "/"
        self.lastSeen = lastSeen
        fleetDirty = !folder.isEmpty
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
        case .segmentStored(let id, let sequence, _):
            let now = nowMilliseconds
            update(id) { $0.segmentStored(sequence, at: now) }
        case .ended(let id): update(id) { $0.ended() }
        }
    }

    /// Picks up a stream an earlier run left (closed by Recovery): what its journal says
    /// the destination already has is not sent again, except index.m3u8 when recovery
    /// measured it again. Returns the segments still to send.
    @discardableResult
    public func resume(_ id: String, segments: Int, multivariantRewritten: Bool = false) -> Int {
        let journal = Journal.read("\(root)/streams/\(id)", destination: journalKey)
        return locked {
            var plan = PublishPlan(id: id, retry: retry)
            for sequence in stride(from: 1, through: segments, by: 1) { plan.segmentStored(sequence) }
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
        Journal.read("\(root)/streams/\(id)", destination: journalKey)?.endlist ?? false
    }

    /// Stops publishing a stream whose files are gone (deleted for space).
    public func forget(_ id: String) {
        locked {
            plans[id] = nil
            order.removeAll { $0 == id }
            ready.removeAll { $0.id == id }
            condition.broadcast()
        }
    }

    private func update(_ id: String, _ change: (inout PublishPlan) -> Void) {
        locked {
            if plans[id] == nil {
                plans[id] = PublishPlan(id: id, retry: retry)
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
        for (id, sequences) in pending {
            for sequence in sequences {
                var info = stat()
                if stat("\(root)/streams/\(id)/\(MediaPlaylist.segmentURI(sequence))", &info) == 0 { bytes += Int(info.st_size) }
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
            while !plans.values.allSatisfy({ $0.isComplete || !$0.localEnded }) || catalogDirty || catalogInFlight || !siteFiles.isEmpty
                    || fleetPending {
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
        case .catalog:
            let failure = upload(folder + "streams.json", catalog(), with: transport, missing: "the list of streams")
            finishShared(path: folder + "streams.json", error: failure) {
                catalogInFlight = false
                if failure != nil {
                    catalogDirty = true
                    catalogFailures += 1
                    catalogNotBefore = nowMilliseconds + retry.delayMilliseconds(afterFailures: catalogFailures, jitter: jitter())
                } else { catalogFailures = 0 }
            }
        case .fleet:
            let device = Fleet.Device(name: String(folder.dropLast()), lastSeen: lastSeen(), live: locked { isLive })
            let outcome: Fleet.Outcome?, failure: UploadError?
            do {
                outcome = try Fleet.register(device, with: transport, unreadable: { [log] in log.emit(.publishIndexFailed, level: .warn, [("error", $0)]) })
                failure = nil
            } catch let error as UploadError { (outcome, failure) = (nil, error) } catch { (outcome, failure) = (nil, UploadError(status: nil, message: "\(error)")) }
            let conflict: UploadError? = if case .conflict(let why) = outcome { UploadError(status: nil, message: why) } else { nil }
            finishShared(path: Fleet.path, error: failure ?? conflict) {
                fleetInFlight = false
                let now = nowMilliseconds
                switch outcome {
                case .listed:
                    fleetFailures = 0
                    fleetLive = device.live
                    fleetDueAt = now + Self.heartbeatMilliseconds
                    if !fleetConfirming {
                        fleetConfirming = true
                        fleetDirty = true
                        fleetNotBefore = now + 2000 + Int64(jitter() * 2000)
                    } else { fleetConfirming = false }
                case .conflict:
                    // Another board is writing it too: again soon, apart from it.
                    fleetDirty = true
                    fleetNotBefore = now + 250 + Int64(jitter() * 1000)
                case nil:
                    fleetDirty = true
                    fleetFailures += 1
                    fleetNotBefore = now + retry.delayMilliseconds(afterFailures: fleetFailures, jitter: jitter())
                }
            }
        case .site(let name):
            let failure = upload(name, locked { siteFiles[name] }, with: transport, missing: name)
            finishShared(path: name, error: failure) {
                siteInFlight.remove(name)
                if failure == nil { siteFiles[name] = nil; siteNotBefore[name] = nil } else { siteNotBefore[name] = nowMilliseconds + retry.quickMilliseconds.last! }
            }
        }
    }

    private func upload(_ path: String, _ body: [UInt8]?, with transport: Transport, missing: String) -> UploadError? {
        guard let body else { return UploadError(status: nil, message: "cannot read \(missing)") }
        let (type, cache) = MediaType.of(path)
        do { try transport.put(path, body: body, contentType: type, cacheControl: cache) } catch let error as UploadError {
            return error
        } catch { return UploadError(status: nil, message: "\(error)") }
        return nil
    }

    /// Records a catalog or site upload: counters, the state change, and the log line.
    private func finishShared(path: String, error: UploadError?, _ change: () -> Void) {
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
                let catalogDue = catalogDirty && !catalogInFlight ? [catalogNotBefore] : []
                let fleetDue = folder.isEmpty || fleetInFlight ? [] : [fleetDirty || fleetLive != isLive ? fleetNotBefore : fleetDueAt]
                let wake = (plans.values.compactMap(\.nextRetry) + catalogDue + pendingSite + fleetDue).filter { $0 > now }.min()
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
        if catalogDirty && !catalogInFlight && catalogNotBefore <= now {
            catalogDirty = false
            catalogInFlight = true
            return .catalog
        }
        if !folder.isEmpty && !fleetInFlight && (fleetDirty || fleetLive != isLive || now >= fleetDueAt) && fleetNotBefore <= now {
            fleetDirty = false
            fleetInFlight = true
            return .fleet
        }
        return nil
    }

    /// Inside `locked`: a stream of this run is still being made (it is live at the
    /// destination as soon as its first playlist is there).
    private var isLive: Bool { plans.values.contains { !$0.localEnded } }
    /// Inside `locked`: devices.json does not say yet what it should.
    private var fleetPending: Bool { !folder.isEmpty && ((fleetDirty && !fleetConfirming) || fleetInFlight || fleetLive != isLive) }

    /// streams.json as the destination sees it: each stream with only the segments its
    /// playlist there lists, newest first; playlist URLs relative to the board's folder.
    /// Streams whose files the board has deleted stay listed from the index of published
    /// streams (`PublishedIndex`), which this updates first.
    private func catalog() -> [UInt8] {
        let visible = visibleStreams()
        do {
            let listed = try PublishedIndex.update(root: root, key: journalKey, problem: { [log] in
                log.emit(.publishIndexFailed, level: .warn, [("error", $0)])
            }) { index -> [StreamInfo] in
                _ = index.merge(visible)
                return index.listed
            }
            locked { indexStamp = Self.stamp(PublishedIndex.path(root: root, key: journalKey)) }
            return StreamInfo.json(listed)
        } catch {
            // Not kept (the disk is full, say): the list still holds what it held.
            log.emit(.publishIndexFailed, level: .warn, [("error", "\(error)")])
            var index = PublishedIndex.read(root: root, key: journalKey)
            _ = index.merge(visible)
            return StreamInfo.json(index.listed)
        }
    }

    /// Stops listing (and publishing) stream `id` at the destination: its owner deleted it
    /// there. Throws when the index cannot be changed, or does not hold the stream.
    public func forgetPublished(_ id: String) throws {
        guard try PublishedIndex.forget(id, root: root, key: journalKey) else {
            throw UploadError(status: nil, message: "\(id) is not a stream this board published to \(destination) \(folder)")
        }
        forget(id)
        locked {
            catalogDirty = true
            condition.broadcast()
        }
    }

    /// The index file's modification time and size, to notice `onair forget` changing it.
    private static func stamp(_ path: String) -> [Int] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        return [info.st_mtim.tv_sec, info.st_mtim.tv_nsec, Int(info.st_size)]
    }

    /// Inside `locked`, at most once a second: when another process (`onair forget`)
    /// changed the index, the list goes up again and forgotten streams stop publishing.
    private func noticeIndexChange(now: Int64) {
        guard now >= indexCheckedAt + 1000 else { return }
        indexCheckedAt = now
        let stamp = Self.stamp(PublishedIndex.path(root: root, key: journalKey))
        guard stamp != indexStamp, !catalogInFlight else { return }
        indexStamp = stamp
        catalogDirty = true
        for id in PublishedIndex.read(root: root, key: journalKey).forgotten where plans[id] != nil {
            plans[id] = nil
            order.removeAll { $0 == id }
            ready.removeAll { $0.id == id }
        }
    }

    /// Each local stream as the destination shows it now.
    private func visibleStreams() -> [StreamInfo] {
        let streams = root + "/streams"
        let ids = (FileSystem.names(in: streams) ?? []).filter { !$0.hasPrefix(".") }.sorted(by: >)
        let published: [String: (listed: Int, ended: Bool)] = locked {
            plans.mapValues { ($0.listed, $0.endlistConfirmed) }
        }
        let list = ids.compactMap { id -> StreamInfo? in
            let directory = "\(streams)/\(id)"
            guard let visible = published[id] ?? Journal.read(directory, destination: journalKey).map({ ($0.listed, $0.endlist) }),
                  visible.listed > 0, let text = FileSystem.read(directory + "/playlist.m3u8") else { return nil }
            return StreamInfo(id: id, playlist: String(decoding: text, as: UTF8.self), playlistURL: "\(id)/index.m3u8",
                              visible: visible.listed, ended: visible.ended)
        }
        return list
    }

    private func finish(_ id: String, _ job: PublishPlan.Job, path: String, bytes: Int, error: UploadError?, took: Int64) {
        // The journal records a confirmed playlist before the plan does, so whoever sees
        // the stream complete (drain) also finds it complete on disk.
        if error == nil, case .playlist(let count, let ended) = job {
            let confirmed = locked { plans[id]?.confirmedThrough ?? 0 }
            let journal = Journal(destination: journalKey, confirmedSegments: confirmed, listed: count, endlist: ended)
            do { try journal.write("\(root)/streams/\(id)") } catch { log.emit(.journalFailed, level: .warn, [("id", id), ("error", "\(error)")]) }
        }
        let now = nowMilliseconds
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
            if case .playlist = job { catalogDirty = true }
            return nil
        }
        if let event { log.emit(event.0, level: .warn, event.1); return }
        log.emit(.uploadOk, level: .info, [("path", "\(folder)\(id)/\(path)"), ("bytes", bytes), ("ms", took)])
        if case .playlist(let count, let ended) = job {
            log.emit(.playlistPublished, level: .info, [("id", id), ("seq", count)])
            if ended { log.emit(.streamPublished, level: .info, [("id", id), ("segments", count)]) }
        }
    }

    /// The bytes a job uploads, read from the spool; a playlist is the local playlist cut
    /// to the confirmed segments.
    private func load(_ id: String, _ job: PublishPlan.Job) -> (String, [UInt8]?) {
        let directory = "\(root)/streams/\(id)"
        func read(_ name: String) -> [UInt8]? { FileSystem.read("\(directory)/\(name)") }
        switch job {
        case .initSegment: return ("init.mp4", read("init.mp4"))
        case .segment(let sequence):
            let uri = MediaPlaylist.segmentURI(sequence)
            return (uri, read(uri))
        case .multivariant: return ("index.m3u8", read("index.m3u8"))
        case .playlist(let count, let ended):
            guard let text = read("playlist.m3u8"), let local = MediaPlaylist(parsing: String(decoding: text, as: UTF8.self)),
                  local.entries.count >= count, !ended || local.isEnded else { return ("playlist.m3u8", nil) }
            return ("playlist.m3u8", Array(local.prefix(count).render().utf8))
        }
    }

    // MARK: Locking

    private func locked<T>(_ body: () -> T) -> T { condition.withLock(body) }

    /// Inside `locked`: until something changes or the clock reaches `deadline` (ms),
    /// waited for on CLOCK_MONOTONIC as that far from now.
    private func wait(until deadline: Int64) {
        let left = min(max(0, deadline - nowMilliseconds), Int64.max / 2_000_000)
        condition.wait(untilNanoseconds: monotonicNanoseconds() + left * 1_000_000)
    }

    private var nowMilliseconds: Int64 { clock.now() / 1_000_000 }
}
