/// Reads back a fragmented MP4 file (`ftyp` `moov` then `moof`+`mdat` pairs) as the
/// sample tables of a progressive one. Reads go through a callback so a multi-gigabyte
/// recording is never held in memory: only the `moov` and one `moof` at a time.
///
/// A file cut short (a power cut mid-write) is read up to its last complete fragment;
/// what follows is reported, not trusted.
public struct FragmentedFile: Sendable {
    /// Byte ranges of the source file whose concatenation is the new `mdat` payload.
    public var payloads: [Range<Int64>]
    public var tracks: [MovieTrack]
    public var fragments: Int
    /// Where the last complete fragment ends; bytes after it were incomplete.
    public var completeBytes: Int64
    public var discardedBytes: Int64

    public var payloadSize: Int64 { payloads.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    /// Times and durations a recording can have (34 years), and timescales a track can
    /// have: what keeps every rescaling of the finished file's moov inside 64 bits.
    /// A decode time at 2^63 or more is a negative one written unsigned.
    static let longestSeconds: UInt64 = 1 << 30
    static let largestTimescale: UInt32 = 1 << 31

    /// The largest `moov` or `moof` read into memory (a real one is kilobytes).
    public static let maximumHeaderBox: Int64 = 64 << 20

    /// `read(offset, count)` returns exactly `count` bytes at `offset`, or nil.
    public static func scan(size: Int64, read: (Int64, Int) -> [UInt8]?) throws -> FragmentedFile {
        var offset: Int64 = 0
        var tracks: [MovieTrack] = []
        var payloads: [Range<Int64>] = []
        var payloadTotal: Int64 = 0
        var complete: Int64 = 0
        var fragments = 0
        var pendingMoof: (offset: Int64, bytes: [UInt8])?
        var durations: [Int: UInt64] = [:]  // ticks so far, per track index

        // A header that does not fit (cut short, or a size no file can have) ends what is
        // trusted: the fragments before it are kept.
        func header(at offset: Int64) -> BoxHeader? {
            let count = Int(min(16, size - offset))
            guard count >= 8, let head = read(offset, count) else { return nil }
            var r = ByteReader(head)
            return try? BoxHeader.read(&r, available: size - offset, topLevel: true)
        }

        while let box = header(at: offset) {
            // moov and moof are read whole: one larger than any real one is not a fragment.
            if (box.type == "moov" || box.type == "moof") && box.size > maximumHeaderBox {
                if box.type == "moov" { throw MP4Error.badBox("moov of \(box.size) bytes", at: Int(offset)) }
                break
            }
            switch box.type {
            case "moov":
                guard let bytes = read(offset, Int(box.size)) else { break }
                tracks = try movieTracks(bytes)
            case "moof":
                guard let bytes = read(offset, Int(box.size)) else { break }
                pendingMoof = (offset, bytes)
            case "mdat":
                guard let moof = pendingMoof else { throw MP4Error.badBox("mdat without a moof", at: Int(offset)) }
                pendingMoof = nil
                let payload = (offset + Int64(box.headerSize))..<(offset + box.size)
                try add(moof, payload: payload, at: payloadTotal, to: &tracks, durations: &durations)
                payloads.append(payload)
                payloadTotal += box.size - Int64(box.headerSize)
                fragments += 1
            default:
                break  // ftyp, free, styp: nothing to carry over
            }
            offset += box.size
            if pendingMoof == nil { complete = offset }
        }
        guard !tracks.isEmpty else { throw MP4Error.missing("moov") }
        return FragmentedFile(payloads: payloads, tracks: tracks, fragments: fragments,
                              completeBytes: complete, discardedBytes: size - complete)
    }

    /// One fragment's samples onto their tracks: each track's run of data must lie inside
    /// the fragment's `mdat` (`payload`), which goes at `payloadTotal` of the new one.
    private static func add(_ moof: (offset: Int64, bytes: [UInt8]), payload: Range<Int64>, at payloadTotal: Int64,
                            to tracks: inout [MovieTrack], durations: inout [Int: UInt64]) throws {
        let parsed = try ParsedSegment(bytes: moof.bytes)
        for traf in parsed.fragments.flatMap(\.trafs) where !traf.samples.isEmpty {
            guard let index = tracks.firstIndex(where: { $0.trackID == traf.trackID }) else {
                throw MP4Error.missing("trak for track \(traf.trackID)")
            }
            let start = moof.offset + Int64(traf.samples[0].range.lowerBound)
            let end = moof.offset + Int64(traf.samples[traf.samples.count - 1].range.upperBound)
            guard start >= payload.lowerBound, end <= payload.upperBound else {
                throw MP4Error.badBox("track \(traf.trackID) data outside its mdat", at: Int(moof.offset))
            }
            // A decode time of 2^62 ticks or more is no recording's (at 90 kHz, over a
            // million years; at 2^63 a negative time written unsigned): refused before
            // it is added to anything.
            let timescale = UInt64(tracks[index].timescale)
            guard traf.baseDecodeTime / timescale < longestSeconds else {
                throw MP4Error.badBox("tfdt \(traf.baseDecodeTime) of track \(traf.trackID)", at: Int(moof.offset))
            }
            durations[index, default: 0] += traf.duration
            guard durations[index]! / timescale < longestSeconds else {
                throw MP4Error.badBox("track \(traf.trackID) lasts over \(longestSeconds) s", at: Int(moof.offset))
            }
            if tracks[index].samples.isEmpty { tracks[index].firstDecodeTime = Int64(traf.baseDecodeTime) }
            tracks[index].chunks.append(.init(offset: payloadTotal + start - payload.lowerBound, sampleCount: traf.samples.count))
            tracks[index].samples += traf.samples.map {
                .init(duration: $0.duration, size: $0.size, compositionOffset: $0.compositionOffset, isSync: $0.isSync)
            }
        }
    }

    /// The tracks of an init segment (`ftyp` + `moov`), without samples.
    public static func movieTracks(inInit bytes: [UInt8]) throws -> [MovieTrack] {
        var offset = 0
        while offset < bytes.count {
            var r = ByteReader(bytes, range: offset..<bytes.count)
            let box = try BoxHeader.read(&r, available: Int64(bytes.count - offset), topLevel: true)
            if box.type == "moov" { return try movieTracks(Array(bytes[offset..<(offset + Int(box.size))])) }
            offset += Int(box.size)
        }
        throw MP4Error.missing("moov")
    }

    /// The tracks of an init segment's `moov`, with their `stsd` boxes as they are.
    static func movieTracks(_ moov: [UInt8]) throws -> [MovieTrack] {
        guard let root = try BoxTree.parse(moov).first, root.type == "moov" else { throw MP4Error.missing("moov") }
        return try root.all("trak").map { trak in
            let parsed = try ParsedInit.track(trak, moov)
            guard (1...largestTimescale).contains(parsed.timescale) else {
                throw MP4Error.badBox("track \(parsed.trackID) has timescale \(parsed.timescale)", at: trak.start)
            }
            return MovieTrack(TrackDescription(trackID: parsed.trackID, handler: parsed.handler, timescale: parsed.timescale,
                                               width: parsed.width, height: parsed.height, sampleDescription: parsed.sampleDescription),
                              firstDecodeTime: 0)
        }
    }
}

extension ParsedSegment {
    /// A media segment's track fragments, read through `read(offset, count)` (exactly
    /// `count` bytes at `offset`, or nil) from one of `size` bytes: only its `moof` boxes
    /// are held in memory, each at most `maximumMoof` bytes, so a segment fetched to a file
    /// is checked without being held whole. Each moof must be followed by the `mdat` its
    /// samples lie in (ISO/IEC 14496-12 §8.8.4, §8.16 for styp and sidx before them).
    public static func trackFragments(size: Int64, maximumMoof: Int64 = 4 << 20, trex: [ParsedInit.Trex] = [],
                                      read: (Int64, Int) -> [UInt8]?) throws -> [TrackFragment] {
        var offset: Int64 = 0
        var fragments: [TrackFragment] = []
        var moof: (offset: Int64, trafs: [TrackFragment])?
        while offset < size {
            let count = Int(min(16, size - offset))
            guard count >= 8, let head = read(offset, count) else { throw MP4Error.badBox("a box cut short", at: Int(clamping: offset)) }
            var r = ByteReader(head)
            let box = try BoxHeader.read(&r, available: size - offset, topLevel: true)
            switch box.type {
            case "moof":
                guard moof == nil else { throw MP4Error.badBox("moof without its mdat", at: Int(clamping: offset)) }
                guard box.size <= maximumMoof, let bytes = read(offset, Int(box.size)) else {
                    throw MP4Error.badBox("moof of \(box.size) bytes", at: Int(clamping: offset))
                }
                // Sample ranges come out relative to the moof's first byte (default-base-is-moof).
                moof = (offset, try ParsedSegment(bytes: bytes, trex: trex).fragments.flatMap(\.trafs))
            case "mdat":
                guard let (moofOffset, trafs) = moof else { throw MP4Error.badBox("mdat without a moof", at: Int(clamping: offset)) }
                let payload = (offset + Int64(box.headerSize))..<(offset + box.size)
                for traf in trafs {
                    for sample in traf.samples where sample.size > 0 {
                        let start = moofOffset + Int64(sample.range.lowerBound), end = moofOffset + Int64(sample.range.upperBound)
                        guard start >= payload.lowerBound, end <= payload.upperBound else {
                            throw MP4Error.badBox("track \(traf.trackID) data outside its mdat", at: Int(clamping: moofOffset))
                        }
                    }
                }
                fragments += trafs
                moof = nil
            default:
                break  // styp, sidx, prft, free: nothing the check needs
            }
            offset += box.size
        }
        guard moof == nil else { throw MP4Error.badBox("moof without its mdat", at: Int(clamping: moof!.offset)) }
        return fragments
    }
}
