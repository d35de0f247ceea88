import Media

/// What an init segment says, read back from its bytes (for tests and the checker).
public struct ParsedInit: Sendable {
    public struct Track: Sendable {
        public var trackID: UInt32
        public var handler: String
        public var timescale: UInt32
        public var tkhdDuration: UInt64
        public var width: Int
        public var height: Int
        public var sampleEntry: String
        public var sampleEntryCount: Int
        public var emptyTables: Bool
        public var selfContainedReferences: Bool
        public var editListEntries: Int
        /// The whole `stsd` box, as it stands.
        public var sampleDescription: [UInt8] = []
        // avcC
        public var avcConfigVersion: UInt8 = 0
        public var avcProfile: UInt8 = 0
        public var avcCompatibility: UInt8 = 0
        public var avcLevel: UInt8 = 0
        public var nalLengthSize: Int = 0
        public var sps: [[UInt8]] = []
        public var pps: [[UInt8]] = []
        // mp4a / esds
        public var channelCount: Int = 0
        public var sampleRate: Int = 0
        public var objectTypeIndication: UInt8 = 0
        public var streamType: UInt8 = 0
        public var audioConfig: [UInt8] = []
    }
    public struct Trex: Sendable {
        public var trackID: UInt32
        public var defaultSampleDescriptionIndex: UInt32
        public var defaultDuration: UInt32
        public var defaultFlags: UInt32
    }

    public var majorBrand: String
    public var compatibleBrands: [String]
    public var topLevel: [String]
    public var mvhdDuration: UInt64
    public var tracks: [Track]
    public var trex: [Trex]
    public var mvexFollowsTraks: Bool

    public func track(_ handler: String) -> Track? { tracks.first { $0.handler == handler } }

    public init(bytes: [UInt8]) throws {
        let boxes = try BoxTree.parse(bytes)
        topLevel = boxes.map(\.type)
        guard let ftyp = boxes.first(where: { $0.type == "ftyp" }) else { throw MP4Error.missing("ftyp") }
        var r = ByteReader(bytes, range: ftyp.payload)
        majorBrand = try r.fourCC()
        _ = try r.u32()
        compatibleBrands = []
        while r.remaining >= 4 { compatibleBrands.append(try r.fourCC()) }
        guard let moov = boxes.first(where: { $0.type == "moov" }) else { throw MP4Error.missing("moov") }
        guard let mvhd = moov.child("mvhd") else { throw MP4Error.missing("mvhd") }
        r = ByteReader(bytes, range: mvhd.payload)
        let version = try r.u8()
        try r.skip(3)
        if version == 1 { try r.skip(16); _ = try r.u32(); mvhdDuration = try r.u64() } else {
            try r.skip(8); _ = try r.u32(); mvhdDuration = UInt64(try r.u32())
        }
        tracks = try moov.all("trak").map { try Self.track($0, bytes) }
        let lastTrak = moov.children.lastIndex { $0.type == "trak" } ?? -1
        let mvexIndex = moov.children.firstIndex { $0.type == "mvex" }
        mvexFollowsTraks = mvexIndex.map { $0 > lastTrak } ?? false
        trex = try (moov.child("mvex")?.all("trex") ?? []).map { box in
            var r = ByteReader(bytes, range: box.payload)
            try r.skip(4)
            let id = try r.u32(), index = try r.u32(), duration = try r.u32()
            _ = try r.u32()
            return Trex(trackID: id, defaultSampleDescriptionIndex: index, defaultDuration: duration, defaultFlags: try r.u32())
        }
    }

    static func track(_ trak: Box, _ bytes: [UInt8]) throws -> Track {
        let boxes = try TrackBoxes(Int64(trak.payload.lowerBound)..<Int64(trak.payload.upperBound), in: BytesBoxSource(bytes))
        guard boxes.found.contains("tkhd") else { throw MP4Error.missing("tkhd") }
        guard boxes.found.contains("mdhd"), boxes.found.contains("hdlr") else { throw MP4Error.missing("mdhd/hdlr") }
        guard boxes.found.contains("stbl"), boxes.found.contains("stsd") else { throw MP4Error.missing("stbl/stsd") }
        // Missing tables are not empty ones.
        let empty = ["stts", "stsc", "stsz", "stco"].allSatisfy { boxes.tables[$0]?.count == 0 }
        // The sample entries, read from the stsd box as it stands.
        let description = boxes.sampleDescription
        guard let stsd = try BoxTree.parse(description).first else { throw MP4Error.missing("stbl/stsd") }
        let bytes = description
        let entry = stsd.children.first
        var track = Track(trackID: boxes.trackID, handler: boxes.handler, timescale: boxes.timescale, tkhdDuration: boxes.tkhdDuration,
                          width: boxes.width, height: boxes.height, sampleEntry: entry?.type ?? "", sampleEntryCount: boxes.sampleEntryCount,
                          emptyTables: empty, selfContainedReferences: boxes.selfContained, editListEntries: boxes.editCount)
        track.sampleDescription = description
        if let entry, entry.type == "avc1" || entry.type == "avc3" {
            var e = ByteReader(bytes, range: entry.payload)
            try e.skip(24)
            track.width = Int(try e.u16()); track.height = Int(try e.u16())
            if let avcC = entry.child("avcC") {
                var c = ByteReader(bytes, range: avcC.payload)
                track.avcConfigVersion = try c.u8()
                track.avcProfile = try c.u8(); track.avcCompatibility = try c.u8(); track.avcLevel = try c.u8()
                track.nalLengthSize = Int(try c.u8() & 3) + 1
                let spsCount = Int(try c.u8() & 0x1F)
                for _ in 0..<spsCount { track.sps.append(try c.take(Int(try c.u16()))) }
                let ppsCount = Int(try c.u8())
                for _ in 0..<ppsCount { track.pps.append(try c.take(Int(try c.u16()))) }
            }
        }
        if let entry, entry.type == "mp4a" {
            var e = ByteReader(bytes, range: entry.payload)
            try e.skip(16)
            track.channelCount = Int(try e.u16())
            try e.skip(6)
            track.sampleRate = Int(try e.u32() >> 16)
            if let esds = entry.child("esds") {
                try Self.readESDS(bytes, esds, into: &track)
            }
        }
        return track
    }

