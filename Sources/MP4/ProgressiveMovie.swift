import Media

/// What the init segment says a track is, copied into the progressive movie as it is.
public struct TrackDescription: Sendable, Equatable {
    public var trackID: UInt32
    /// `vide` or `soun`.
    public var handler: String
    public var timescale: UInt32
    public var width: Int
    public var height: Int
    /// The whole `stsd` box, as the init segment has it.
    public var sampleDescription: [UInt8]

    public init(trackID: UInt32, handler: String, timescale: UInt32, width: Int, height: Int, sampleDescription: [UInt8]) {
        self.trackID = trackID
        self.handler = handler
        self.timescale = timescale
        self.width = width
        self.height = height
        self.sampleDescription = sampleDescription
    }
}

/// One track of a progressive (non-fragmented) movie: its description, and its sample
/// table in memory (a recording's; an export's goes through `SampleTableWriter`).
@dynamicMemberLookup
public struct MovieTrack: Sendable {
    public struct Sample: Sendable, Equatable {
        public var duration: UInt32
        public var size: UInt32
        public var compositionOffset: Int32
        public var isSync: Bool
        public init(duration: UInt32, size: UInt32, compositionOffset: Int32, isSync: Bool) {
            self.duration = duration
            self.size = size
            self.compositionOffset = compositionOffset
            self.isSync = isSync
        }
    }
    /// A run of samples stored back to back in the mdat.
    public struct Chunk: Sendable, Equatable {
        /// Offset of the chunk's first byte from the start of the mdat payload.
        public var offset: Int64
        public var sampleCount: Int
        public init(offset: Int64, sampleCount: Int) {
            self.offset = offset
            self.sampleCount = sampleCount
        }
    }

    public var description: TrackDescription
    /// Decode time of the first sample on the fragmented timeline, in `timescale` ticks.
    public var firstDecodeTime: Int64
    public var samples: [Sample] = []
    public var chunks: [Chunk] = []

    public init(_ description: TrackDescription, firstDecodeTime: Int64) {
        self.description = description
        self.firstDecodeTime = firstDecodeTime
    }

    public subscript<T>(dynamicMember key: KeyPath<TrackDescription, T>) -> T { description[keyPath: key] }

    public var mediaDuration: Int64 { samples.reduce(0) { $0 + Int64($1.duration) } }
    /// First presentation time on the fragmented timeline.
    public var firstPresentationTime: Int64 { firstDecodeTime + Int64(samples.first?.compositionOffset ?? 0) }
}

/// The header of a progressive MP4 whose `moov` comes first, so a player can start and
/// seek before it has the whole file (what `ffmpeg -movflags +faststart` makes):
///
///     |ftyp| |moov |mvhd| |trak |tkhd| |edts|elst|| |mdia ... stbl(stsd stts ctts stss stsz stsc co64)||| |mdat ...|
///
/// Chunk offsets are 64-bit (co64, §8.7.5) so an hour-long recording past 4 GB stays valid,
/// which also keeps the moov's size independent of where the mdat lands.
public enum ProgressiveMovie {
    public static let movieTimescale: UInt32 = 1000

    /// `ftyp` + `moov` for samples in one `mdat` that follows them directly. The first
    /// video frame is presented at movie time 0: each track gets an edit list that skips
    /// what comes before it (the AAC priming) or waits for its first sample (14496-12 §8.6.6).
    public static func header(tracks: [MovieTrack]) -> [UInt8] {
        layout(tracks.map(\.header)) { index, mdatPayload in sampleTables(tracks[index], mdatPayload: mdatPayload) }.bytes
    }

