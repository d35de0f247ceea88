import Basics
import Files
import Threading

/// The offline copies under a data directory's `offline/`: each with a `<name>.json`
/// beside it saying where it came from, how long it is, and how long to keep it.
public enum OfflineStore {
    public struct Entry: Sendable, Equatable {
        public var path: String
        public var source: String
        public var seconds: Double
        public var bytes: Int64
        public var keepDays: Int?
        public var priority: String
        /// When it was fetched, if the clock was synchronised then (ms since the epoch).
        public var fetchedMs: Int64?

        /// When it may be reclaimed: nil while it is kept (priority keep, no keep_days,
        /// or no trusted date).
        public var expiresMs: Int64? {
            guard priority != "keep", let days = keepDays, let fetched = fetchedMs else { return nil }
            return fetched + Int64(days) * 86_400_000
        }
    }

    static func metadataPath(_ path: String) -> String { path + ".json" }

    static func describe(_ path: String, source: String, seconds: Double, keepDays: Int?, priority: String,
                         clock: any WallClock = SystemWallClock()) throws {
        let reading = clock.read()
        let bytes = FileSystem.isDirectory(path) ? FileSystem.filesBelow(path).reduce(Int64(0)) { $0 + (FileSystem.size(path + "/" + $1) ?? 0) }
            : FileSystem.size(path) ?? 0
        let json = JSON.fields(["source": source, "seconds": (seconds * 1000).rounded() / 1000, "bytes": bytes, "keep_days": keepDays,
                                "priority": priority,
                                "fetched": reading.synchronized ? UTCDate.iso8601(milliseconds: reading.wallMs) : nil])
        try AtomicFile.write(json.bytes, to: metadataPath(path))
    }

    public static func entry(forMovie path: String) -> Entry? {
        guard let json = FileSystem.read(metadataPath(path)).flatMap({ JSON.parse($0) }),
              let source = json["source"]?.string, let seconds = json["seconds"]?.double else { return nil }
        return Entry(path: path, source: source, seconds: seconds, bytes: json["bytes"]?.int64 ?? 0, keepDays: json["keep_days"]?.int,
                     priority: json["priority"]?.string ?? "normal", fetchedMs: json["fetched"]?.string.flatMap(UTCDate.parse))
    }

    /// Every copy under `dataDirectory/offline`, by name.
    public static func list(dataDirectory: String) -> [Entry] {
        let folder = dataDirectory + "/offline"
        return (FileSystem.names(in: folder) ?? []).filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
            .compactMap { entry(forMovie: folder + "/" + String($0.dropLast(5))) }
    }

    /// Copies `storage.min_free` may reclaim (not `keep`), oldest fetch first: before the
    /// device's own recordings, since a copy's source still has what it holds.
    public static func evictable(dataDirectory: String) -> [Entry] {
        list(dataDirectory: dataDirectory).filter { $0.priority != "keep" }.sorted { ($0.fetchedMs ?? 0) < ($1.fetchedMs ?? 0) }
    }

    /// Removes a copy (a file, or a folder for `--format hls`) and its description.
    public static func remove(_ entry: Entry) throws {
        try FileSystem.remove(entry.path)  // rm -r: a movie, or a copy's folder
        try? FileSystem.remove(metadataPath(entry.path))
    }

    /// `--keep-days`: copies past their expiry go (`nowMs` from a synchronised clock).
    public static func expire(dataDirectory: String, nowMs: Int64) -> [Entry] {
        list(dataDirectory: dataDirectory).filter { entry in
            guard let expires = entry.expiresMs, expires < nowMs else { return false }
            return (try? remove(entry)) != nil
        }
    }

    /// `onair fetch --list`: one line a copy.
    public static func table(_ entries: [Entry]) -> String {
        guard !entries.isEmpty else { return "no offline copies\n" }
        return entries.map { e in
            let name = e.path.split(separator: "/").last.map(String.init) ?? e.path
            let expiry = e.expiresMs.map { "expires " + UTCDate.iso8601(milliseconds: $0).prefix(10) } ?? (e.priority == "keep" ? "kept" : "no expiry")
            return "\(name)  \(FetchProgress.clockTime(e.seconds))  \(e.bytes / 1_048_576) MiB  \(expiry)  \(e.source)"
        }.joined(separator: "\n") + "\n"
    }
}
