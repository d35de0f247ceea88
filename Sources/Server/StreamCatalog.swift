import Files
import HLS
import Layout
import System
import Threading

/// The streams under a data directory, as `GET /api/streams` lists them. Every viewer asks
/// once a second, so each playlist is parsed again only when its size or modification
/// time changed: an ended stream is read once, a live one once per new segment.
public final class StreamCatalog: Sendable {
    public let layout: StreamLayout
    private let cache = Locked<[String: (size: Int64, modified: Int64, info: StreamInfo)]>([:])

    public init(root: String) { layout = StreamLayout(root: root) }

    /// Every stream under `root/streams`, newest first (ids sort by start time).
    public func list() -> [StreamInfo] {
        let ids = StreamLayout.streamIDs(FileSystem.names(in: layout.streams) ?? [])
        let list = ids.reversed().compactMap { id -> StreamInfo? in
            let path = layout.file(id, StreamLayout.mainPlaylist(index: FileSystem.readText(layout.file(id, StreamLayout.index), followLinks: false)))
            // Only what lies inside the data directory, as the file server serves: a
            // symbolic link (to the stream or its playlist) may lead anywhere.
            guard FileSystem.kind(layout.stream(id)) == .directory,
                  let status = try? Path.status(path, followLinks: false), status.kind == .regular else { return nil }
            let size = status.size
            let modified = Int64(status.modifiedSeconds) * 1_000_000_000 + Int64(status.modifiedNanoseconds)
            if let cached = cache.withLock({ $0[id] }), cached.size == size, cached.modified == modified { return cached.info }
            guard let data = FileSystem.read(path, followLinks: false) else { return nil }
            var info = StreamInfo(id: id, playlist: String(decoding: data, as: UTF8.self), playlistURL: StreamLayout.url(ofStream: id))
            info.export = "/api/export?stream=\(id)"
            cache.withLock { $0[id] = (size, modified, info) }
            return info
        }
        // Streams deleted (for space) leave the cache with the listing.
        cache.withLock { cache in cache = cache.filter { ids.contains($0.key) } }
        return list
    }

    public func json() -> [UInt8] { StreamInfo.json(list()) }
}