    /// `ftyp` + `moov` as a tree, the sample tables from `tables(track index, mdat payload
    /// offset)`: in memory for a recording, streamed from elsewhere for an export.
    public static func layout(_ headers: [TrackHeader], tables: (Int, Int64) -> [MovieBox]) -> MovieBox {
        var ftyp = ByteWriter()
        ftyp.box("ftyp") { w in
            w.fourCC("isom")
            w.u32(0x200)
            for brand in ["isom", "iso2", "avc1", "mp41"] { w.fourCC(brand) }
        }
        // The moov's size does not depend on the offsets it holds (all u64), so lay it out
        // once to learn its size, then again with the real offsets.
        let draft = moov(headers, tables: { tables($0, 0) })
        let mdatPayload = Int64(ftyp.bytes.count) + draft.size + 16
        return .sequence([.raw(ftyp.bytes), moov(headers, tables: { tables($0, mdatPayload) })])
    }

    /// The header of an `mdat` holding `size` payload bytes: always the 64-bit form
    /// (§4.2), so `header`'s offsets hold whatever the size.
    public static func mdatHeader(payloadSize: Int64) -> [UInt8] {
        var w = ByteWriter()
        w.u32(1)
        w.fourCC("mdat")
        w.u64(UInt64(payloadSize + 16))
        return w.bytes
    }

    /// Where video presentation starts, as the origin of movie time.
    static func origin(_ tracks: [TrackHeader]) -> (ticks: Int64, timescale: Int64) {
        let reference = tracks.first { $0.handler == "vide" } ?? tracks[0]
        return (reference.firstPresentationTime, Int64(reference.timescale))
    }

    static func moov(_ tracks: [TrackHeader], tables: (Int) -> [MovieBox]) -> MovieBox {
        let origin = origin(tracks)
        let edits = tracks.map { edit(for: $0, origin: origin) }
        let movieDuration = edits.map { $0.emptyDuration + $0.duration }.max() ?? 0
        var w = ByteWriter()
        versioned(&w, "mvhd", big: movieDuration > Int64(UInt32.max)) { w, big in
                time(&w, 0, big); time(&w, 0, big)        // creation, modification
                w.u32(movieTimescale)
                time(&w, movieDuration, big)
                w.u32(0x0001_0000); w.u16(0x0100); w.zeros(10)
                w.unityMatrix()
                w.zeros(24)
                // next_track_ID; all ones when the largest ID is already all ones (§8.2.2.3).
                let largest = tracks.map(\.trackID).max() ?? 0
                w.u32(largest == UInt32.max ? largest : largest + 1)
        }
        return .box("moov", [.raw(w.bytes)] + tracks.indices.map { trak(tracks[$0], edit: edits[$0], tables: tables($0)) })
    }

    struct Edit {
        /// Movie ticks before the track's first sample shows (an empty edit).
        var emptyDuration: Int64
        /// Media time that plays at the edit's start, in track ticks.
        var mediaTime: Int64
        /// Movie ticks of media that play.
        var duration: Int64
    }

    static func edit(for track: TrackHeader, origin: (ticks: Int64, timescale: Int64)) -> Edit {
        let timescale = Int64(track.timescale)
        let originHere = rescale(origin.ticks, from: origin.timescale, to: timescale)
        // Sample 0 decodes at media time 0, which is firstDecodeTime on the fragmented
        // timeline; the media time shown at movie time 0 is the origin on that timeline.
        let skip = originHere - track.firstDecodeTime
        let movie = Int64(movieTimescale)
        if skip >= 0 {
            return Edit(emptyDuration: 0, mediaTime: skip,
                        duration: rescale(max(0, track.mediaDuration - skip), from: timescale, to: movie))
        }
        return Edit(emptyDuration: rescale(-skip, from: timescale, to: movie), mediaTime: 0,
                    duration: rescale(track.mediaDuration, from: timescale, to: movie))
    }

    private static func time(_ w: inout ByteWriter, _ value: Int64, _ big: Bool) {
        if big { w.u64(UInt64(value)) } else { w.u32(UInt32(value)) }
    }

