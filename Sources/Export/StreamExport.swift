import Basics
import Files
import HLS
import Layout
import Media
import MP4

/// Why an export cannot be made, as an HTTP status and one line.
public struct ExportError: Error, CustomStringConvertible, Equatable {
    public var status: UInt32
    public var description: String
    public init(_ status: UInt32, _ description: String) {
        self.status = status
        self.description = description
    }
}

/// `GET /api/export?stream=<id>&start=<s>&end=<s>` (or `from=`/`to=` in ISO 8601, when
/// the stream has program date-times, or `last=<s>`: the end of it): which stream, and
/// which part of it.
public struct ExportRequest: Sendable, Equatable {
    /// A stream's id; empty when `recording` is asked for.
    public var stream: String
    /// A finished recording's id (`recording=`), instead of a stream.
    public var recording: String?
    /// Seconds of media from the stream's start; nil: from the start, to the end.
    public var start: Double?
    public var end: Double?
    /// Wall-clock ms since the epoch, mapped through the stream's program date-times.
    public var from: Int64?
    public var to: Int64?
    /// The last seconds of media (of a live stream: up to its newest segment).
    public var last: Double?
    /// A ladder's rung: the highest bit rate not above `maxBitrate`, no larger than
    /// `maxSize` (`VariantChoice`); the top one without either.
    public var maxBitrate: Int?
    public var maxSize: PictureSize?

    public init(stream: String, start: Double? = nil, end: Double? = nil, from: Int64? = nil, to: Int64? = nil, last: Double? = nil) {
        self.stream = stream
        self.last = last
        self.start = start
        self.end = end
        self.from = from
        self.to = to
    }

    /// A finished recording, or part of it.
    public static func recording(_ id: String, start: Double? = nil, end: Double? = nil, last: Double? = nil) -> ExportRequest {
        var request = ExportRequest(stream: "", start: start, end: end, last: last)
        request.recording = id
        return request
    }

    /// From a URL's query arguments; a value that is not a number or a date is a 400.
    public init(arguments: (String) -> String?) throws {
        let recording = arguments("recording").flatMap { $0.isEmpty ? nil : $0 }
        guard let stream = arguments("stream").flatMap({ $0.isEmpty ? nil : $0 }) ?? recording.map({ _ in "" }) else {
            throw ExportError(400, "stream= or recording= is required (an id from /api/streams or /api/recordings)")
        }
        func seconds(_ name: String) throws -> Double? {
            guard let text = arguments(name) else { return nil }
            guard let value = MediaSeconds(parsing: text) else {
                throw ExportError(400, "\(name)=\(text.prefix(40)) is not a number of seconds from 0 to \(Int(MediaSeconds.limit))")
            }
            return value.value
        }
        func date(_ name: String) throws -> Int64? {
            guard let text = arguments(name) else { return nil }
            guard let value = UTCDate.parse(text) else { throw ExportError(400, "\(name)=\(text.prefix(40)) is not an ISO 8601 date") }
            return value
        }
        try self.init(stream: stream, start: seconds("start"), end: seconds("end"), from: date("from"), to: date("to"),
                      last: seconds("last"))
        self.recording = recording
        if let text = arguments("max_bitrate") {
            guard let value = Int(text), value > 0 else { throw ExportError(400, "max_bitrate=\(text.prefix(40)) is not a number of bits per second") }
            maxBitrate = value
        }
        if let text = arguments("max_size") {
            guard let size = PictureSize(parsing: text) else { throw ExportError(400, "max_size=\(text.prefix(40)) is not WIDTHxHEIGHT") }
            maxSize = size
        }
    }
}

/// One progressive MP4 (`moov` first, so it plays and seeks while it downloads) of a
/// stored HLS stream, cut at segment boundaries — each segment starts with an IDR — from
/// the one holding `start` to the one holding `end`, made from the stored segments
/// without re-encoding. The sample tables are written to scratch files as the segments'
/// `moof`s are read, once, so a two-hour export holds no more in memory than a
/// two-minute one; the answer is a `JoinedFile`: that header, then every segment's media.
public enum StreamExport {
    public struct Result {
        public var file: JoinedFile
        /// `<id>.mp4`, or `<id>_<start>-<end>s.mp4` for a part.
        public var name: String
        /// The media actually exported, seconds from the stream's start.
        public var start: Double
        public var end: Double
        public var segments: Int
    }

