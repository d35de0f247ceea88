import Foundation
import HLS
import Publishing
import Threading

/// An in-memory origin behind the Transport protocol: it fails on a schedule the test
/// chooses, and at every playlist PUT it checks what a viewer would then see — that every
/// segment the playlist lists is already stored, and that the list only grows.
public final class FakeOrigin: Sendable {
    private struct State {
        var objects: [String: (body: [UInt8], contentType: String, cacheControl: String)] = [:]
        var violations: [String] = []
        var attempts: [String: Int] = [:]
        var failures = 0
        var listed: [String: Int] = [:]
        var versions: [String: Int] = [:]
        var fails: @Sendable (_ path: String, _ attempt: Int) -> Bool
    }
    private let state: Locked<State>
    public var objects: [String: (body: [UInt8], contentType: String, cacheControl: String)] { state.withLock { $0.objects } }
    public var violations: [String] { state.withLock { $0.violations } }
    public var attempts: [String: Int] { state.withLock { $0.attempts } }
    public var failures: Int { state.withLock { $0.failures } }
    /// Decides whether attempt `n` (from 1) at `path` fails.
    public var fails: @Sendable (_ path: String, _ attempt: Int) -> Bool {
        get { state.withLock { $0.fails } }
        set { state.withLock { $0.fails = newValue } }
    }
    /// Whether a conditional PUT is checked (S3, Apache mod_dav) or ignored (nginx WebDAV).
    public let honoursConditions: Bool

    public init(honoursConditions: Bool = true, fails: @escaping @Sendable (String, Int) -> Bool = { _, _ in false }) {
        state = Locked(State(fails: fails))
        self.honoursConditions = honoursConditions
    }

    public func transport() -> Transport { Connection(origin: self) }

    public func body(_ path: String) -> [UInt8]? { state.withLock { $0.objects[path]?.body } }

    /// Puts an object there as an earlier run would have, without counting an attempt.
    public func seed(_ path: String, _ body: [UInt8]) {
        state.withLock { state in
            state.objects[path] = (body, "", "")
            if path.hasSuffix("/playlist.m3u8") { state.listed[path] = ParsedPlaylist(text: String(decoding: body, as: UTF8.self)).segments.count }
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
        state.withLock { state in state.objects[path].map { StoredObject(body: $0.body, etag: "\"v\(state.versions[path, default: 0])\"") } }
    }

    /// A PUT: counted, failed when the schedule says so, refused when its condition does
    /// not hold (checked and stored in one step, as a server does), and checked against
    /// what a viewer may see.
    func store(_ path: String, _ body: [UInt8], _ type: String, _ cache: String, condition: WriteCondition? = nil) throws {
        let (attempt, fails) = state.withLock { state -> (Int, @Sendable (String, Int) -> Bool) in
            state.attempts[path, default: 0] += 1
            return (state.attempts[path]!, state.fails)
        }
        if fails(path, attempt) {
            state.withLock { $0.failures += 1 }
            throw UploadError(status: 503, message: "scheduled failure")
        }
        let refused = state.withLock { [honoursConditions] state -> Bool in
            if honoursConditions, let condition {
                switch condition {
                case .ifNoneExists: if state.objects[path] != nil { return true }
                case .ifMatch(let etag): if state.objects[path] == nil || etag != "\"v\(state.versions[path, default: 0])\"" { return true }
                }
            }
            state.versions[path, default: 0] += 1
            Self.check(path, body, in: &state)
            state.objects[path] = (body, type, cache)
            return false
        }
        if refused { throw UploadError(status: 412, message: "precondition failed") }
    }

    /// Every media playlist of a stream (the variant's, the I-frame one, a ladder's
    /// renditions' in their folders) keeps the rules.
    private static func check(_ path: String, _ body: [UInt8], in state: inout State) {
        guard let name = ["playlist.m3u8", "iframes.m3u8"].first(where: { path.hasSuffix("/" + $0) }) else { return }
        let directory = String(path.dropLast(name.count))
        let playlist = ParsedPlaylist(text: String(decoding: body, as: UTF8.self))
        if state.objects[directory + "init.mp4"] == nil { state.violations.append("\(path) before init.mp4") }
        // A rendition's folder is in the stream's, beside index.m3u8.
        let parent = String(directory.dropLast().reversed().drop { $0 != "/" }.reversed())
        if state.objects[directory + "index.m3u8"] == nil && state.objects[parent + "index.m3u8"] == nil {
            state.violations.append("\(path) before index.m3u8")
        }
        for segment in playlist.segments where state.objects[directory + segment.uri] == nil {
            state.violations.append("\(path) lists \(segment.uri) before it is stored")
        }
        if playlist.segments.count < state.listed[path, default: 0] { state.violations.append("\(path) shrank") }
        if state.objects[path].map({ ParsedPlaylist(text: String(decoding: $0.body, as: UTF8.self)).isEnded }) ?? false {
            state.violations.append("\(path) changed after ENDLIST")
        }
        state.listed[path] = playlist.segments.count
    }
}
