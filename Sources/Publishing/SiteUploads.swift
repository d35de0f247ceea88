import Files
import HLS
import Layout
import Logging
import Spool

/// The board's own files at the destination beside its streams: its streams.json, kept
/// whole by the index of published streams; its entry in the destination's devices.json
/// (a board with a folder); and the viewer pages, once each. Each is one `SharedUpload`
/// (the pages: one upload per file), scheduled by the publisher's workers after the
/// streams' jobs. Part of `Publisher.State`.
struct SiteUploads {
    /// streams.json: sent again whenever a playlist there advances.
    var catalog = SharedUpload()
    /// The index of published streams as last seen (`stamp`), and when it was looked at.
    var indexStamp: [Int] = []
    var indexCheckedAt: Int64 = 0
    /// The board's entry in devices.json; its "last seen" is due again at `fleetDueAt`,
    /// and `fleetLive` is what it said of the board.
    var fleet = SharedUpload()
    var fleetDueAt: Int64 = .max
    var fleetLive: Bool?
    /// Written and read back once; written again a few seconds later, since on a server
    /// that ignores If-Match (nginx) another board's write begun before this one may still
    /// land over it.
    var fleetConfirming = false
    let hasFolder: Bool
    /// The viewer pages not yet uploaded, those on their way, and when a failed one may
    /// go again.
    var files: [String: [UInt8]]
    var filesInFlight = Set<String>()
    var filesNotBefore: [String: Int64] = [:]

    init(files: [String: [UInt8]], hasFolder: Bool) {
        self.files = files
        self.hasFolder = hasFolder
        fleet.wanted = hasFolder
    }

    static let heartbeatMilliseconds: Int64 = 60_000

    /// devices.json does not say yet what it should. The confirming write a few seconds
    /// later is not waited for, unless it has failed: then another board's write may have
    /// landed over this one's, and what devices.json says of this board is not known.
    /// Off air, it is waited for all the same: that is what devices.json keeps saying of
    /// the board once it has stopped, and a write of another board's that landed over it
    /// (nginx ignores If-Match) would leave the board "live" there for good.
    func fleetPending(isLive: Bool) -> Bool {
        hasFolder && ((fleet.wanted && (!fleetConfirming || fleet.failures > 0 || !isLive)) || fleet.inFlight || fleetLive != isLive)
    }

    /// Anything of the site still to send (a drain waits for it).
    func pending(isLive: Bool) -> Bool { catalog.pending || !files.isEmpty || fleetPending(isLive: isLive) }

    /// When a worker should look again, for each upload that is waiting.
    func wakeTimes(isLive: Bool) -> [Int64] {
        let fleetDue = !hasFolder || fleet.inFlight ? nil : (fleet.wanted || fleetLive != isLive ? fleet.notBefore : fleetDueAt)
        return files.keys.compactMap { filesNotBefore[$0] } + [catalog.due, fleetDue].compactMap { $0 }
    }

    /// The next upload due at `now`, marked as started: a page, the list, the entry.
    mutating func take(now: Int64, isLive: Bool) -> Publisher.Work? {
        if let name = files.keys.sorted().first(where: { !filesInFlight.contains($0) && filesNotBefore[$0, default: 0] <= now }) {
            filesInFlight.insert(name)
            return .site(name)
        }
        if catalog.start(now: now) { return .catalog }
        if hasFolder && fleet.start(now: now, alsoDue: fleetLive != isLive || now >= fleetDueAt) { return .fleet }
        return nil
    }
}

extension Publisher {
    // MARK: The viewer pages

    func uploadSiteFile(_ name: String, with transport: Transport) {
        let sent = state.withLock { $0.site.files[name] }
        let failure = upload(name, sent, with: transport, missing: name)
        finishShared(path: name, error: failure) { [retry] state in
            state.site.filesInFlight.remove(name)
            if failure == nil {
                // A newer poster that came while this one went up still goes.
                if state.site.files[name] == sent { state.site.files[name] = nil }
                state.site.filesNotBefore[name] = nil
            } else {
                state.site.filesNotBefore[name] = nowMilliseconds + retry.quickMilliseconds.last!
            }
        }
    }

    /// The newest picture as `<folder>/poster.jpg`: the published viewer's poster. The
    /// newest replaces one not yet sent; a drain waits for it as for the pages.
    public func publishPoster(_ jpeg: [UInt8]) {
        guard !jpeg.isEmpty else { return }
        state.withLock { $0.site.files[folder + StreamLayout.poster] = jpeg }
        state.broadcast()
    }

    // MARK: streams.json

    func uploadCatalog(with transport: Transport) {
        let failure = upload(folder + StreamLayout.catalog, catalogBytes(), with: transport, missing: "the list of streams")
        finishShared(path: folder + StreamLayout.catalog, error: failure) { [retry] state in
            if failure == nil { state.site.catalog.succeeded() } else { state.site.catalog.failed(now: nowMilliseconds, retry: retry, jitter: jitter()) }
        }
    }

