
/// Where a movie's boxes are read from: an init segment's bytes (`BytesBoxSource`), or a
/// recording read a box at a time from its descriptor (Export's `FileBoxSource`). A source
/// gives bytes; walking the boxes is the same for every source.
public protocol BoxSource {
    /// Bytes of the movie (a box header, or a small box: never a sample table's entries).
    func bytes(_ range: Range<Int64>) throws -> [UInt8]
    /// Whether a box of size 0 ("to the end") is taken wherever it is, not only at the
    /// top level (§4.2): lenient, for files onair wrote itself.
    var sizeZeroAnywhere: Bool { get }
}

extension BoxSource {
    public var sizeZeroAnywhere: Bool { false }

    /// The box whose header is at `offset`, inside a parent that ends at `end`.
    public func box(at offset: Int64, within end: Int64) throws -> (type: String, start: Int64, payload: Range<Int64>) {
        var r = ByteReader(try bytes(offset..<min(end, offset + 16)))
        let box = try BoxHeader.read(&r, available: end - offset, topLevel: sizeZeroAnywhere)
        return (box.type, offset, (offset + Int64(box.headerSize))..<(offset + box.size))
    }

    /// The boxes directly inside `range`: type, where the box starts, its payload.
    public func children(_ range: Range<Int64>) throws -> [(type: String, start: Int64, payload: Range<Int64>)] {
        var found: [(String, Int64, Range<Int64>)] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            let box = try box(at: offset, within: range.upperBound)
            found.append(box)
            offset = box.payload.upperBound
        }
        return found
    }
}

/// An init segment (or any movie) in memory.
public struct BytesBoxSource: BoxSource {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public func bytes(_ range: Range<Int64>) throws -> [UInt8] {
        guard range.lowerBound >= 0, range.upperBound <= Int64(bytes.count) else { throw MP4Error.badBox("a box past the end", at: Int(clamping: range.lowerBound)) }
        return Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)])
    }
}

/// One `trak` (ISO/IEC 14496-12 §8.3.1), read once for every reader of a movie: the track
/// header (§8.3.2), the media header and handler (§8.4.2, §8.4.3), the sample description
/// (§8.5.2) as it stands, the edit list (§8.6.6), the data references (§8.7.2), and where
/// each sample table's entries are (§8.6.1.2 stts, §8.6.1.3 ctts, §8.6.2 stss, §8.7.3
/// stsz, §8.7.4 stsc, §8.7.5 stco/co64) — places, so a long recording's tables are read
/// through cursors, never whole.
public struct TrackBoxes {
    public var trackID: UInt32 = 0
    public var tkhdDuration: UInt64 = 0
    /// The presentation size (tkhd's 16.16 width and height, whole pixels).
    public var width = 0
    public var height = 0
    public var timescale: UInt32 = 0
    public var mediaDuration: UInt64 = 0
    public var handler = ""
    /// The whole `stsd` box, and how many sample entries it says it has.
    public var sampleDescription: [UInt8] = []
    public var sampleEntryCount = 0
    /// elst's entry count, and its first two entries (segment duration in movie ticks,
    /// media time; -1 is an empty edit).
    public var editCount = 0
    public var edits: [(duration: Int64, mediaTime: Int64)] = []
    /// Each sample table's entries: where they begin and how many.
    public var tables: [String: (start: Int64, count: Int)] = [:]
    /// stsz's sample_size: every sample this size when not 0.
    public var fixedSampleSize: UInt32 = 0
    /// Every data reference has the self-contained flag (the samples are in this file).
    public var selfContained = false
    /// The boxes found (a reader throws for the ones it needs).
    public var found: Set<String> = []
    /// Where the `trak`'s payload is, for a reader's errors.
    public var place: Range<Int64> = 0..<0

    private static let containers: Set<String> = ["edts", "mdia", "minf", "stbl", "dinf"]
    private static let tables: Set<String> = ["stts", "ctts", "stss", "stsc", "stco", "co64"]

    public init(_ trak: Range<Int64>, in source: BoxSource) throws {
        place = trak
        var pending = [trak]
        while let range = pending.popLast() {
            for box in try source.children(range) {
                found.insert(box.type)
                if Self.containers.contains(box.type) {
                    pending.append(box.payload)
                } else if Self.tables.contains(box.type) {
                    var r = ByteReader(try source.bytes(box.payload.lowerBound..<min(box.payload.upperBound, box.payload.lowerBound + 8)))
                    try r.skip(4)
                    tables[box.type] = (box.payload.lowerBound + 8, Int(try r.u32()))
                } else {
                    try read(box.type, start: box.start, payload: box.payload, from: source)
                }
            }
        }
    }