    /// Walks the ES_Descriptor → DecoderConfigDescriptor → DecoderSpecificInfo chain.
    private static func readESDS(_ bytes: [UInt8], _ esds: Box, into track: inout Track) throws {
        var r = ByteReader(bytes, range: esds.payload)
        try r.skip(4)
        func header(_ r: inout ByteReader) throws -> (tag: UInt8, size: Int) {
            let tag = try r.u8()
            var size = 0
            for _ in 0..<4 {
                let b = try r.u8()
                size = (size << 7) | Int(b & 0x7F)
                if b & 0x80 == 0 { break }
            }
            return (tag, size)
        }
        let es = try header(&r)
        guard es.tag == 3 else { throw MP4Error.badBox("esds without ES_Descriptor", at: esds.start) }
        try r.skip(2)
        let flags = try r.u8()
        if flags & 0x80 != 0 { try r.skip(2) }
        if flags & 0x40 != 0 { try r.skip(Int(try r.u8())) }
        if flags & 0x20 != 0 { try r.skip(2) }
        let dc = try header(&r)
        guard dc.tag == 4 else { throw MP4Error.badBox("esds without DecoderConfigDescriptor", at: esds.start) }
        track.objectTypeIndication = try r.u8()
        track.streamType = try r.u8() >> 2
        try r.skip(11)
        let dsi = try header(&r)
        if dsi.tag == 5 { track.audioConfig = try r.take(dsi.size) }
    }
}

/// What a media segment says, read back from its bytes.
public struct ParsedSegment: Sendable {
    public struct Sample: Sendable {
        public var duration: UInt32
        public var size: UInt32
        public var flags: UInt32
        public var compositionOffset: Int32
        /// Byte range of the sample's data within the segment.
        public var range: Range<Int>
        public var isSync: Bool { flags & 0x0001_0000 == 0 }
    }
    public struct TrackFragment: Sendable {
        public var trackID: UInt32
        public var tfhdFlags: UInt32
        public var tfdtVersion: UInt8
        public var baseDecodeTime: UInt64
        public var trunCount: Int
        public var tfdtCount: Int
        public var samples: [Sample]
        public var dataInsideMdat: Bool
        public var duration: UInt64 { samples.reduce(0) { $0 &+ UInt64($1.duration) } }
        /// The decode times its samples span, as signed ticks; nil when its end lies past
        /// Int64 (a `tfdt` of 2^63 or more is legal in a version-1 box, §8.8.12, but no
        /// stream reaches it: seconds × timescale overflows first). Readers of outside
        /// fragments compute with this, never with a converted `baseDecodeTime`.
        public var decodeSpan: Range<Int64>? {
            guard let start = Int64(exactly: baseDecodeTime), let length = Int64(exactly: duration) else { return nil }
            let (end, overflow) = start.addingReportingOverflow(length)
            return overflow ? nil : start..<end
        }
    }
    public struct Fragment: Sendable {
        public var sequenceNumber: UInt32
        public var mfhdCount: Int
        public var trafs: [TrackFragment]
    }

    public var topLevel: [String]
    public var fragments: [Fragment]

    public func traf(_ trackID: UInt32) -> [TrackFragment] {
        fragments.flatMap { $0.trafs.filter { $0.trackID == trackID } }
    }

    /// `trex` defaults fill in what tfhd and trun leave out (§8.8.3, §8.8.7, §8.8.8).
    public init(bytes: [UInt8], trex: [ParsedInit.Trex] = []) throws {
        let boxes = try BoxTree.parse(bytes)
        topLevel = boxes.map(\.type)
        fragments = []
        for (index, moof) in boxes.enumerated() where moof.type == "moof" {
            let mdat = index + 1 < boxes.count && boxes[index + 1].type == "mdat" ? boxes[index + 1] : nil
            var sequence: UInt32 = 0
            let mfhds = moof.all("mfhd")
            if let mfhd = mfhds.first {
                var r = ByteReader(bytes, range: mfhd.payload)
                try r.skip(4)
                sequence = try r.u32()
            }
            let trafs = try moof.all("traf").map { try Self.trackFragment($0, moof: moof, mdat: mdat, bytes: bytes, trex: trex) }
            fragments.append(Fragment(sequenceNumber: sequence, mfhdCount: mfhds.count, trafs: trafs))
        }
    }

