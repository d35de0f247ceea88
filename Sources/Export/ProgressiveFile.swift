import Files
import Media
import MP4
import System

/// A progressive MP4 (onair's finished recording, `moov` first) read from its descriptor:
/// the small boxes of each track in memory, its sample tables only as places in the file
/// (ISO/IEC 14496-12 §8.6.1.2 stts, §8.6.1.3 ctts, §8.6.2 stss, §8.7.3 stsz, §8.7.4 stsc,
/// §8.7.5 stco/co64), read through `TableCursor`s when a part is cut out.
struct ProgressiveFile {
    struct Track {
        var description: TrackDescription
        var mediaDuration: Int64 = 0
        /// The first edit: media time shown at movie time `empty` (track ticks).
        var mediaTime: Int64 = 0
        var empty: Int64 = 0
        /// Where each table's entries begin, and how many there are.
        var tables: [String: (start: Int64, count: Int)] = [:]
        /// stsz's sample_size: every sample this size when not 0.
        var fixedSize: UInt32 = 0

        /// A media time on the movie's timeline, in track ticks.
        func movieTime(_ media: Int64) -> Int64 { media - mediaTime + empty }
    }

    let fd: FileDescriptor
    var tracks: [Track] = []
    var movieTimescale: Int64 = 1000

    /// Seconds of video (else of the first track).
    var seconds: Double {
        guard let track = tracks.first(where: { $0.description.handler == "vide" }) ?? tracks.first else { return 0 }
        return Double(track.mediaDuration) / Double(track.description.timescale)
    }

    init(fd: FileDescriptor, size: Int64) throws {
        self.fd = fd
        let movie = try MovieBoxes(file: size, in: FileBoxSource(fd: fd))
        movieTimescale = movie.timescale
        tracks = try movie.tracks.map(track)
    }

    /// A track's boxes as the cutter uses them, its times checked.
    private func track(_ boxes: TrackBoxes) throws -> Track {
        let id = boxes.trackID
        guard boxes.timescale > 0, !boxes.sampleDescription.isEmpty else { throw MP4Error.missing("mdhd/stsd of track \(id)") }
        var track = Track(description: TrackDescription(trackID: id, handler: boxes.handler, timescale: boxes.timescale,
                                                        width: boxes.width, height: boxes.height, sampleDescription: boxes.sampleDescription))
        track.mediaDuration = Int64(clamping: boxes.mediaDuration)
        track.tables = boxes.tables
        track.fixedSize = boxes.fixedSampleSize
        // The empty edit is in movie ticks: moved to the track's.
        let empty = boxes.edits.first { $0.mediaTime == -1 }?.duration ?? 0
        track.empty = rescale(empty, from: movieTimescale, to: Int64(boxes.timescale))
        track.mediaTime = boxes.edits.first { $0.mediaTime != -1 }?.mediaTime ?? 0
        // Times this file gives are used in sums and differences: each within 2^60 ticks
        // (centuries at any 32-bit timescale), so none of them can overflow.
        let reachable: ClosedRange<Int64> = 0...(1 << 60)
        guard reachable.contains(track.mediaDuration), reachable.contains(track.empty),
              reachable.contains(track.mediaTime) else {
            throw MP4Error.badBox("track \(id) has a duration or edit past 2^60 ticks", at: Int(clamping: boxes.place.lowerBound))
        }
        return track
    }
}

/// A recording's or a segment's boxes, read from its descriptor a header at a time; a box's
/// bytes only when small (a header box: at most 1 MiB unless said).
struct FileBoxSource: BoxSource {
    let fd: FileDescriptor
    /// What errors call the file.
    var name = "recording"
    /// The largest box read whole (a header box: 1 MiB; a segment's moof may be more).
    var largest: Int64 = 1 << 20

    /// onair's own files: lenient with a size-0 box, as their readers always were.
    var sizeZeroAnywhere: Bool { true }

    func bytes(_ range: Range<Int64>) throws -> [UInt8] {
        guard Int64(range.count) <= largest else { throw MP4Error.badBox("a header box of \(range.count) bytes", at: Int(clamping: range.lowerBound)) }
        return try FileSystem.read(fd, at: range.lowerBound, count: range.count, path: name)
    }
}

extension ProgressiveFile {
    /// One track's samples in order, from its tables.
    struct Samples {
        let track: Track
        private var sizes: TableCursor?
        private var durations: TableCursor?
        private var offsets: TableCursor?
        private var syncs: TableCursor?
        private var durationRun: (left: UInt64, value: UInt32) = (0, 0)
        private var offsetRun: (left: UInt64, value: Int32) = (0, 0)
        private var nextSync: Int?
        private(set) var index = 0
        private(set) var decode: Int64 = 0
        let count: Int

        init(_ track: Track, fd: FileDescriptor) throws {
            self.track = track
            func cursor(_ name: String, _ size: Int) -> TableCursor? {
                track.tables[name].map { TableCursor(fd: fd, start: $0.start, count: $0.count, entrySize: size) }
            }
            count = track.tables["stsz"]?.count ?? 0
            sizes = track.fixedSize == 0 ? cursor("stsz", 4) : nil
            durations = cursor("stts", 8)
            offsets = cursor("ctts", 8)
            syncs = cursor("stss", 4)
            nextSync = try syncs?.next().map { Int($0[0]) - 1 }
        }

