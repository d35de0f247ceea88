import Foundation
#if canImport(Glibc)
import Glibc
#endif

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
/// space: the oldest streams that are ended and completely published go first; streams
/// the destination does not have yet go only as a last resort, each with an error event;
/// the stream being recorded is never touched.
public final class StorageKeeper: @unchecked Sendable {
    public struct Space: Sendable { public var total: Int64; public var available: Int64
        public init(total: Int64, available: Int64) { self.total = total; self.available = available }
    }

    private let root: String
    private let minimum: MinimumFree
    private let isPublished: @Sendable (String) -> Bool
    private let space: @Sendable (String) -> Space?
    private let log: Publisher.Log
    private let deleted: @Sendable (String) -> Void
    private let queue = DispatchQueue(label: "onair-storage")
    private var scheduled = false
    private let lock = NSLock()

    public init(root: String, minimum: MinimumFree, isPublished: @escaping @Sendable (String) -> Bool,
                space: @escaping @Sendable (String) -> Space? = StorageKeeper.statvfsSpace, log: @escaping Publisher.Log,
                deleted: @escaping @Sendable (String) -> Void = { _ in }) {
        self.root = root
        self.deleted = deleted
        self.minimum = minimum
        self.isPublished = isPublished
        self.space = space
        self.log = log
    }

    /// Free and total bytes of the file system holding `path` (statvfs(3)).
    public static let statvfsSpace: @Sendable (String) -> Space? = { path in
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        let block = Int64(info.f_frsize)
        return Space(total: Int64(info.f_blocks) * block, available: Int64(info.f_bavail) * block)
    }

    /// Checks soon, off the caller's thread; calls while a check is pending add nothing.
    public func checkSoon(recording current: String?) {
        let start = lock.withLock { () -> Bool in defer { scheduled = true }; return !scheduled }
        guard start else { return }
        queue.async { [self] in
            lock.withLock { scheduled = false }
            _ = prune(recording: current)
        }
    }

    /// Deletes streams until enough is free; returns the ids deleted, in order.
    @discardableResult
    public func prune(recording current: String?) -> [String] {
        guard var free = space(root) else { return [] }
        let needed = minimum.bytes(ofTotal: free.total)
        guard free.available < needed else { return [] }
        let streams = root + "/streams"
        let ids = ((try? FileManager.default.contentsOfDirectory(atPath: streams)) ?? []).filter { !$0.hasPrefix(".") && $0 != current }.sorted()
        let ended = ids.filter { id in
            (FileManager.default.contents(atPath: "\(streams)/\(id)/playlist.m3u8").map { String(decoding: $0, as: UTF8.self).contains("#EXT-X-ENDLIST") }) ?? true
        }
        let published = ended.filter(isPublished)
        var removed: [String] = []
        for (id, isLastResort) in published.map({ ($0, false) }) + ended.filter({ !published.contains($0) }).map({ ($0, true) }) {
            guard free.available < needed else { break }
            do { try FileManager.default.removeItem(atPath: "\(streams)/\(id)") } catch { continue }
            removed.append(id)
            deleted(id)
            if isLastResort {
                log("storage.deleted_unpublished", [("id", id), ("available_bytes", free.available), ("needed_bytes", needed)])
            } else {
                log("storage.deleted", [("id", id), ("available_bytes", free.available), ("needed_bytes", needed)])
            }
            free = space(root) ?? free
        }
        if free.available < needed {
            log("storage.low", [("available_bytes", free.available), ("needed_bytes", needed)])
        }
        return removed
    }
}
