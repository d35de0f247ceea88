#if canImport(Glibc)
import Glibc
#endif
import Export
import Files
import HLS
import Media
import MP4
import Threading

/// A picture size, `--max-size WxH`.
/// `onair fetch`: what to copy, where, and how.
public struct FetchOptions: Sendable, Equatable {
    public enum Format: String, Sendable, CaseIterable { case mp4, hls }
    public var url: String
    /// The MP4 file (or, for `hls`, the folder); nil: the data directory's `offline/`.
    public var out: String?
    public var maxBitrate: Int?
    public var maxSize: PictureSize?
    /// Keep fetching a live stream until its ENDLIST.
    public var follow = false
    public var format = Format.mp4
    public var keepDays: Int?
    /// `normal` or `keep`, as recordings have.
    public var priority = "normal"
    public var dataDirectory = "./var"

    public init(url: String) { self.url = url }
}

/// Copies an fMP4 HLS stream for offline use: one variant (`VariantChoice`), every segment
/// checked as it arrives and stored under its media sequence number with an atomic
/// rename, so a fetch killed at any point continues where it was — a complete segment is
/// never fetched twice, a half-written one was never given its name — and ends with the
/// same bytes as one that was never interrupted. Progress is told in media time.
public final class Fetcher {
    public struct Result: Sendable, Equatable {
        public var path: String
        public var seconds: Double
        public var fetched: Int
        /// Segments already there from an interrupted run.
        public var resumed: Int
    }

    let options: FetchOptions
    let http: Getter
    let clock: MediaClock
    let progress: FetchProgress
    let say: (String) -> Void
    /// Attempts per segment before the fetch gives up on it, and the pause after each.
    static let attempts = 4
    static let backoffSeconds = [1.0, 2.0, 4.0]

    public init(_ options: FetchOptions, http: Getter = CurlGetter(), clock: MediaClock = MonotonicClock(),
                say: @escaping (String) -> Void, progress: FetchProgress? = nil) {
        self.options = options
        self.http = http
        self.clock = clock
        self.say = say
        self.progress = progress ?? FetchProgress(clock: clock, write: say, terminal: false)
    }

    /// Where the copy goes, and the folder its pieces gather in until it is whole.
    var paths: (out: String, work: String) {
        let name = Self.name(of: options.url)
        switch options.format {
        case .mp4:
            let out = options.out ?? "\(options.dataDirectory)/offline/\(name).mp4"
            return (out, AtomicFile.directory(of: out) + "/." + (out.split(separator: "/").last.map(String.init) ?? name) + ".fetch")
        case .hls:
            let out = options.out ?? "\(options.dataDirectory)/offline/\(name)"
            return (out, out)
        }
    }

    public func run() throws -> Result {
        let (out, work) = paths
        if options.format == .mp4, FileSystem.exists(out), !FileSystem.exists(work) {
            say("fetch: \(out) is already complete")
            return Result(path: out, seconds: OfflineStore.entry(forMovie: out)?.seconds ?? 0, fetched: 0, resumed: 0)
        }
        var (media, first) = try mediaPlaylist()
        try AtomicFile.makeDirectories(work + "/seg")
        // A rename that a kill -9 interrupted leaves its temporary file: never a segment.
        for name in FileSystem.names(in: work + "/seg") ?? [] where name.hasPrefix(".") { unlink(work + "/seg/" + name) }
        var copy = LocalCopy(work: work)
        var fetched = 0, resumed = 0
        while true {
            let playlist = try first ?? parsePlaylist(media)
            first = nil
            try copy.ensureInit(mapURL: try mapURL(playlist, base: media), http: http)
            let sequence = playlist.value("EXT-X-MEDIA-SEQUENCE").flatMap(HLSValue.integer) ?? 0
            progress.total = copy.seconds + playlist.segments.dropFirst(max(0, copy.next - sequence)).reduce(0) { $0 + ($1.duration ?? 0) }
            for (index, segment) in playlist.segments.enumerated() {
                let number = sequence + index
                guard number >= copy.next else { continue }
                var ends: LocalCopy.Ends?
                if copy.has(number) {
                    resumed += 1
                } else {
                    let (bytes, checked) = try fetchChecked(Self.resolve(segment.uri, against: media), copy: copy, discontinuity: segment.discontinuity)
                    try copy.store(number, bytes)
                    ends = checked
                    fetched += 1
                }
                try copy.listed(number, segment, ends: ends)
                progress.advance(to: copy.seconds, fetchedNow: segment.duration ?? 0, resumed: !copy.fetchedThisRun(number))
            }
            try copy.writePlaylists(ended: playlist.isEnded, targetDuration: playlist.value("EXT-X-TARGETDURATION").flatMap(HLSValue.integer) ?? 2)
            guard options.follow, !playlist.isEnded else { break }
            let wait = Int64(playlist.value("EXT-X-TARGETDURATION").flatMap(HLSValue.integer) ?? 2) * 1_000_000_000
            clock.sleep(until: clock.now() + wait)
        }
        progress.finish()
        if options.format == .hls {
            try OfflineStore.describe(out, source: options.url, seconds: copy.seconds, keepDays: options.keepDays, priority: options.priority)
            return Result(path: out, seconds: copy.seconds, fetched: fetched, resumed: resumed)
        }
        try copy.writeMovie(to: out, scratch: AtomicFile.directory(of: out) + "/.export")
        try OfflineStore.describe(out, source: options.url, seconds: copy.seconds, keepDays: options.keepDays, priority: options.priority)
        try copy.remove()
        return Result(path: out, seconds: copy.seconds, fetched: fetched, resumed: resumed)
    }

