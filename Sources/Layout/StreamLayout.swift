/// Every name onair gives to what it keeps: the data directory (`streams/`, `recordings/`,
/// `published/`), a stream's directory (index.m3u8, each rendition's playlists, init and
/// `seg/`, the parts the server makes up, the hidden staging and temporary names, files
/// set aside) and what a site publishes beside the streams. A value, no I/O: the writer,
/// recovery, the storage keeper, the server, export, fetch, the catalog and the publisher
/// all ask it, so no other file spells a name (docs/ARCHITECTURE.md, The data directory).
///
///     <root>/streams/<id>/index.m3u8          the multivariant playlist
///                        /playlist.m3u8       one muxed variant: its media playlist,
///                        /iframes.m3u8        its I-frame playlist (§4.4.3.6),
///                        /init.mp4            its init segment,
///                        /seg/000001.m4s      its segments
///                        /v0/…, /v1/…, /audio/…   a ladder: each rendition in its folder
///                        /.published          what a destination has confirmed
///           /.<id>.tmp/                       a stream before its first segment
///     <root>/recordings/<id>.mp4 (.json beside it; .mp4.part while written)
///     <root>/published/<key>.json             the streams a destination lists
public struct StreamLayout: Sendable, Equatable {
    /// The data directory.
    public let root: String

    public init(root: String) { self.root = root }

    // MARK: The data directory

    public static let streamsFolder = "streams"
    public static let recordingsFolder = "recordings"
    public static let publishedFolder = "published"

    /// `<root>/streams`: every stream's directory.
    public var streams: String { root + "/" + Self.streamsFolder }
    /// `<root>/recordings`: the local recordings.
    public var recordings: String { root + "/" + Self.recordingsFolder }
    /// `<root>/published`: per destination, the streams it lists.
    public var published: String { root + "/" + Self.publishedFolder }

    /// `<root>/webrtc-certificate.pem`: the board's DTLS certificate and key (WebRTC), kept
    /// so browsers see the same fingerprint across restarts; readable by onair alone.
    public var dtlsCertificate: String { root + "/webrtc-certificate.pem" }

    /// `<root>/onvif-nonces`: the nonces of ONVIF requests already taken, one hex line
    /// each, so a captured request is not taken again after a restart.
    public var onvifNonces: String { root + "/onvif-nonces" }

    /// The index of the streams one destination lists (`PublishedIndex`), by its key.
    public func publishedIndex(_ key: String) -> String { published + "/" + key + ".json" }

    /// A stream's directory, once its first segment is stored.
    public func stream(_ id: String) -> String { streams + "/" + id }
    /// Where a stream is made until its first segment is stored (hidden, so no reader
    /// lists it; renamed to `stream(id)` in one step).
    public func staging(_ id: String) -> String { streams + "/" + Self.temporary(id) }
    /// A file of a stream: `file(id, "v0/playlist.m3u8")`.
    public func file(_ id: String, _ name: String) -> String { stream(id) + "/" + name }

    /// Every path a stream or recording of `id` takes: an id is free when none exists.
    public func paths(of id: String) -> [String] {
        [stream(id), staging(id), recording(id), recordingPart(id), recordingInfo(id)]
    }

    /// A finished recording: a progressive MP4, `moov` first.
    public func recording(_ id: String) -> String { recordings + "/" + id + Self.recordingSuffix }
    /// The recording being written (fragmented, as the encoder makes it).
    public func recordingPart(_ id: String) -> String { recording(id) + Self.partSuffix }
    /// What a finished recording is (start, length, priority), beside it.
    public func recordingInfo(_ id: String) -> String { recordings + "/" + id + ".json" }
    public static let recordingSuffix = ".mp4"
    public static let partSuffix = ".part"
    /// The id of a finished recording's (`.mp4`) or a recording being written's (`.mp4.part`)
    /// file name; nil for anything else.
    public static func recordingID(_ name: String) -> (id: String, finished: Bool)? {
        if name.hasSuffix(recordingSuffix + partSuffix) { return (String(name.dropLast((recordingSuffix + partSuffix).count)), false) }
        if name.hasSuffix(recordingSuffix) { return (String(name.dropLast(recordingSuffix.count)), true) }
        return nil
    }

    /// Whether a name from outside (a query, an argument) can be a stream's or recording's
    /// id: one name, not hidden, so it names nothing but that stream's own files.
    public static func isID(_ id: String) -> Bool { !id.isEmpty && !id.hasPrefix(".") && !id.contains("/") && !id.contains("\0") }

    /// The stream ids among the names in `streams/`: hidden names are staging, temporary
    /// or set aside, never a stream.
    public static func streamIDs(_ names: [String]) -> [String] { names.filter { !$0.hasPrefix(".") }.sorted() }
    /// The staged streams among those names.
    public static func stagings(_ names: [String]) -> [String] { names.filter(isTemporary) }

    // MARK: A stream's directory

