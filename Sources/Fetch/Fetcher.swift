import Export
import Files
import HLS
import Layout
import Media
import MP4
import System
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
    /// The most the copy keeps (`--max-bytes`): a followed stream that never ends stops
    /// there and is finished as if it had (4 GiB unless said).
    public var maxBytes: Int64 = 4 << 30
    public var format = Format.mp4
    public var keepDays: Int?
    /// `normal` or `keep`, as recordings have.
    public var priority = "normal"
    public var dataDirectory = "./var"

    public init(url: String) { self.url = url }
}

/// Copies an fMP4 HLS stream for offline use: one variant (`VariantChoice`) and the audio
/// rendition it plays with where its sound is one (`FetchChoice`), every segment
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
    /// What the copy holds so far (stored and resumed segments), against `maxBytes`.
    private var kept: Int64 = 0

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

    /// One media playlist being copied: the variant's (its copy in the work folder
    /// itself), or the audio rendition it plays with (in `audio/`).
    struct Rendition {
        var url: String
        var copy: LocalCopy
        /// The playlist as the choice already read it (a media playlist given directly).
        var first: ParsedPlaylist?
        var ended = false
        var targetDuration = 2
        /// The last reload listed a segment the copy did not have.
        var grew = true

        /// How long to wait before the next reload (RFC 8216bis §6.3.4): the target
        /// duration after a playlist that changed, half of it after one that did not, and
        /// never less than `Fetcher.reloadFloorMs` (a target duration of 0 is no reason to
        /// ask twenty times a second).
        var reloadMilliseconds: Int64 {
            max(Fetcher.reloadFloorMs, Int64(targetDuration) * (grew ? 1000 : 500))
        }
    }

    /// The shortest wait between two reloads of a followed playlist.
    static let reloadFloorMs: Int64 = 1000
    /// The largest playlist read: 400,000 segments, more than three weeks of 2 s ones;
    /// refused as it arrives, never parsed (a 254 MB one took 2 GB to parse).
    static let playlistLimit = 32 << 20

    public func run() throws -> Result {
        let (out, work) = paths
        if options.format == .mp4, FileSystem.exists(out), !FileSystem.exists(work) {
            say("fetch: \(out) is already complete")
            return Result(path: out, seconds: OfflineStore.entry(forMovie: out)?.seconds ?? 0, fetched: 0, resumed: 0)
        }
        let choice = try choose()
        try claim(work, for: choice)
        var renditions = [Rendition(url: choice.media, copy: LocalCopy(work: work), first: choice.parsed)]
        if let audio = choice.audio { renditions.append(Rendition(url: audio, copy: LocalCopy(work: work + "/" + StreamLayout.audio))) }
        for rendition in renditions {
            let folder = rendition.copy.work + "/" + StreamLayout.segmentFolder
            try AtomicFile.makeDirectories(folder)
            // A rename that a kill -9 interrupted leaves its temporary file: never a segment.
            for name in FileSystem.names(in: folder) ?? [] where name.hasPrefix(".") { try? Path.unlink(folder + "/" + name) }
        }
        var counts = (fetched: 0, resumed: 0)
        kept = 0
        while true {
            for r in renditions.indices { try copyListed(&renditions[r], tellsProgress: r == 0, counts: &counts) }
            if let index = choice.localIndex { try AtomicFile.write(Array(index.utf8), to: work + "/" + StreamLayout.index) }
            guard options.follow, !renditions.allSatisfy(\.ended) else { break }
            clock.sleep(until: clock.now() + renditions.map(\.reloadMilliseconds).min()! * 1_000_000)
        }
        progress.finish()
        let seconds = renditions[0].copy.seconds
        if options.format == .mp4 {
            try LocalCopy.write(try movie(renditions.map(\.copy), scratch: AtomicFile.directory(of: out) + "/.export"), to: out)
        }
        try OfflineStore.describe(out, source: options.url, seconds: seconds, keepDays: options.keepDays, priority: options.priority)
        if options.format == .mp4 { try renditions[0].copy.remove() }
        return Result(path: out, seconds: seconds, fetched: counts.fetched, resumed: counts.resumed)
    }

    /// A work folder says what it copies (`.source`: the media playlists, without their
    /// queries, which signed URLs change): the same command continues it, but another
    /// variant (other limits, another stream) must never mix its segments into it.
    private func claim(_ work: String, for choice: FetchChoice) throws {
        let source = ([choice.media] + (choice.audio.map { [$0] } ?? [])).map { String($0.prefix { $0 != "?" }) }.joined(separator: "\n") + "\n"
        let path = work + "/.source"
        if let held = FileSystem.readText(path), held != source {
            throw FetchError("\(work) holds an interrupted copy of \(held.prefix { $0 != "\n" }); remove it, or give --out another name, to copy \(choice.media)")
        }
        try AtomicFile.makeDirectories(work)
        try AtomicFile.write(Array(source.utf8), to: path)
    }

    /// Reads the rendition's playlist once and copies every segment it lists that the copy
    /// has not: checked, stored, listed. The variant's media time is the fetch's progress.
    private func copyListed(_ rendition: inout Rendition, tellsProgress: Bool, counts: inout (fetched: Int, resumed: Int)) throws {
        guard !rendition.ended else { return }
        let playlist = try rendition.first ?? parsePlaylist(rendition.url)
        rendition.first = nil
        try rendition.copy.ensureInit(mapURL: try mapURL(playlist, base: rendition.url), http: http)
        let (sequence, targetDuration) = try Self.numbering(playlist, url: rendition.url)
        if tellsProgress {
            progress.total = rendition.copy.seconds + playlist.segments.dropFirst(max(0, rendition.copy.next - sequence)).reduce(0) { $0 + ($1.duration ?? 0) }
        }
        let ownMap = playlist.mapURI
        let listedBefore = rendition.copy.next
        var full = false
        for (index, segment) in playlist.segments.enumerated() {
            let number = sequence + index
            guard number >= rendition.copy.next else { continue }
            guard kept < options.maxBytes else {
                full = true
                say("fetch: the copy holds \(kept >> 20) MiB, --max-bytes: it ends at \(intSaturating(rendition.copy.seconds)) s of media")
                break
            }
            guard segment.map == ownMap else {
                throw FetchError("\(rendition.url): segment \(number) needs another init segment (EXT-X-MAP \(segment.map ?? "")): "
                    + "the stream changed its picture there; fetch a lower variant (--max-bitrate, --max-size)")
            }
            var ends: LocalCopy.Span?
            if rendition.copy.has(number) {
                counts.resumed += 1
                kept += FileSystem.size(rendition.copy.path(number)) ?? 0
            } else {
                let url = Self.resolve(segment.uri, against: rendition.url)
                ends = try withRetries { try rendition.copy.fetch(number, from: url, http: http, discontinuity: segment.discontinuity) }
                kept += FileSystem.size(rendition.copy.path(number)) ?? 0
                counts.fetched += 1
            }
            try rendition.copy.listed(number, segment, ends: ends)
            if tellsProgress {
                progress.advance(to: rendition.copy.seconds, fetchedNow: segment.duration ?? 0, resumed: !rendition.copy.fetchedThisRun(number))
            }
        }
        rendition.targetDuration = targetDuration
        rendition.grew = rendition.copy.next != listedBefore
        rendition.ended = playlist.isEnded || full
        try rendition.copy.writePlaylists(ended: rendition.ended, targetDuration: rendition.targetDuration)
    }

    /// A playlist's first media sequence number and its target duration, checked before
    /// any arithmetic: every segment's number (sequence + its index, + 1 for the next) must
    /// fit an Int, and a target duration is at most `HLSValue.longestDuration` (a year).
    static func numbering(_ playlist: ParsedPlaylist, url: String) throws -> (sequence: Int, targetDuration: Int) {
        let text = playlist.value("EXT-X-MEDIA-SEQUENCE")
        guard let sequence = text.map(HLSValue.integer) ?? 0, sequence < Int.max - playlist.segments.count else {
            throw FetchError("\(url): EXT-X-MEDIA-SEQUENCE:\(text?.prefix(40) ?? "") is not a sequence number its \(playlist.segments.count) segments can follow")
        }
        let target = playlist.value("EXT-X-TARGETDURATION")
        guard let targetDuration = target.map(HLSValue.integer) ?? 2, Double(targetDuration) <= HLSValue.longestDuration else {
            throw FetchError("\(url): EXT-X-TARGETDURATION:\(target?.prefix(40) ?? "") is not a number of seconds up to a year")
        }
        return (sequence, targetDuration)
    }

    /// The copy as one progressive movie: the variant's segments, and the sound's beside
    /// them where it is a rendition of its own — each sound segment after the picture
    /// segment it starts within, as the device's own export of a ladder orders them.
    func movie(_ copies: [LocalCopy], scratch: String) throws -> JoinedFile {
        guard copies.count == 2 else { return try StreamExport.movie(initSegment: copies[0].initSegment, segments: copies[0].files.map(\.path), scratch: scratch) }
        let (pictures, sound) = (copies[0], copies[1])
        guard pictures.trackCount == 1, sound.trackCount == 1 else {
            throw FetchError("\(options.url): a variant and an audio rendition of one track each can be joined; these have \(pictures.trackCount) and \(sound.trackCount)")
        }
        var files: [(path: String, track: Int?)] = []
        var next = 0
        for (k, file) in pictures.files.enumerated() {
            files.append((file.path, 0))
            let end = k + 1 < pictures.files.count ? file.start + file.duration : .infinity
            while next < sound.files.count, sound.files[next].start < end {
                files.append((sound.files[next].path, 1))
                next += 1
            }
        }
        return try StreamExport.movie(inits: [pictures.initSegment, sound.initSegment], segments: files, scratch: scratch)
    }

    func parsePlaylist(_ url: String) throws -> ParsedPlaylist {
        let bytes = try withRetries { try http.get(url, limit: Self.playlistLimit) }
        guard bytes.starts(with: Array("#EXTM3U".utf8)) || bytes.starts(with: [0xEF, 0xBB, 0xBF] + Array("#EXTM3U".utf8)) else {
            throw FetchError("\(url): not an HLS playlist (no #EXTM3U)")
        }
        return ParsedPlaylist(text: String(decoding: bytes, as: UTF8.self))
    }

    /// The init segment's URL (EXT-X-MAP); a stream without one is MPEG-TS.
    func mapURL(_ playlist: ParsedPlaylist, base: String) throws -> String {
        guard let map = playlist.mapURI else {
            throw FetchError("\(base): MPEG-TS segments are not supported (onair fetches fragmented-MP4 HLS, which has EXT-X-MAP)")
        }
        return Self.resolve(map, against: base)
    }

    /// `body`, tried up to `attempts` times while it fails in a way that may pass (no
    /// answer, a 5xx, 408, 429, a segment that did not check — it must continue the one
    /// before it, onair's HLS rules: every track's tfdt where the previous segment ended,
    /// unless EXT-X-DISCONTINUITY says otherwise); the last failure, said so.
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
        if [StreamLayout.index, StreamLayout.playlist, "master.m3u8", "main.m3u8"].contains(name), path.count > 2 { name = path[path.count - 2] }
        if name.hasSuffix(".m3u8") { name = String(name.dropLast(5)) }
        let safe = String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" })
        return safe.isEmpty || safe.hasPrefix(".") ? "stream" + safe : safe
    }
}