    /// streams.json as the destination sees it: each stream with only the segments its
    /// playlist there lists, newest first; playlist URLs relative to the board's folder.
    /// Streams whose files the board has deleted stay listed from the index of published
    /// streams (`PublishedIndex`), which this updates first.
    func catalogBytes() -> [UInt8] {
        let visible = visibleStreams()
        do {
            let listed = try PublishedIndex.update(root: layout.root, key: journalKey, problem: { [log] in
                log.emit(.publishIndexFailed, level: .warn, [("error", $0)])
            }) { index -> [StreamInfo] in
                _ = index.merge(visible)
                return index.listed
            }
            let stamp = FileSystem.changeStamp(PublishedIndex.path(root: layout.root, key: journalKey))
            state.withLock { $0.site.indexStamp = stamp }
            return StreamInfo.json(listed)
        } catch {
            // Not kept (the disk is full, say): the list still holds what it held.
            log.emit(.publishIndexFailed, level: .warn, [("error", "\(error)")])
            var index = PublishedIndex.read(root: layout.root, key: journalKey)
            _ = index.merge(visible)
            return StreamInfo.json(index.listed)
        }
    }

    /// Each local stream as the destination shows it now.
    private func visibleStreams() -> [StreamInfo] {
        let ids = StreamLayout.streamIDs(FileSystem.names(in: layout.streams) ?? []).reversed()
        let published: [String: (listed: Int, ended: Bool)] = state.withLock { state in
            state.streams.plans.mapValues { ($0.listed, $0.endlistConfirmed) }
        }
        return ids.compactMap { id -> StreamInfo? in
            let directory = layout.stream(id)
            guard let visible = published[id] ?? Journal.read(directory, destination: journalKey).map({ ($0.visible, $0.endlist) }),
                  visible.listed > 0,
                  let text = StreamWriter.mainPlaylist(in: directory)
            else { return nil }
            return StreamInfo(id: id, playlist: text, playlistURL: StreamLayout.path(StreamLayout.index, in: id),
                              visible: visible.listed, ended: visible.ended)
        }
    }

    /// Stops listing (and publishing) stream `id` at the destination: its owner deleted it
    /// there. Throws when the index cannot be changed, or does not hold the stream.
    public func forgetPublished(_ id: String) throws {
        guard try PublishedIndex.forget(id, root: layout.root, key: journalKey) else {
            throw UploadError(status: nil, message: "\(id) is not a stream this board published to \(destination) \(folder)")
        }
        state.withLock { state in
            state.streams.drop(id)
            state.site.catalog.wanted = true
        }
        state.broadcast()
    }

    /// Under the lock, at most once a second: when another process (`onair forget`)
    /// changed the index, the list goes up again and forgotten streams stop publishing.
    func noticeIndexChange(_ state: inout State, now: Int64) {
        guard now >= state.site.indexCheckedAt + 1000 else { return }
        state.site.indexCheckedAt = now
        // The index file's modification time and size: `onair forget` changes them.
        let stamp = FileSystem.changeStamp(PublishedIndex.path(root: layout.root, key: journalKey))
        guard stamp != state.site.indexStamp, !state.site.catalog.inFlight else { return }
        state.site.indexStamp = stamp
        state.site.catalog.wanted = true
        for id in PublishedIndex.read(root: layout.root, key: journalKey).forgotten where state.streams.plans[id] != nil { state.streams.drop(id) }
    }

    // MARK: devices.json

    /// One read, merge, conditional write and read-back of devices.json (`Fleet`).
    func uploadFleetEntry(with transport: Transport) {
        let device = Fleet.Device(name: String(folder.dropLast()), lastSeen: lastSeen(), live: state.withLock { $0.streams.isLive })
        let outcome: Fleet.Outcome?, failure: UploadError?
        do {
            outcome = try Fleet.register(device, with: transport, unreadable: { [log] in log.emit(.publishIndexFailed, level: .warn, [("error", $0)]) })
            failure = nil
        } catch let error as UploadError { (outcome, failure) = (nil, error) } catch { (outcome, failure) = (nil, UploadError(status: nil, message: "\(error)")) }
        let conflict: UploadError? = if case .conflict(let why) = outcome { UploadError(status: nil, message: why) } else { nil }
        finishShared(path: Fleet.path, error: failure ?? conflict) { [retry] state in
            let now = nowMilliseconds
            switch outcome {
            case .listed:
                state.site.fleet.succeeded()
                state.site.fleetLive = device.live
                state.site.fleetDueAt = now + SiteUploads.heartbeatMilliseconds
                state.site.fleetConfirming.toggle()
                if state.site.fleetConfirming { state.site.fleet.again(now: now, after: 2000 + Int64(jitter() * 2000)) }
            case .conflict:
                // Another board is writing it too: again soon, apart from it.
                state.site.fleet.again(now: now, after: 250 + Int64(jitter() * 1000))
            case nil:
                state.site.fleet.failed(now: now, retry: retry, jitter: jitter())
            }
        }
    }
}