    /// A full box in version 1 (64-bit times) only when a value needs it, §8.2.2.
    private static func versioned(_ w: inout ByteWriter, _ type: String, big: Bool, _ body: (inout ByteWriter, Bool) -> Void) {
        w.fullBox(type, version: big ? 1 : 0, flags: 0) { body(&$0, big) }
    }

    private static func trak(_ track: TrackHeader, edit: Edit, tables: [MovieBox]) -> MovieBox {
        let trackDuration = edit.emptyDuration + edit.duration
        let isVideo = track.handler == "vide"
        var head = ByteWriter()
        let big = trackDuration > Int64(UInt32.max)
        head.fullBox("tkhd", version: big ? 1 : 0, flags: 3) { w in
            time(&w, 0, big); time(&w, 0, big)
            w.u32(track.trackID)
            w.u32(0)
            time(&w, trackDuration, big)
            w.zeros(8)
            w.u16(0); w.u16(0)
            w.u16(isVideo ? 0 : 0x0100)
            w.u16(0)
            w.unityMatrix()
            w.u32(UInt32(track.width) << 16)
            w.u32(UInt32(track.height) << 16)
        }
        head.box("edts") { w in
            let entries = (edit.emptyDuration > 0 ? [(edit.emptyDuration, Int64(-1))] : []) + [(edit.duration, edit.mediaTime)]
            let wide = entries.contains { $0.0 > Int64(UInt32.max) || $0.1 > Int64(Int32.max) }
            w.fullBox("elst", version: wide ? 1 : 0, flags: 0) { w in
                w.u32(UInt32(entries.count))
                for (duration, mediaTime) in entries {
                    if wide { w.u64(UInt64(duration)); w.u64(UInt64(bitPattern: mediaTime)) } else {
                        w.u32(UInt32(duration)); w.i32(Int32(mediaTime))
                    }
                    w.u16(1); w.u16(0)  // media_rate 1.0
                }
            }
        }
        var media = ByteWriter()
        let mediaDuration = track.mediaDuration
        versioned(&media, "mdhd", big: mediaDuration > Int64(UInt32.max)) { w, big in
            time(&w, 0, big); time(&w, 0, big)
            w.u32(track.timescale)
            time(&w, mediaDuration, big)
            w.u16(0x55C4)   // "und"
            w.u16(0)
        }
        media.fullBox("hdlr", version: 0, flags: 0) { w in
            w.u32(0)
            w.fourCC(track.handler)
            w.zeros(12)
            w.append(Array((isVideo ? "VideoHandler" : "SoundHandler").utf8)); w.u8(0)
        }
        var info = ByteWriter()
        if isVideo { info.fullBox("vmhd", version: 0, flags: 1) { $0.zeros(8) } } else {
            info.fullBox("smhd", version: 0, flags: 0) { $0.u32(0) }
        }
        info.box("dinf") { w in
            w.fullBox("dref", version: 0, flags: 0) { w in
                w.u32(1)
                w.fullBox("url ", version: 0, flags: 1) { _ in }
            }
        }
        return .box("trak", [.raw(head.bytes), .box("mdia", [.raw(media.bytes), .box("minf", [
            .raw(info.bytes), .box("stbl", [.raw(track.sampleDescription)] + tables)])])])
    }

    /// stts, ctts, stss, stsz, stsc and co64 (§8.6.1.2, §8.6.1.3, §8.6.2, §8.7.3, §8.7.4, §8.7.5),
    /// in memory: `SampleTableWriter` makes the same boxes a sample at a time.
    static func sampleTables(_ track: MovieTrack, mdatPayload: Int64) -> [MovieBox] {
        var tables = SampleTableWriter(sinks: .init(repeating: MemorySink(), count: SampleTableWriter<MemorySink>.kinds.count))
        for sample in track.samples { tables.add(sample) }
        for chunk in track.chunks { tables.addChunk(offset: chunk.offset, samples: chunk.sampleCount) }
        tables.finish()
        return tables.boxes(mdatPayload: mdatPayload)
    }
}
