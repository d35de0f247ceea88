import Files
import HLS
import Layout
import Logging
import Spool

/// The streams a publisher uploads: one `PublishPlan` each, in the order they began, with
/// the jobs taken from them waiting for a worker. Part of `Publisher.State`.
struct StreamUploads {
    var plans: [String: PublishPlan] = [:]
    var order: [String] = []
    /// Streams dropped for good (forgotten by their owner, or deleted for space): what the
    /// media thread still reports of one is ignored, never a plan begun mid-stream.
    var dropped = Set<String>()
    var ready: [(id: String, job: PublishPlan.Job)] = []

    /// Stream `id` is no longer published: its plan and queued jobs go.
    mutating func drop(_ id: String) {
        dropped.insert(id)
        plans[id] = nil
        order.removeAll { $0 == id }
        ready.removeAll { $0.id == id }
    }

    /// A stream's plan begins (a new one is added last).
    mutating func add(_ plan: PublishPlan) {
        if plans[plan.id] == nil { order.append(plan.id) }
        plans[plan.id] = plan
    }

    /// The next job due at `now`, in stream order, with at most `segmentSlots` segments
    /// more in flight; it is then started.
    mutating func take(now: Int64, segmentSlots: Int) -> (id: String, job: PublishPlan.Job)? {
        if ready.isEmpty {
            var slots = segmentSlots
            for id in order {
                for job in plans[id]!.start(now: now, segmentSlots: slots) {
                    if case .segment = job { slots -= 1 }
                    ready.append((id, job))
                }
            }
        }
        return ready.isEmpty ? nil : ready.removeFirst()
    }

    /// A stream of this run is still being made (it is live at the destination as soon as
    /// its first playlist is there).
    var isLive: Bool { plans.values.contains { !$0.localEnded } }
    /// Every stream that has ended is completely published.
    var endedComplete: Bool { plans.values.allSatisfy { $0.isComplete || !$0.localEnded } }
    var retries: [Int64] { plans.values.compactMap(\.nextRetry) }
    var pendingSegments: Int { plans.values.reduce(0) { $0 + $1.pendingSegments } }
    var unconfirmed: [(id: String, segments: [(folder: String, sequence: Int)])] { plans.map { ($0.key, $0.value.unconfirmedSegments) } }
    var oldestUnconfirmedStoredAt: Int64? { plans.values.compactMap(\.oldestUnconfirmedStoredAt).min() }
    var publishing: Int { plans.values.filter { !$0.isComplete }.count }
}

extension Publisher {
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
        var plan = PublishPlan(id: id, retry: retry, renditions: renditions)
        for (rendition, count) in zip(renditions, stored) {
            for sequence in stride(from: 1, through: count, by: 1) { plan.segmentStored(sequence, in: rendition.folder) }
        }
        plan.ended()
        if let journal { plan.restore(confirmedSegments: journal.confirmedSegments, listed: journal.listed, endlist: journal.endlist) }
        if multivariantRewritten { plan.multivariantChanged() }
        if plan.isComplete { return 0 }
        state.withLock { $0.streams.add(plan) }
        state.broadcast()
        return plan.pendingSegments
    }

    /// Whether the destination has confirmed all of stream `id`, ENDLIST included (its
    /// journal, for this destination and folder, says so).
    public func isPublished(_ id: String) -> Bool {
        Journal.read(layout.stream(id), destination: journalKey)?.endlist ?? false
    }

    /// Stops publishing a stream whose files are gone (deleted for space).
    public func forget(_ id: String) {
        state.withLock { $0.streams.drop(id) }
        state.broadcast()
    }

    /// The renditions of stream `id` and their media playlists, as its index.m3u8 names
    /// them (written before anything is reported): each playlist's folder is its
    /// rendition's.
    func renditions(_ id: String) -> [(folder: String, playlists: [String])] {
        FileSystem.readText(layout.file(id, StreamLayout.index), followLinks: false).flatMap(MultivariantPlaylist.init(parsing:))?.renditions
            ?? MultivariantPlaylist(variants: []).renditions
    }

    /// Changes stream `id`'s plan, begun with its first event (its index.m3u8 read then,
    /// outside the lock).
    private func update(_ id: String, _ change: (inout PublishPlan) -> Void) {
        let known = state.withLock { $0.streams.plans[id] != nil || $0.streams.dropped.contains(id) }
        let renditions = known ? [] : self.renditions(id)
        state.withLock { [retry] state in
            guard !state.streams.dropped.contains(id) else { return }
            if state.streams.plans[id] == nil { state.streams.add(PublishPlan(id: id, retry: retry, renditions: renditions)) }
            change(&state.streams.plans[id]!)
        }
        state.broadcast()
    }

    // MARK: A stream's job

    /// Uploads one job's file, read from the spool, and records what came of it.
    func upload(_ id: String, _ job: PublishPlan.Job, with transport: Transport) {
        let (path, body) = load(id, job)
        let started = nowMilliseconds
        let failure = upload("\(folder)\(id)/\(path)", body, with: transport, missing: "the local \(path)")
        finish(id, job, path: path, bytes: body?.count ?? 0, error: failure, took: nowMilliseconds - started)
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
        if error == nil, case .playlist = job,
           let (confirmed, after) = state.withLock({ $0.streams.plans[id].map { ($0.confirmedThrough, $0.afterConfirming(job)) } }) {
            // Per rendition, in the plan's order.
            let journal = Journal(destination: journalKey, confirmedSegments: confirmed, listed: after.listed, endlist: after.endlist)
            do { try journal.write(layout.stream(id)) } catch { log.emit(.journalFailed, level: .warn, [("id", id), ("error", "\(error)")]) }
        }
        let now = nowMilliseconds, uploaded = "\(folder)\(id)/\(path)"
        let outcome = state.withLock { state -> (retry: [(String, Any)]?, complete: Bool) in
            if case .segment = job { state.segmentsInFlight -= 1 }
            state.counts.attempts += 1
            guard state.streams.plans[id] != nil else { return (nil, false) }  // forgotten while uploading
            state.streams.plans[id]!.finish(job, succeeded: error == nil, now: now, jitter: jitter())
            if let error {
                state.counts.failures += 1
                state.lastFailure = "\(uploaded): \(error)"
                let (failures, notBefore) = state.streams.plans[id]!.retryState(of: job)
                return ([("path", uploaded), ("attempt", failures), ("error", "\(error)"), ("next_ms", (notBefore ?? now) - now)], false)
            }
            state.counts.bytes += bytes
            if case .playlist = job { state.site.catalog.wanted = true }
            return (nil, state.streams.plans[id]!.isComplete)
        }
        state.broadcast()
        if let fields = outcome.retry { log.emit(.uploadRetry, level: .warn, fields); return }
        guard error == nil else { return }
        log.emit(.uploadOk, level: .info, [("path", uploaded), ("bytes", bytes), ("ms", took)])
        if case .playlist(let name, let count, _) = job {
            log.emit(.playlistPublished, level: .info, [("id", id), ("playlist", name), ("seq", count)])
            if outcome.complete { log.emit(.streamPublished, level: .info, [("id", id), ("segments", count)]) }
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
}