        /// The next sample and its decode time on the track's media timeline.
        mutating func next() throws -> (sample: MovieTrack.Sample, decode: Int64)? {
            guard index < count else { return nil }
            while durationRun.left == 0 {
                guard let run = try durations?.next() else { throw MP4Error.missing("stts entries for sample \(index + 1)") }
                durationRun = (run[0], UInt32(run[1]))
            }
            durationRun.left -= 1
            var offset: Int32 = 0
            if offsets != nil {
                while offsetRun.left == 0 {
                    guard let run = try offsets?.next() else { throw MP4Error.missing("ctts entries for sample \(index + 1)") }
                    offsetRun = (run[0], Int32(bitPattern: UInt32(run[1])))
                }
                offsetRun.left -= 1
                offset = offsetRun.value
            }
            var sync = true
            if syncs != nil {
                sync = nextSync == index
                if sync { nextSync = try syncs?.next().map { Int($0[0]) - 1 } }
            }
            let size = try sizes?.next().map { UInt32($0[0]) } ?? track.fixedSize
            let sample = MovieTrack.Sample(duration: durationRun.value, size: size, compositionOffset: offset, isSync: sync)
            let time = decode
            let (after, overflow) = decode.addingReportingOverflow(Int64(sample.duration))
            guard !overflow, after <= 1 << 60 else { throw MP4Error.badBox("stts of track \(track.description.trackID) runs past 2^60 ticks", at: 0) }
            index += 1
            decode = after
            return (sample, time)
        }
    }

    /// The samples from the sync sample at or before `from` (seconds of movie time) to the
    /// end of the GOP holding `to`, and the sound beside them, as one movie.
    func cut(from: Double, to: Double, path: String, scratch: String) throws -> (file: JoinedFile, start: Double, end: Double) {
        let reference = tracks.firstIndex { $0.description.handler == "vide" } ?? 0
        let scale = Int64(tracks[reference].description.timescale)
        // Pass 1, the picture: which samples, and the times they span.
        var video = try Samples(tracks[reference], fd: fd)
        var range = (first: 0, end: video.count)
        var times = (start: Int64(0), end: Int64(0))
        while let (sample, decode) = try video.next() {
            let time = tracks[reference].movieTime(decode)
            if sample.isSync && time <= ticksSaturating(seconds: from, timescale: scale) { range.first = video.index - 1; times.start = time }
            if sample.isSync && time > ticksSaturating(seconds: to, timescale: scale) && video.index - 1 > range.first {
                range.end = video.index - 1
                times.end = time
                break
            }
            times.end = time + Int64(sample.duration)
        }
        // Pass 2: the chunks in file order, each cut to what lies in the range.
        var plan = try Planner(tracks: tracks.map { MovieTrack($0.description, firstDecodeTime: 0) }, scratch: scratch)
        var walks = try tracks.map { track in try ChunkWalk(track, fd: fd) }
        while let index = walks.indices.filter({ walks[$0].nextOffset != nil }).min(by: { walks[$0].nextOffset! < walks[$1].nextOffset! }) {
            let track = tracks[index]
            let window = (rescale(times.start, from: scale, to: Int64(track.description.timescale)),
                          rescale(times.end, from: scale, to: Int64(track.description.timescale)))
            guard let chunk = try walks[index].nextChunk() else { continue }
            var skipped: Int64 = 0, taken: [MovieTrack.Sample] = [], firstTime: Int64?
            for _ in 0..<chunk.samples {
                guard let (sample, decode) = try walks[index].samples.next() else { break }
                let time = track.movieTime(decode)
                let number = walks[index].samples.index - 1
                let inside = index == reference ? (range.first..<range.end).contains(number)
                    : time + Int64(sample.duration) > window.0 && time < window.1
                if inside {
                    if firstTime == nil { firstTime = time }
                    taken.append(sample)
                } else if taken.isEmpty {
                    skipped += Int64(sample.size)
                }
            }
            if let firstTime, !taken.isEmpty {
                plan.addChunk(track: index, decode: firstTime, taken, path: path, offset: chunk.offset + skipped)
            }
        }
        return (try plan.finish(), Double(times.start) / Double(scale), Double(times.end) / Double(scale))
    }

    /// A track's chunks in order: where each is, and how many samples it holds (stsc).
    struct ChunkWalk {
        var samples: Samples
        private var offsets: TableCursor
        private var runs: TableCursor
        private var run: (first: Int, samples: Int) = (1, 0)
        private var upcoming: (first: Int, samples: Int)?
        private var chunk = 0
        private(set) var nextOffset: Int64?
        private let wide: Bool

        init(_ track: Track, fd: FileDescriptor) throws {
            samples = try Samples(track, fd: fd)
            wide = track.tables["co64"] != nil
            guard let table = track.tables["co64"] ?? track.tables["stco"], let stsc = track.tables["stsc"] else {
                throw MP4Error.missing("chunk tables of track \(track.description.trackID)")
            }
            offsets = TableCursor(fd: fd, start: table.start, count: table.count, entrySize: wide ? 8 : 4)
            runs = TableCursor(fd: fd, start: stsc.start, count: stsc.count, entrySize: 12)
            upcoming = try runs.next().map { (Int($0[0]), Int($0[1])) }
            nextOffset = try readOffset()
        }

        private mutating func readOffset() throws -> Int64? {
            try offsets.next().map { wide ? Int64($0[0] << 32 | $0[1]) : Int64($0[0]) }
        }

        mutating func nextChunk() throws -> (offset: Int64, samples: Int)? {
            guard let offset = nextOffset else { return nil }
            chunk += 1
            while let next = upcoming, next.first <= chunk {
                run = next
                upcoming = try runs.next().map { (Int($0[0]), Int($0[1])) }
            }
            nextOffset = try readOffset()
            return (offset, run.samples)
        }
    }
}
