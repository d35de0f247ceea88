import Basics
import Files
import HLS
import Layout
import System

/// Every stream a board has published to one destination folder, as the destination shows
/// it, kept on the data partition (`published/<key>.json`): the board's `streams.json`
/// there is this list, so a stream `storage.min_free` deleted from the board stays listed
/// while the destination still has it. Only its owner removes one (`onair forget ID`, or
/// `POST /api/forget`), and a forgotten id is never listed again, even while the board
/// still holds its files.
///
/// The running publisher and `onair forget` both change it: each under an exclusive
/// `flock` on `published/<key>.lock`, reading the file afresh and writing it whole.
public struct PublishedIndex: Equatable {
    /// The destination and folder it belongs to (the publisher's journal key).
    public var key: String
    public var streams: [String: StreamInfo] = [:]
    public var forgotten: Set<String> = []

    public init(key: String) { self.key = key }

    /// The streams to list, newest first (ids sort by time within one board).
    public var listed: [StreamInfo] { streams.values.filter { !forgotten.contains($0.id) }.sorted { $0.id > $1.id } }

    /// Takes in what the destination shows of the board's streams now; returns whether
    /// anything changed. A stream keeps its entry once its files are gone from the board.
    public mutating func merge(_ visible: [StreamInfo]) -> Bool {
        var changed = false
        for stream in visible where !forgotten.contains(stream.id) && streams[stream.id] != stream {
            streams[stream.id] = stream
            changed = true
        }
        return changed
    }

    public var json: JSON {
        .fields(["key": key, "streams": JSON.array(listed.map(\.json)), "forgotten": JSON.array(forgotten.sorted().map(JSON.string))])
    }

    public init?(json: JSON) {
        guard let key = json["key"]?.string, case .array(let items)? = json["streams"] else { return nil }
        self.key = key
        for item in items {
            guard let stream = StreamInfo(json: item) else { return nil }
            streams[stream.id] = stream
        }
        if case .array(let ids)? = json["forgotten"] { forgotten = Set(ids.compactMap(\.string)) }
    }

    // MARK: On disk

    /// `published/` under the data directory, and the file for `key` in it: a hash of the
    /// key names it (the key holds a URL), the key itself is inside.
    public static func path(root: String, key: String) -> String { StreamLayout(root: root).publishedIndex(fnv1a(key)) }

    /// Runs `change` on the index as it is on disk, under its lock, and writes the result
    /// if it differs. A file that does not parse is set aside (`.corrupt`, kept for a person
    /// to read) and the index starts again from what the board still holds; `problem`
    /// hears why.
    @discardableResult
    public static func update<T>(root: String, key: String, problem: (String) -> Void = { _ in },
                                 _ change: (inout PublishedIndex) -> T) throws -> T {
        let path = path(root: root, key: key)
        try AtomicFile.makeDirectories(AtomicFile.directory(of: path))
        let lock = try FileError.at(path, "lock") {
            let lock = try FileDescriptor.open(String(path.dropLast(".json".count)) + ".lock", .readWrite, options: .create)
            try lock.lockExclusively()
            return lock
        }
        defer { lock.close() }
        var index = PublishedIndex(key: key)
        if let bytes = FileSystem.read(path, followLinks: false) {
            if let read = parse(bytes, key: key) { index = read } else {
                problem(AtomicFile.setAside(path, because: "\(path) is not an index of published streams"))
            }
        }
        let before = index
        let result = change(&index)
        if index != before { try AtomicFile.write(index.json.bytes + [10], to: path) }
        return result
    }

    /// Marks stream `id` forgotten (its owner deleted it at the destination): it is never
    /// listed again. False when the index never held it.
    public static func forget(_ id: String, root: String, key: String) throws -> Bool {
        try update(root: root, key: key) { index -> Bool in
            guard index.streams[id] != nil || index.forgotten.contains(id) else { return false }
            index.forgotten.insert(id)
            index.streams[id] = nil
            return true
        }
    }

    /// The index as it is on disk now (empty if there is none), without changing it.
    public static func read(root: String, key: String) -> PublishedIndex {
        FileSystem.read(path(root: root, key: key), followLinks: false).flatMap { parse($0, key: key) } ?? PublishedIndex(key: key)
    }

    /// An index file's bytes, if they are the index for `key`.
    static func parse(_ bytes: [UInt8], key: String) -> PublishedIndex? {
        JSON.parse(bytes).flatMap(PublishedIndex.init(json:)).flatMap { $0.key == key ? $0 : nil }
    }

    /// FNV-1a, 64 bits, in hex: a stable short name for a key.
    static func fnv1a(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