    /// One traf: tfhd (with the trex defaults), tfdt, and its truns' samples, each sample's
    /// place checked against the mdat that follows the moof.
    static func trackFragment(_ traf: Box, moof: Box, mdat: Box?, bytes: [UInt8], trex: [ParsedInit.Trex]) throws -> TrackFragment {
        guard let tfhd = traf.child("tfhd") else { throw MP4Error.missing("tfhd") }
        var r = ByteReader(bytes, range: tfhd.payload)
        try r.skip(1)
        let tfhdFlags = try r.u24()
        let trackID = try r.u32()
        let defaults = trex.first { $0.trackID == trackID }
        var base = moof.start
        if tfhdFlags & 0x01 != 0 {
            let offset = try r.u64()
            guard offset <= UInt64(bytes.count) else { throw MP4Error.badBox("tfhd base data offset \(offset) lies past the segment", at: tfhd.start) }
            base = Int(offset)
        }
        if tfhdFlags & 0x02 != 0 { _ = try r.u32() }
        var sampleDefaults = (duration: defaults?.defaultDuration ?? 0, size: UInt32(0), flags: defaults?.defaultFlags ?? 0)
        if tfhdFlags & 0x08 != 0 { sampleDefaults.duration = try r.u32() }
        if tfhdFlags & 0x10 != 0 { sampleDefaults.size = try r.u32() }
        if tfhdFlags & 0x20 != 0 { sampleDefaults.flags = try r.u32() }
        var tfdtVersion: UInt8 = 0, decodeTime: UInt64 = 0
        if let tfdt = traf.child("tfdt") {
            var t = ByteReader(bytes, range: tfdt.payload)
            tfdtVersion = try t.u8(); try t.skip(3)
            decodeTime = tfdtVersion == 1 ? try t.u64() : UInt64(try t.u32())
        }
        var samples: [Sample] = []
        var inside = true
        var cursor = base
        for trun in traf.all("trun") {
            try readTrun(trun, bytes: bytes, base: base, defaults: sampleDefaults, cursor: &cursor, into: &samples)
        }
        for sample in samples {
            if let mdat {
                if !mdat.payload.contains(sample.range.lowerBound) && sample.size > 0 || sample.range.upperBound > mdat.payload.upperBound {
                    inside = false
                }
            } else { inside = false }
        }
        return TrackFragment(trackID: trackID, tfhdFlags: tfhdFlags, tfdtVersion: tfdtVersion,
                             baseDecodeTime: decodeTime, trunCount: traf.all("trun").count,
                             tfdtCount: traf.all("tfdt").count, samples: samples, dataInsideMdat: inside)
    }

    /// One trun's samples (§8.8.8), each placed after the one before from `cursor`.
    static func readTrun(_ trun: Box, bytes: [UInt8], base: Int, defaults: (duration: UInt32, size: UInt32, flags: UInt32),
                         cursor: inout Int, into samples: inout [Sample]) throws {
        var t = ByteReader(bytes, range: trun.payload)
        try t.skip(1)
        let flags = try t.u24()
        let count = Int(try t.u32())
        // Each sample has a size field, or a default size and a place in the mdat: a count
        // no segment of this size can hold is refused before anything is allocated for it
        // (linear work in the input).
        let perSample = [0x100, 0x200, 0x400, 0x800].filter { flags & UInt32($0) != 0 }.count * 4
        guard count <= (perSample > 0 ? t.remaining / perSample : max(bytes.count, 1)) else {
            throw MP4Error.badBox("trun of \(count) samples in \(t.remaining) bytes", at: trun.start)
        }
        if flags & 0x001 != 0 { cursor = base + Int(Int32(bitPattern: try t.u32())) }
        samples.reserveCapacity(samples.count + count)
        var firstFlags: UInt32?
        if flags & 0x004 != 0 { firstFlags = try t.u32() }
        for i in 0..<count {
            let duration = flags & 0x100 != 0 ? try t.u32() : defaults.duration
            let size = flags & 0x200 != 0 ? try t.u32() : defaults.size
            var sampleFlags = flags & 0x400 != 0 ? try t.u32() : defaults.flags
            if i == 0, let firstFlags, flags & 0x400 == 0 { sampleFlags = firstFlags }
            let cto = flags & 0x800 != 0 ? Int32(bitPattern: try t.u32()) : 0
            samples.append(Sample(duration: duration, size: size, flags: sampleFlags, compositionOffset: cto, range: cursor..<(cursor + Int(size))))
            cursor += Int(size)
        }
    }
}