    private mutating func read(_ type: String, start: Int64, payload: Range<Int64>, from source: BoxSource) throws {
        switch type {
        case "tkhd":
            var r = ByteReader(try source.bytes(payload))
            let version = try r.u8()
            try r.skip(3 + (version == 1 ? 16 : 8))
            trackID = try r.u32()
            try r.skip(4)
            tkhdDuration = version == 1 ? try r.u64() : UInt64(try r.u32())
            // Width and height are its last two fields.
            try r.skip(Int(payload.count) - 8 - r.position)
            width = Int(try r.u32() >> 16)
            height = Int(try r.u32() >> 16)
        case "mdhd":
            var r = ByteReader(try source.bytes(payload))
            let version = try r.u8()
            try r.skip(3 + (version == 1 ? 16 : 8))
            timescale = try r.u32()
            mediaDuration = version == 1 ? try r.u64() : UInt64(try r.u32())
        case "hdlr":
            var r = ByteReader(try source.bytes(payload))
            try r.skip(8)
            handler = try r.fourCC()
        case "stsd":
            sampleDescription = try source.bytes(start..<payload.upperBound)
            var r = ByteReader(try source.bytes(payload.lowerBound..<min(payload.upperBound, payload.lowerBound + 8)))
            try r.skip(4)
            sampleEntryCount = Int(try r.u32())
        case "stsz":
            var r = ByteReader(try source.bytes(payload.lowerBound..<min(payload.upperBound, payload.lowerBound + 12)))
            try r.skip(4)
            fixedSampleSize = try r.u32()
            tables["stsz"] = (payload.lowerBound + 12, Int(try r.u32()))
        case "elst":
            var r = ByteReader(try source.bytes(payload))
            let version = try r.u8()
            try r.skip(3)
            editCount = Int(try r.u32())
            for _ in 0..<min(2, editCount) {
                let duration = version == 1 ? Int64(bitPattern: try r.u64()) : Int64(try r.u32())
                let time = version == 1 ? Int64(bitPattern: try r.u64()) : Int64(Int32(bitPattern: try r.u32()))
                try r.skip(4)
                edits.append((duration, time))
            }
        case "dref":
            // version and flags, entry_count, then the entries: each self-contained when
            // its flags' lowest bit is set.
            selfContained = true
            for entry in try source.children((payload.lowerBound + 8)..<payload.upperBound) {
                var r = ByteReader(try source.bytes(entry.payload.lowerBound..<min(entry.payload.upperBound, entry.payload.lowerBound + 4)))
                if try r.u32() & 1 == 0 { selfContained = false }
            }
        default:
            break
        }
    }
}

/// A movie's `moov` as a reader of a whole file needs it (ISO/IEC 14496-12 §8.2.1): the
/// movie's timescale (mvhd, §8.2.2) and each track's boxes, from any source — the one
/// place outside the writers that walks a movie's structure.
public struct MovieBoxes {
    public var timescale: Int64
    public var tracks: [TrackBoxes]

    /// The first top-level `moov` of a file of `size` bytes.
    public init(file size: Int64, in source: BoxSource) throws {
        var offset: Int64 = 0
        while offset < size {
            let box = try source.box(at: offset, within: size)
            if box.type == "moov" {
                try self.init(moov: box.payload, in: source)
                return
            }
            offset = box.payload.upperBound
        }
        throw MP4Error.missing("moov")
    }

    /// The boxes inside a `moov` whose payload is `range`.
    public init(moov range: Range<Int64>, in source: BoxSource) throws {
        timescale = 1000
        tracks = []
        for box in try source.children(range) {
            if box.type == "mvhd" {
                var r = ByteReader(try source.bytes(box.payload))
                let version = try r.u8()
                try r.skip(3 + (version == 1 ? 16 : 8))
                timescale = Int64(try r.u32())
                guard timescale > 0 else { throw MP4Error.badBox("mvhd with timescale 0", at: Int(box.payload.lowerBound)) }
            } else if box.type == "trak" {
                tracks.append(try TrackBoxes(box.payload, in: source))
            }
        }
        guard !tracks.isEmpty else { throw MP4Error.missing("trak") }
    }
}

/// A fragmented file's top-level `moof`+`mdat` pairs in order (ISO/IEC 14496-12 §8.8.4,
/// §8.1.1), read from any source: each `moof`'s bytes (at most
/// `FragmentedFile.maximumHeaderBox`) with where it is, and where its `mdat`'s payload is.
/// `styp`, `sidx` and `free` are passed over; an `mdat` without a `moof` is refused.
public enum MediaFragments {
    public static func each(in source: BoxSource, size: Int64,
                            _ body: (_ moofAt: Int64, _ moof: [UInt8], _ media: Range<Int64>) throws -> Void) throws {
        var offset: Int64 = 0
        var moof: (offset: Int64, bytes: [UInt8])?
        while offset < size {
            let box = try source.box(at: offset, within: size)
            switch box.type {
            case "moof":
                let length = box.payload.upperBound - offset
                guard length <= FragmentedFile.maximumHeaderBox else { throw MP4Error.badBox("moof of \(length) bytes", at: Int(offset)) }
                moof = (offset, try source.bytes(offset..<box.payload.upperBound))
            case "mdat":
                guard let fragment = moof else { throw MP4Error.badBox("mdat without a moof", at: Int(offset)) }
                moof = nil
                try body(fragment.offset, fragment.bytes, box.payload)
            default:
                break
            }
            offset = box.payload.upperBound
        }
    }
}
