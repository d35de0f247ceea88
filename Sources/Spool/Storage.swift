import Files
import HLS
import Layout
import Logging
import System
import Threading

/// `storage.min_free`: how much of the data file system must stay free.
public enum MinimumFree: Sendable, Equatable {
    /// 10 % of the file system or 1 GiB, whichever is smaller (a small card keeps 10 %).
    case automatic
    case percent(Int)
    case bytes(Int64)

    public func bytes(ofTotal total: Int64) -> Int64 {
        switch self {
        case .automatic: return min(total / 10, 1 << 30)
        case .percent(let p): return total * Int64(p) / 100
        case .bytes(let b): return b
        }
    }
}

/// Keeps the data directory from filling the disk, so recording never stops for want of
/// space: the oldest streams that are ended and completely published go first, then the
/// oldest normal-priority local recordings; streams the destination does not have yet go
/// only as a last resort, each with an error event; the stream being recorded is never
/// touched.
public final class StorageKeeper: Sendable {
    public struct Space: Sendable { public var total: Int64; public var available: Int64
        public init(total: Int64, available: Int64) { self.total = total; self.available = available }
    }

    private let root: String
    private let minimum: MinimumFree
    private let isPublished: @Sendable (String) -> Bool
    private let space: @Sendable (String) -> Space?
    private let log: Log
    private let deleted: @Sendable (String) -> Void
    private let recordings: @Sendable () -> [Evictable]
    private let worker = SerialWorker(name: "onair-storage")
    /// A check is queued on the keeper's thread.
    private let scheduled = Locked(false)
    /// One pruning at a time: the keeper's own thread, and writers that found the disk full.
    private let pruning = Lock()

    /// Something else the keeper may delete, oldest first (a finished local recording).
    public struct Evictable: Sendable {
        public var id: String
        public var remove: @Sendable () throws -> Void
        public init(id: String, remove: @escaping @Sendable () throws -> Void) {
            self.id = id
            self.remove = remove
        }
    }

    public init(root: String, minimum: MinimumFree, isPublished: @escaping @Sendable (String) -> Bool,
                space: @escaping @Sendable (String) -> Space? = StorageKeeper.statvfsSpace, log: Log,
                deleted: @escaping @Sendable (String) -> Void = { _ in },
                recordings: @escaping @Sendable () -> [Evictable] = { [] }) {
        self.root = root
        self.recordings = recordings
        self.deleted = deleted
        self.minimum = minimum
        self.isPublished = isPublished
        self.space = space
        self.log = log
    }

    /// Free and total bytes of the file system holding `path` (statvfs(3)).
    public static let statvfsSpace: @Sendable (String) -> Space? = { path in
        guard let status = try? Path.fileSystemStatus(path) else { return nil }
        return Space(total: status.total, available: status.available)
    }

    /// Checks soon, off the caller's thread; calls while a check is pending add nothing.
    public func checkSoon(recording current: String?) {
        let start = scheduled.withLock { scheduled -> Bool in defer { scheduled = true }; return !scheduled }
        guard start else { return }
        worker.async { [self] in
            scheduled.withLock { $0 = false }
            _ = prune(recording: current)
        }
    }

    /// A write found the disk full: frees some headroom beyond the minimum (5 % of the disk,
    /// at most 64 MiB, so one full write does not empty a small card), now, on the caller's
    /// thread; true if anything was deleted (worth writing again).
    public func makeRoom(recording current: String?) -> Bool {
        let headroom = min(64 << 20, (space(root)?.total ?? 0) / 20)
        return !prune(recording: current, extra: headroom).isEmpty
    }

    /// Deletes streams until enough is free; returns the ids deleted, in order.
    @discardableResult
    public func prune(recording current: String?, extra: Int64 = 0) -> [String] {
        pruning.withLock { pruneLocked(recording: current, extra: extra) }
    }

    private func pruneLocked(recording current: String?, extra: Int64) -> [String] {
        guard var free = space(root) else { return [] }
        let needed = minimum.bytes(ofTotal: free.total) + extra
        guard free.available < needed else { return [] }
        let layout = StreamLayout(root: root)
        let ids = StreamLayout.streamIDs(FileSystem.names(in: layout.streams) ?? []).filter { $0 != current }
        let ended = ids.filter { id in
            StreamWriter.mainPlaylist(in: layout.stream(id)).map { $0.contains("#EXT-X-ENDLIST") } ?? true
        }
        let published = ended.filter(isPublished)
        let unpublished = ended.filter { !published.contains($0) }
        enum Kind { case published, recording, unpublished }
        var candidates: [(id: String, kind: Kind, remove: () throws -> Void)] = []
        candidates += published.map { id in (id, .published, { try FileSystem.remove(layout.stream(id)) }) }
        candidates += recordings().map { ($0.id, .recording, $0.remove) }
        candidates += unpublished.map { id in (id, .unpublished, { try FileSystem.remove(layout.stream(id)) }) }
        var removed: [String] = []
        for candidate in candidates {
            guard free.available < needed else { break }
            do { try candidate.remove() } catch { continue }
            removed.append(candidate.id)
            let fields: [(String, Any)] = [("id", candidate.id), ("available_bytes", free.available), ("needed_bytes", needed)]
            switch candidate.kind {
            case .published: deleted(candidate.id); log.emit(.storageDeleted, level: .info, fields)
            case .recording: log.emit(.storageDeletedRecording, level: .warn, fields)
            case .unpublished: deleted(candidate.id); log.emit(.storageDeletedUnpublished, level: .error, fields)
            }
            free = space(root) ?? free
        }
        if free.available < needed {
            log.emit(.storageLow, level: .error, [("available_bytes", free.available), ("needed_bytes", needed)])
        }
        return removed
    }
}