    /// The multivariant playlist (RFC 8216bis §4.4.6).
    public static let index = "index.m3u8"
    /// A rendition's media playlist.
    public static let playlist = "playlist.m3u8"
    /// A rendition's I-frame playlist (§4.4.3.6).
    public static let iFrames = "iframes.m3u8"
    /// A rendition's init segment (EXT-X-MAP).
    public static let initSegment = "init.mp4"
    /// The folder of a rendition's segments.
    public static let segmentFolder = "seg"
    /// What a destination has confirmed of the stream (the publisher's journal).
    public static let journal = ".published"
    /// A ladder's sound rendition, and its GROUP-ID.
    public static let audio = "audio"
    /// The names recovery finds in a stream a kill left before its first segment.
    public static let beforeFirstSegment: Set<String> = [index, initSegment]

    /// The file name of segment `sequence`: `seg/000001.m4s`.
    public static func segment(_ sequence: Int) -> String { segmentFolder + "/" + sixDigits(sequence) + ".m4s" }

    /// A ladder's rung `n` (0 is the top): `v0`.
    public static func rung(_ n: Int) -> String { "v\(n)" }

    /// A file of a rendition, as the stream's directory names it (`v0` + `init.mp4` →
    /// `v0/init.mp4`; the folder of a one-variant stream is "").
    public static func path(_ name: String, in folder: String) -> String { folder.isEmpty ? name : folder + "/" + name }

    /// The last component of a path (`v0/seg/000001.m4s` → `000001.m4s`).
    public static func name(of path: String) -> Substring { path.split(separator: "/").last ?? Substring(path) }

    /// The folder of a file the stream's directory names (`v0/playlist.m3u8` → `v0`).
    public static func folder(of path: String) -> String { path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "" }

    /// The EXT-X-MAP a rung's playlist names for the segments it carries of the rung in
    /// `folder` (the heat dropped it): that rung's init, from beside it.
    public static func carriedMap(from folder: String) -> String { "../" + path(initSegment, in: folder) }

    /// `part/000012.3.m4s`: part 3 of segment 12 (served from memory, never stored).
    public static func part(sequence: Int, index: Int) -> String { "part/" + sixDigits(sequence) + ".\(index).m4s" }

    /// The segment and part a `part` name gives; nil for anything else (up to nine digits
    /// each, so no number a request makes up can overflow).
    public static func partNumbers(_ uri: some StringProtocol) -> (sequence: Int, index: Int)? {
        guard uri.hasPrefix("part/"), uri.hasSuffix(".m4s") else { return nil }
        let numbers = uri.dropFirst(5).dropLast(4).split(separator: ".", omittingEmptySubsequences: false)
        guard numbers.count == 2, numbers.allSatisfy({ !$0.isEmpty && $0.count <= 9 && $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }),
              let sequence = Int(numbers[0]), let index = Int(numbers[1]) else { return nil }
        return (sequence, index)
    }

    /// The media playlist that tells a stream's time and segments, given the text of its
    /// index.m3u8: the first variant's, the URI line after the first EXT-X-STREAM-INF
    /// (RFC 8216bis §4.4.6.2; `v0/playlist.m3u8` in a ladder), else `playlist.m3u8`. Only a
    /// name inside the stream's directory is taken.
    public static func mainPlaylist(index text: String?) -> String {
        var afterStreamInf = false
        for raw in (text ?? "").split(whereSeparator: \.isNewline) {
            var line = raw.drop { $0 == " " || $0 == "\t" }
            while let last = line.last, last == " " || last == "\t" { line = line.dropLast() }
            let text = String(line)
            if text.hasPrefix("#EXT-X-STREAM-INF:") { afterStreamInf = true; continue }
            guard afterStreamInf, !text.isEmpty, !text.hasPrefix("#") else { continue }
            let inside = !text.hasPrefix("/") && !text.contains("://") && !text.split(separator: "/").contains("..")
            return inside ? text : playlist
        }
        return playlist
    }

    /// The URL paths the server maps the data directory's folders to.
    public static let streamsURL = "/" + streamsFolder + "/"
    public static let recordingsURL = "/" + recordingsFolder + "/"
    /// The URL path a stream is watched at.
    public static func url(ofStream id: String) -> String { streamsURL + id + "/" + index }

    // MARK: Names of every folder

    /// Where a file is written before it is renamed into place (`AtomicFile`), and a
    /// stream is made before its first segment: hidden beside it, so a leftover one is
    /// always something a kill cut short.
    public static func temporary(_ name: String) -> String { "." + name + ".tmp" }
    public static func isTemporary(_ name: some StringProtocol) -> Bool { name.hasPrefix(".") && name.hasSuffix(".tmp") }

    /// Where a file onair cannot use is moved, beside it, for a person to look at.
    public static func corrupt(_ path: String) -> String { path + ".corrupt" }
    public static let corruptNote = "renamed to .corrupt"

    // MARK: What a site publishes beside the streams

    /// A device's list of streams, in its folder at the destination.
    public static let catalog = "streams.json"
    /// The fleet's list of devices, at the top of the destination.
    public static let devices = "devices.json"
    /// The viewer page.
    public static let viewerPage = "index.html"
    /// The newest picture of a live board, in its folder: the published viewer's poster,
    /// so the fleet page shows each live board before its player starts.
    public static let poster = "poster.jpg"

    private static func sixDigits(_ n: Int) -> String {
        let digits = String(n)
        return digits.count >= 6 ? digits : String(repeating: "0", count: 6 - digits.count) + digits
    }
}
