import Files
import MP4

/// A sample table's entries in a scratch file (`MovieBox.Entries.external`, by `id`).
struct ScratchSink: TableSink {
    let file: ScratchFile
    let id: Int
    mutating func write(_ bytes: [UInt8]) { file.append(bytes) }
    func entries(co64Base: Int64?) -> MovieBox.Entries { .external(id: id, length: file.length) }
}

/// Reads an export's fragments one at a time — only their box headers and `moof`s, never
/// their media — into the sample tables of one progressive movie, then writes its header
/// and says where its media lies.
struct Planner {
    private let tracks: [MovieTrack]
    private let trex: [ParsedInit.Trex]
    private let scratch: String
    private var writers: [SampleTableWriter<ScratchSink>]
    private var files: [ScratchFile]
    /// Per track: first decode time and composition offset, media so far, and the last
    /// sample, held back until the next fragment says whether a gap follows it.
    private var first: [(decode: Int64, offset: Int32)?]
    private var durations: [Int64]
    private var pending: [(sample: MovieTrack.Sample, decode: Int64)?]
    private var pieces: [JoinedFile.Piece] = []
    private var payload: Int64 = 0

    init(tracks: [MovieTrack], trex: [ParsedInit.Trex] = [], scratch: String) throws {
        self.tracks = tracks
        self.trex = trex
        self.scratch = scratch
        var files: [ScratchFile] = []
        var writers: [SampleTableWriter<ScratchSink>] = []
        for track in tracks.indices {
            let kinds = SampleTableWriter<ScratchSink>.kinds.indices
            let made = try kinds.map { _ in try ScratchFile(in: scratch) }
            files += made
            writers.append(SampleTableWriter(sinks: kinds.map { ScratchSink(file: made[$0], id: track * kinds.count + $0) }))
        }
        self.files = files
        self.writers = writers
        first = Array(repeating: nil, count: tracks.count)
        durations = Array(repeating: 0, count: tracks.count)
        pending = Array(repeating: nil, count: tracks.count)
    }

    /// A segment file (or any run of `moof`+`mdat` pairs); its samples go to the track of
    /// the same id, or all to track `track` (a ladder's rendition, whose files number
    /// their one track 1).
    mutating func add(segmentAt path: String, track: Int? = nil) throws {
        let (fd, size) = try FileSystem.openRegularNamed(path, followLinks: false)
        defer { fd.close() }
        try MediaFragments.each(in: FileBoxSource(fd: fd, name: path, largest: FragmentedFile.maximumHeaderBox), size: size) { moofAt, moof, media in
            try add(ParsedSegment(bytes: moof, trex: trex), moofAt: moofAt, media: media, track: track)
            pieces.append(.init(.path(path), offset: media.lowerBound, length: Int64(media.count)))
            payload += Int64(media.count)
        }
    }

    private mutating func add(_ segment: ParsedSegment, moofAt moofOffset: Int64, media: Range<Int64>, track: Int?) throws {
        for traf in segment.fragments.flatMap(\.trafs) where !traf.samples.isEmpty {
            guard let index = track ?? tracks.firstIndex(where: { $0.trackID == traf.trackID }) else {
                throw MP4Error.missing("trak for track \(traf.trackID)")
            }
            let start = moofOffset + Int64(traf.samples[0].range.lowerBound)
            let end = moofOffset + Int64(traf.samples[traf.samples.count - 1].range.upperBound)
            guard start >= media.lowerBound, end <= media.upperBound else {
                throw MP4Error.badBox("track \(traf.trackID) data outside its mdat", at: Int(moofOffset))
            }
            // A stored segment is a file: its tfdt is checked before any sum (2^60 ticks is
            // centuries at any 32-bit timescale; the gaps between segments are differences).
            guard let span = traf.decodeSpan, span.upperBound <= 1 << 60 else {
                throw MP4Error.badBox("track \(traf.trackID): tfdt \(traf.baseDecodeTime) is past 2^60 ticks", at: Int(moofOffset))
            }
            writers[index].addChunk(offset: payload + start - media.lowerBound, samples: traf.samples.count)
            addSamples(index, from: span.lowerBound, traf.samples.map {
                MovieTrack.Sample(duration: $0.duration, size: $0.size, compositionOffset: $0.compositionOffset, isSync: $0.isSync)
            })
        }
    }

    /// A run of samples stored back to back at `offset` in `path` (a chunk of a
    /// progressive file), the first decoded at `decode`: one chunk of the export.
    mutating func addChunk(track index: Int, decode: Int64, _ samples: [MovieTrack.Sample], path: String, offset: Int64) {
        let length = samples.reduce(Int64(0)) { $0 + Int64($1.size) }
        writers[index].addChunk(offset: payload, samples: samples.count)
        addSamples(index, from: decode, samples)
        pieces.append(.init(.path(path), offset: offset, length: length))
        payload += length
    }

    private mutating func addSamples(_ index: Int, from start: Int64, _ samples: [MovieTrack.Sample]) {
        var decode = start
        if first[index] == nil { first[index] = (decode, samples[0].compositionOffset) }
        for sample in samples {
            hold(index, sample, at: decode)
            decode += Int64(sample.duration)
        }
    }

    /// Writes the sample held back, its duration stretched over any gap before `decode`
    /// (a camera that was away: the progressive file has no discontinuities, so the last
    /// picture stays up and the sound stays in step), and holds this one.
    private mutating func hold(_ track: Int, _ sample: MovieTrack.Sample, at decode: Int64) {
        if var (held, heldDecode) = pending[track] {
            let gap = decode - (heldDecode + Int64(held.duration))
            if gap > 0 { held.duration = UInt32(min(Int64(UInt32.max), Int64(held.duration) + gap)) }
            writers[track].add(held)
            durations[track] += Int64(held.duration)
        }
        pending[track] = (sample, decode)
    }

    /// The header (ftyp, moov with the tables copied in, the mdat's header) in a scratch
    /// file, then every fragment's media: the export.
    mutating func finish() throws -> JoinedFile {
        for track in tracks.indices {
            if let (held, _) = pending[track] {
                writers[track].add(held)
                durations[track] += Int64(held.duration)
            }
            pending[track] = nil
            writers[track].finish()
        }
        for file in files { try file.flush() }
        let headers = tracks.indices.map { i -> TrackHeader in
            let start = first[i] ?? (0, 0)
            return TrackHeader(tracks[i].description, firstDecodeTime: start.decode,
                               firstPresentationTime: start.decode + Int64(start.offset), mediaDuration: durations[i])
        }
        let writers = self.writers
        let layout = ProgressiveMovie.layout(headers) { writers[$0].boxes(mdatPayload: $1) }
        let mdatPayload = layout.size + 16
        let header = try ScratchFile(in: scratch)
        let co64 = SampleTableWriter<ScratchSink>.kinds.firstIndex(of: "co64")!
        let kinds = SampleTableWriter<ScratchSink>.kinds.count
        try layout.write({ try header.write($0) }, external: { id, length in
            var copied: Int64 = 0
            while copied < length {
                let count = Int(min(1 << 16, length - copied))  // a multiple of 8: whole co64 entries
                var bytes = try files[id].read(at: copied, count: count)
                if id % kinds == co64 { bytes = MemorySink.chunkOffsets(bytes, movedBy: mdatPayload) }
                try header.write(bytes)
                copied += Int64(count)
            }
        })
        try header.write(ProgressiveMovie.mdatHeader(payloadSize: payload))
        let length = header.length
        return JoinedFile([.init(try header.handOver(), offset: 0, length: length)] + pieces)
    }
}