    /// The media playlist's URL — the URL itself (and the playlist as read), or the
    /// variant `VariantChoice` picks from it.
    func mediaPlaylist() throws -> (url: String, parsed: ParsedPlaylist?) {
        let top = try parsePlaylist(options.url)
        guard top.isMultivariant else { return (options.url, top) }
        // Sound in a rendition of its own (a quality ladder): a copy of the variant alone
        // would be silent, so none is made until both are fetched together (issue 20).
        if top.tags("EXT-X-MEDIA").contains(where: { ParsedPlaylist.attributes($0.value ?? "")["URI"] != nil }) {
            throw FetchError("\(options.url): its sound is a rendition of its own (EXT-X-MEDIA); fetching such a stream is not built yet")
        }
        guard let (variant, reason) = VariantChoice.choose(top.variants, maxBitrate: options.maxBitrate, maxSize: options.maxSize) else {
            throw FetchError("\(options.url): a multivariant playlist without variants")
        }
        say("fetch: variant \(reason)")
        return (Self.resolve(variant.uri, against: options.url), nil)
    }

    func parsePlaylist(_ url: String) throws -> ParsedPlaylist {
        let bytes = try withRetries { try http.get(url) }
        guard bytes.starts(with: Array("#EXTM3U".utf8)) || bytes.starts(with: [0xEF, 0xBB, 0xBF] + Array("#EXTM3U".utf8)) else {
            throw FetchError("\(url): not an HLS playlist (no #EXTM3U)")
        }
        return ParsedPlaylist(text: String(decoding: bytes, as: UTF8.self))
    }

    /// The init segment's URL (EXT-X-MAP); a stream without one is MPEG-TS.
    func mapURL(_ playlist: ParsedPlaylist, base: String) throws -> String {
        guard let map = playlist.value("EXT-X-MAP").flatMap({ ParsedPlaylist.attributes($0)["URI"] }) else {
            throw FetchError("\(base): MPEG-TS segments are not supported (onair fetches fragmented-MP4 HLS, which has EXT-X-MAP)")
        }
        return Self.resolve(map, against: base)
    }

    /// A segment that parses and continues the one before it (onair's HLS rules: every
    /// track's tfdt where the previous segment ended, unless EXT-X-DISCONTINUITY says
    /// otherwise); fetched again when it does not, as a failed request is.
    func fetchChecked(_ url: String, copy: LocalCopy, discontinuity: Bool) throws -> ([UInt8], LocalCopy.Ends) {
        try withRetries {
            let bytes = try http.get(url)
            switch copy.check(bytes, discontinuity: discontinuity) {
            case .success(let ends): return (bytes, ends)
            case .failure(let why): throw FetchError("\(url): \(why)")
            }
        }
    }

    /// `body`, tried up to `attempts` times while it fails in a way that may pass (no
    /// answer, a 5xx, 408, 429, a segment that did not check); the last failure, said so.
    func withRetries<T>(_ body: () throws -> T) throws -> T {
        var last = FetchError("")
        for attempt in 0..<Self.attempts {
            if attempt > 0 { pause(attempt - 1) }
            do { return try body() } catch let error as FetchError where error.mayPass {
                last = error
            }
        }
        throw FetchError("\(last) (after \(Self.attempts) attempts)", status: last.status)
    }

    private func pause(_ index: Int) {
        let seconds = Self.backoffSeconds[min(index, Self.backoffSeconds.count - 1)]
        clock.sleep(until: clock.now() + Int64(seconds * 1e9))
    }

    /// `uri` as an absolute URL, relative to the playlist at `base` (RFC 3986 §5.2, the
    /// cases playlists use: absolute, host-relative, path-relative).
    public static func resolve(_ uri: String, against base: String) -> String {
        if uri.contains("://") { return uri }
        let withoutQuery = String(base.prefix { $0 != "?" && $0 != "#" })
        if uri.hasPrefix("/") {
            guard let scheme = withoutQuery.firstRange(of: "://") else { return uri }
            let host = withoutQuery[scheme.upperBound...].prefix { $0 != "/" }
            return withoutQuery[..<scheme.upperBound] + host + uri
        }
        return String(withoutQuery[...(withoutQuery.lastIndex(of: "/") ?? withoutQuery.startIndex)]) + uri
    }

    /// A file name from the URL: the folder of an `index.m3u8`/`playlist.m3u8`, else the
    /// playlist's own name, in letters, digits, `.`, `_` and `-`.
    static func name(of url: String) -> String {
        let path = url.prefix { $0 != "?" && $0 != "#" }.split(separator: "/").map(String.init)
        var name = path.last ?? "stream"
        if ["index.m3u8", "playlist.m3u8", "master.m3u8", "main.m3u8"].contains(name), path.count > 2 { name = path[path.count - 2] }
        if name.hasSuffix(".m3u8") { name = String(name.dropLast(5)) }
        let safe = String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" })
        return safe.isEmpty || safe.hasPrefix(".") ? "stream" + safe : safe
    }
}
