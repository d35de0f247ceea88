import Files
import HLS
import Layout
import Media
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Spool

/// The board's own files at the destination beside its streams: its streams.json, kept
/// whole by the index of published streams, and its entry in the destination's
/// devices.json. Each is one `SharedUpload`, scheduled by the publisher's workers.
extension Publisher {
    // MARK: streams.json

    func uploadCatalog(with transport: Transport) {
        let failure = upload(folder + StreamLayout.catalog, catalogBytes(), with: transport, missing: "the list of streams")
        finishShared(path: folder + StreamLayout.catalog, error: failure) {
            if failure == nil { catalog.succeeded() } else { catalog.failed(now: nowMilliseconds, retry: retry, jitter: jitter()) }
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
            locked { indexStamp = Self.stamp(PublishedIndex.path(root: layout.root, key: journalKey)) }
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
        let published: [String: (listed: Int, ended: Bool)] = locked {
            plans.mapValues { ($0.listed, $0.endlistConfirmed) }
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
        forget(id)
        locked {
            catalog.wanted = true
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
    func noticeIndexChange(now: Int64) {
        guard now >= indexCheckedAt + 1000 else { return }
        indexCheckedAt = now
        let stamp = Self.stamp(PublishedIndex.path(root: layout.root, key: journalKey))
        guard stamp != indexStamp, !catalog.inFlight else { return }
        indexStamp = stamp
        catalog.wanted = true
        for id in PublishedIndex.read(root: layout.root, key: journalKey).forgotten where plans[id] != nil { dropPlan(id) }
    }

    // MARK: devices.json

    /// Inside `locked`: a stream of this run is still being made (it is live at the
    /// destination as soon as its first playlist is there).
    var isLive: Bool { plans.values.contains { !$0.localEnded } }
    /// Inside `locked`: devices.json does not say yet what it should (the confirming
    /// write a few seconds later is not waited for).
    var fleetPending: Bool { !folder.isEmpty && ((fleet.wanted && !fleetConfirming) || fleet.inFlight || fleetLive != isLive) }
    /// Inside `locked`: when a worker should look at the entry again, if ever.
    var fleetDue: Int64? {
        folder.isEmpty || fleet.inFlight ? nil : (fleet.wanted || fleetLive != isLive ? fleet.notBefore : fleetDueAt)
    }

    /// One read, merge, conditional write and read-back of devices.json (`Fleet`).
    func uploadFleetEntry(with transport: Transport) {
        let device = Fleet.Device(name: String(folder.dropLast()), lastSeen: lastSeen(), live: locked { isLive })
        let outcome: Fleet.Outcome?, failure: UploadError?
        do {
            outcome = try Fleet.register(device, with: transport, unreadable: { [log] in log.emit(.publishIndexFailed, level: .warn, [("error", $0)]) })
            failure = nil
        } catch let error as UploadError { (outcome, failure) = (nil, error) } catch { (outcome, failure) = (nil, UploadError(status: nil, message: "\(error)")) }
        let conflict: UploadError? = if case .conflict(let why) = outcome { UploadError(status: nil, message: why) } else { nil }
        finishShared(path: Fleet.path, error: failure ?? conflict) {
            let now = nowMilliseconds
            switch outcome {
            case .listed:
                fleet.succeeded()
                fleetLive = device.live
                fleetDueAt = now + Self.heartbeatMilliseconds
                fleetConfirming.toggle()
                if fleetConfirming { fleet.again(now: now, after: 2000 + Int64(jitter() * 2000)) }
            case .conflict:
                // Another board is writing it too: again soon, apart from it.
                fleet.again(now: now, after: 250 + Int64(jitter() * 1000))
            case nil:
                fleet.failed(now: now, retry: retry, jitter: jitter())
            }
        }
    }
}