    public static func make(root: String, _ request: ExportRequest) throws -> Result {
        if let recording = request.recording {
            guard request.from == nil && request.to == nil else { throw ExportError(400, "a recording is cut by start=, end= or last= (seconds)") }
            return try RecordingExport.make(root: root, id: recording, start: request.start, end: request.end, last: request.last)
        }
        let id = request.stream
        guard StreamLayout.isID(id) else { throw ExportError(400, "stream=\(id.prefix(40)) is not a stream id") }
        let directory = StreamLayout(root: root).stream(id)
        if let index = FileSystem.readText(directory + "/" + StreamLayout.index, followLinks: false), StreamLayout.mainPlaylist(index: index).contains("/") {
            return try ladder(root: root, id: id, index: index, request)
        }
        guard let text = FileSystem.readText(directory + "/" + StreamLayout.playlist, followLinks: false),
              let initBytes = FileSystem.read(directory + "/" + StreamLayout.initSegment, followLinks: false) else {
            throw ExportError(404, "no stream \(id)")
        }
        let segments = ParsedPlaylist(text: text).segments
        guard !segments.isEmpty else { throw ExportError(404, "stream \(id) has no segment yet") }
        let chosen = try choose(segments, request)
        let file: JoinedFile
        do {
            file = try movie(initSegment: initBytes, segments: chosen.range.map { directory + "/" + segments[$0].uri },
                             scratch: root + "/.export")
        } catch {
            throw ExportError(500, "stream \(id): \(error)")
        }
        let whole = chosen.range.count == segments.count
        let name = whole ? "\(id).mp4" : "\(id)_\(Self.label(chosen.start))-\(Self.label(chosen.end))s.mp4"
        return Result(file: file, name: name, start: chosen.start, end: chosen.end, segments: chosen.range.count)
    }

    /// One progressive movie of an init segment and fragment files (each `moof`+`mdat`
    /// pairs), in order: a stream's segments, or a fetched copy's.
    public static func movie(initSegment: [UInt8], segments: [String], scratch: String) throws -> JoinedFile {
        try movie(inits: [initSegment], segments: segments.map { ($0, nil) }, scratch: scratch)
    }

    /// The same from several renditions (a ladder's rung and its sound): each init's
    /// tracks numbered after the ones before, each segment's samples put in track `track`
    /// (an index into all the inits' tracks) or, without one, the track of its id.
    public static func movie(inits: [[UInt8]], segments: [(path: String, track: Int?)], scratch: String) throws -> JoinedFile {
        var tracks: [MovieTrack] = [], trex: [ParsedInit.Trex] = []
        do {
            for initSegment in inits {
                for var track in try FragmentedFile.movieTracks(inInit: initSegment) {
                    if inits.count > 1 { track.description.trackID = UInt32(tracks.count + 1) }
                    tracks.append(track)
                }
                // Defaults another packager's fragments may lean on (onair's say everything).
                if trex.isEmpty { trex = try ParsedInit(bytes: initSegment).trex }
            }
        } catch { throw MovieError.unreadable(file: StreamLayout.initSegment, reason: "\(error)") }
        var plan = try Planner(tracks: tracks, trex: trex, scratch: scratch)
        for (path, track) in segments {
            do { try plan.add(segmentAt: path, track: track) } catch let error as FileError { throw error } catch {
                throw MovieError.unreadable(file: path.split(separator: "/").suffix(2).joined(separator: "/"), reason: "\(error)")
            }
        }
        return try plan.finish()
    }

