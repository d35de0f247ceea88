import Basics
import Export
import Files
import HLS
import Layout
import MP4
import System

/// The fetched pieces on disk: `init.mp4`, `seg/<media sequence number>.m4s` (each
/// written whole and renamed, so a name always means a complete, checked segment), and
/// `playlist.m3u8` listing them for any player, offline.
struct LocalCopy {
    let work: String
    private var tracks: [MovieTrack] = []
    private var trex: [ParsedInit.Trex] = []
    private(set) var initSegment: [UInt8] = []
    /// Per track, where the next segment's tfdt must be.
    private var expected: [UInt32: Int64] = [:]
    private var entries: [(number: Int, segment: ParsedPlaylist.Segment, start: Double, duration: Double)] = []
    private var fetched: Set<Int> = []
    /// The next media sequence number not yet listed.
    private(set) var next = 0
    private(set) var seconds = 0.0

    init(work: String) { self.work = work }

    /// Where segment `number` is kept: named as onair names its own.
    func path(_ number: Int) -> String { work + "/" + StreamLayout.segment(number) }

    func has(_ number: Int) -> Bool { FileSystem.exists(path(number)) }
    var trackCount: Int { tracks.count }
    /// The segments listed so far, in order, each with its media time (from its tfdt,
    /// seconds) — what lines a variant's segments up with its sound's.
    var files: [(path: String, start: Double, duration: Double)] { entries.map { (path($0.number), $0.start, $0.duration) } }
    func fetchedThisRun(_ number: Int) -> Bool { fetched.contains(number) }

    mutating func ensureInit(mapURL: String, http: Getter) throws {
        guard initSegment.isEmpty else { return }
        let path = work + "/" + StreamLayout.initSegment
        var bytes = FileSystem.read(path, limit: FileSystem.smallLimit) ?? []
        if bytes.isEmpty { bytes = try http.get(mapURL, limit: FileSystem.smallLimit) }
        do {
            tracks = try FragmentedFile.movieTracks(inInit: bytes)
            trex = try ParsedInit(bytes: bytes).trex
        } catch {
            throw FetchError("\(mapURL): not an fMP4 init segment (\(error))")
        }
        if !FileSystem.exists(path) { try AtomicFile.write(bytes, to: path) }
        initSegment = bytes
    }

    /// Where each track of a segment starts (its tfdt) and ends (+ its samples' durations).
    struct Span {
        var starts: [UInt32: Int64] = [:]
        var ends: [UInt32: Int64] = [:]
    }

    /// Fetches segment `number` from `url` into its file as it arrives — never held in
    /// memory whole, whatever its size — and checks it there before its name is given
    /// (AtomicFile: a file that does not check is never renamed into place). Where it
    /// starts and ends each track, or why it cannot be the next segment.
    mutating func fetch(_ number: Int, from url: String, http: Getter, discontinuity: Bool) throws -> Span {
        var span = Span()
        try AtomicFile.write(to: path(number)) { fd, temporary in
            try http.download(url, limit: FileSystem.segmentLimit, into: fd, path: temporary)
            let (reader, size) = try FileSystem.openRegularNamed(temporary)
            switch check(reader, size: size, path: temporary, discontinuity: discontinuity) {
            case .success(let ends): span = ends
            case .failure(let why): throw FetchError("\(url): \(why)")
            }
        }
        fetched.insert(number)
        return span
    }

    /// Where the segment in `fd` (`size` bytes) starts and ends each track, or why it
    /// cannot be the next segment; only its moof boxes are read into memory.
    func check(_ fd: FileDescriptor, size: Int64, path: String, discontinuity: Bool) -> Result<Span, FetchError> {
        let trafs: [ParsedSegment.TrackFragment]
        do {
            trafs = try ParsedSegment.trackFragments(size: size, trex: trex) { offset, count in
                try? FileSystem.read(fd, at: offset, count: count, path: path)
            }
        } catch { return .failure(FetchError("not an fMP4 media segment (\(error))")) }
        guard !trafs.isEmpty else { return .failure(FetchError("no moof")) }
        var ends = Span()
        for traf in trafs {
            guard let span = traf.decodeSpan else { return .failure(FetchError("track \(traf.trackID): tfdt \(traf.baseDecodeTime) is out of range")) }
            if ends.starts[traf.trackID] == nil { ends.starts[traf.trackID] = span.lowerBound }
            ends.ends[traf.trackID] = span.upperBound
            guard !discontinuity, let want = expected[traf.trackID], let track = tracks.first(where: { $0.trackID == traf.trackID }) else { continue }
            // Within 10 ms: packagers round the audio's start to their own sample grid.
            // (Both are in 0..<2^63: their difference cannot overflow.)
            if abs(span.lowerBound - want) > Int64(track.timescale) / 100 {
                return .failure(FetchError("track \(traf.trackID) starts at tfdt \(traf.baseDecodeTime), where the previous segment ended at \(want)"))
            }
        }
        return .success(ends)
    }

    /// Counts a segment now on disk into the copy and the continuity check: `ends` as
    /// `check` found them, or read again from a segment an earlier run stored.
    mutating func listed(_ number: Int, _ segment: ParsedPlaylist.Segment, ends known: Span?) throws {
        var ends = known
        if ends == nil, let (fd, size) = try? FileSystem.openRegular(path(number)),
           case .success(let found) = check(fd, size: size, path: path(number), discontinuity: true) { ends = found }
        guard let ends else { throw FetchError("\(path(number)): unreadable") }
        expected.merge(ends.ends) { $1 }
        let starts = ends.starts.compactMap { id, tfdt in tracks.first { $0.trackID == id }.map { Double(tfdt) / Double($0.timescale) } }
        entries.append((number, segment, starts.min() ?? seconds, segment.duration ?? 0))
        next = number + 1
        seconds += segment.duration ?? 0
    }

    /// `playlist.m3u8`: the segments so far, under their local names.
    func writePlaylists(ended: Bool, targetDuration: Int) throws {
        var playlist = MediaPlaylist(targetDuration: targetDuration)
        playlist.mediaSequence = entries.first?.number ?? 0
        for (number, segment, _, _) in entries {
            let duration = segment.extinf.map { String($0.prefix { $0 != "," }) } ?? "0"
            playlist.entries.append(.init(uri: StreamLayout.segment(number), duration: duration,
                                          programDateTimeMs: segment.programDateTime.flatMap(UTCDate.parse),
                                          discontinuity: segment.discontinuity))
        }
        playlist.isEnded = ended
        try AtomicFile.write(Array(playlist.render().utf8), to: work + "/" + StreamLayout.playlist)
    }

    /// A fetched movie at `out`, written whole, then renamed.
    static func write(_ movie: JoinedFile, to out: String) throws {
        try AtomicFile.makeDirectories(AtomicFile.directory(of: out))
        try AtomicFile.write(to: out) { fd, temporary in
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var offset: Int64 = 0
            while offset < movie.size {
                let n = try buffer.withUnsafeMutableBytes { try movie.read(at: offset, into: $0.baseAddress!, count: $0.count) }
                try buffer.withUnsafeBytes { try AtomicFile.writeAll(fd, UnsafeRawBufferPointer(rebasing: $0[0..<n]), path: temporary) }
                offset += Int64(n)
            }
        }
    }

    func remove() throws { try FileSystem.remove(work) }
}
