import Foundation
import HLS
import Publishing

/// An in-memory origin behind the Transport protocol: it fails on a schedule the test
/// chooses, and at every playlist PUT it checks what a viewer would then see — that every
/// segment the playlist lists is already stored, and that the list only grows.
public final class FakeOrigin: @unchecked Sendable {
    private let lock = NSLock()
    public private(set) var objects: [String: (body: [UInt8], contentType: String, cacheControl: String)] = [:]
    public private(set) var violations: [String] = []
    public private(set) var attempts: [String: Int] = [:]
    public private(set) var failures = 0
    private var listed: [String: Int] = [:]
    /// Decides whether attempt `n` (from 1) at `path` fails.
    public var fails: @Sendable (_ path: String, _ attempt: Int) -> Bool
    /// Whether a conditional PUT is checked (S3, Apache mod_dav) or ignored (nginx WebDAV).
    public let honoursConditions: Bool
    private var versions: [String: Int] = [:]

    public init(honoursConditions: Bool = true, fails: @escaping @Sendable (String, Int) -> Bool = { _, _ in false }) {
        self.fails = fails
        self.honoursConditions = honoursConditions
    }

    public func transport() -> Transport { Connection(origin: self) }

    public func body(_ path: String) -> [UInt8]? { lock.withLock { objects[path]?.body } }

    /// Puts an object there as an earlier run would have, without counting an attempt.
    public func seed(_ path: String, _ body: [UInt8]) {
        lock.withLock {
            objects[path] = (body, "", "")
            if path.hasSuffix("/playlist.m3u8") { listed[path] = ParsedPlaylist(text: String(decoding: body, as: UTF8.self)).segments.count }
        }
    }

    final class Connection: Transport {
        let origin: FakeOrigin
        init(origin: FakeOrigin) { self.origin = origin }
        func put(_ path: String, body: [UInt8], contentType: String, cacheControl: String, condition: WriteCondition?) throws {
            try origin.store(path, body, contentType, cacheControl, condition: condition)
        }
        func get(_ path: String) throws -> StoredObject? { origin.get(path) }
    }

    /// The object and its ETag, the version number of the object at that path.
    public func get(_ path: String) -> StoredObject? {
        lock.withLock { objects[path].map { StoredObject(body: $0.body, etag: "\"v\(versions[path, default: 0])\"") } }
    }

    func store(_ path: String, _ body: [UInt8], _ type: String, _ cache: String, condition: WriteCondition? = nil) throws {
        let attempt = lock.withLock { () -> Int in attempts[path, default: 0] += 1; return attempts[path]! }
        if fails(path, attempt) {
            lock.withLock { failures += 1 }
            throw UploadError(status: 503, message: "scheduled failure")
        }
        let refused: Bool = lock.withLock {
            guard honoursConditions, let condition else { return false }
            switch condition {
            case .ifNoneExists: return objects[path] != nil
            case .ifMatch(let etag): return objects[path] == nil || etag != "\"v\(versions[path, default: 0])\""
            }
        }
        if refused { throw UploadError(status: 412, message: "precondition failed") }
        lock.withLock { versions[path, default: 0] += 1 }
        lock.withLock {
            // Every media playlist of a stream (the variant's, the I-frame one, a ladder's
            // renditions' in their folders) keeps the rules.
            if let name = ["playlist.m3u8", "iframes.m3u8"].first(where: { path.hasSuffix("/" + $0) }) {
                let directory = String(path.dropLast(name.count))
                let playlist = ParsedPlaylist(text: String(decoding: body, as: UTF8.self))
                if objects[directory + "init.mp4"] == nil { violations.append("\(path) before init.mp4") }
                // A rendition's folder is in the stream's, beside index.m3u8.
                let parent = String(directory.dropLast().reversed().drop { $0 != "/" }.reversed())
                if objects[directory + "index.m3u8"] == nil && objects[parent + "index.m3u8"] == nil {
                    violations.append("\(path) before index.m3u8")
                }
                for segment in playlist.segments where objects[directory + segment.uri] == nil {
                    violations.append("\(path) lists \(segment.uri) before it is stored")
                }
                if playlist.segments.count < listed[path, default: 0] { violations.append("\(path) shrank") }
                if objects[path].map({ ParsedPlaylist(text: String(decoding: $0.body, as: UTF8.self)).isEnded }) ?? false {
                    violations.append("\(path) changed after ENDLIST")
                }
                listed[path] = playlist.segments.count
            }
            objects[path] = (body, type, cache)
        }
    }
}