    /// A ladder stream: the rung `VariantChoice` picks (the top one unless max_bitrate or
    /// max_size say otherwise), its segments side by side with its audio rendition's, cut
    /// where the rung's are (every rendition's segment k holds the same moment). Where the
    /// heat dropped that rung for part of the range (it carried the next rung's pictures,
    /// under that rung's init), the highest rung below it that was encoded throughout.
    static func ladder(root: String, id: String, index text: String, _ request: ExportRequest) throws -> Result {
        let directory = StreamLayout(root: root).stream(id)
        let top = ParsedPlaylist(text: text)
        guard let (picked, _) = VariantChoice.choose(top.variants, maxBitrate: request.maxBitrate, maxSize: request.maxSize),
              let index = MultivariantPlaylist(parsing: text) else { throw ExportError(500, "stream \(id): \(StreamLayout.index) is not readable") }
        func rendition(_ uri: String) throws -> (folder: String, initSegment: [UInt8], playlist: ParsedPlaylist) {
            let folder = StreamLayout.folder(of: uri)
            let playlist = FileSystem.readText(directory + "/" + uri, followLinks: false).map { ParsedPlaylist(text: $0) }
            guard let playlist, let initBytes = playlist.mapURI.flatMap({ FileSystem.read("\(directory)/\(folder)/\($0)", followLinks: false) }) else {
                throw ExportError(404, "stream \(id) has no \(uri)")
            }
            return (folder, initBytes, playlist)
        }
        var variant = picked
        var pictures = try rendition(picked.uri)
        let audio = index.variants.first { $0.uri == picked.uri }?.audioGroup.flatMap { group in index.audio.first { $0.groupID == group } }
        let sound = try audio.map { try rendition($0.uri) }
        // Up to the newest segment every rendition has (the sound's is cut a moment later).
        let count = min(pictures.playlist.segments.count, sound?.playlist.segments.count ?? .max)
        guard count > 0 else { throw ExportError(404, "stream \(id) has no segment yet") }
        let chosen = try choose(Array(pictures.playlist.segments.prefix(count)), request)
        // A carried segment names another rung's init; the lowest rung is never dropped.
        var lower = VariantChoice.below(picked, in: top.variants)[...]
        while !(pictures.playlist.segments.count >= count && pictures.playlist.ownInitThroughout(chosen.range)), let next = lower.popFirst() {
            variant = next
            pictures = try rendition(next.uri)
        }
        var files: [(path: String, track: Int?)] = []
        for k in chosen.range {
            files.append(("\(directory)/\(pictures.folder)/\(pictures.playlist.segments[k].uri)", 0))
            if let sound { files.append(("\(directory)/\(sound.folder)/\(sound.playlist.segments[k].uri)", 1)) }
        }
        let file: JoinedFile
        do {
            file = try movie(inits: [pictures.initSegment] + (sound.map { [$0.initSegment] } ?? []), segments: files, scratch: root + "/.export")
        } catch {
            throw ExportError(500, "stream \(id): \(error)")
        }
        let size = variant.attributes["RESOLUTION"].map { "_" + $0 } ?? ""
        let whole = chosen.range.count == count
        let name = whole ? "\(id)\(size).mp4" : "\(id)\(size)_\(Self.label(chosen.start))-\(Self.label(chosen.end))s.mp4"
        return Result(file: file, name: name, start: chosen.start, end: chosen.end, segments: chosen.range.count)
    }

    /// A file that is not the fragmented MP4 it should be.
    public enum MovieError: Error, CustomStringConvertible {
        case unreadable(file: String, reason: String)

        public var description: String {
            switch self {
            case .unreadable(let file, let reason): return "\(file) is not readable (\(reason))"
            }
        }
    }

    /// The segments from the one holding `start` to the one holding `end`, with their
    /// media times.
    static func choose(_ segments: [ParsedPlaylist.Segment], _ request: ExportRequest) throws
        -> (range: ClosedRange<Int>, start: Double, end: Double) {
        var starts: [Double] = []
        var total = 0.0
        for segment in segments {
            starts.append(total)
            total += segment.duration ?? 0
        }
        func media(_ ms: Int64, _ name: String) throws -> Double {
            // The last dated segment that starts at or before it (dates begin mid-stream
            // when the clock was synchronised late).
            let dated = segments.indices.compactMap { i in segments[i].programDateTime.flatMap(UTCDate.parse).map { (i, $0) } }
            guard let first = dated.first else {
                throw ExportError(400, "\(name)= needs program date-times, and this stream has none (its clock was not synchronised): use start= and end= in seconds")
            }
            let (index, date) = dated.last { $0.1 <= ms } ?? first
            return max(0, starts[index] + Double(ms - date) / 1000)
        }
        let start = try request.start ?? request.from.map { try media($0, "from") } ?? request.last.map { max(0, total - $0) } ?? 0
        let end = try request.end ?? request.to.map { try media($0, "to") } ?? total
        guard start < total else { throw ExportError(400, "start \(Self.label(start)) s is past the stream's end (\(Self.label(total)) s)") }
        guard start <= end else { throw ExportError(400, "start (\(Self.label(start)) s) is after end (\(Self.label(end)) s)") }
        let first = starts.lastIndex { $0 <= start } ?? 0
        let last = max(first, starts.indices.first { starts[$0] + (segments[$0].duration ?? 0) >= end } ?? segments.count - 1)
        return (first...last, starts[first], starts[last] + (segments[last].duration ?? 0))
    }

    /// Seconds for a file name and a message (`12`, `12.5`): any Double, even one that
    /// came from outside unchecked, prints without trapping.
    static func label(_ seconds: Double) -> String {
        let rounded = (seconds * 1000).rounded() / 1000
        return Int64(exactly: rounded).map(String.init) ?? String(rounded)
    }
}
