/// What a `trak` says of its track besides the sample tables: its description, and the
/// times its edit list is made from.
@dynamicMemberLookup
public struct TrackHeader: Sendable, Equatable {
    public var description: TrackDescription
    /// Decode time of the first sample on the fragmented timeline, in `timescale` ticks.
    public var firstDecodeTime: Int64
    /// First presentation time on the fragmented timeline.
    public var firstPresentationTime: Int64
    public var mediaDuration: Int64

    public init(_ description: TrackDescription, firstDecodeTime: Int64, firstPresentationTime: Int64, mediaDuration: Int64) {
        self.description = description
        self.firstDecodeTime = firstDecodeTime
        self.firstPresentationTime = firstPresentationTime
        self.mediaDuration = mediaDuration
    }

    public subscript<T>(dynamicMember key: KeyPath<TrackDescription, T>) -> T { description[keyPath: key] }
}

extension MovieTrack {
    public var header: TrackHeader {
        TrackHeader(description, firstDecodeTime: firstDecodeTime, firstPresentationTime: firstPresentationTime, mediaDuration: mediaDuration)
    }
}

/// Where a sample table's entries go as they are made: memory for a recording, a file for
/// an export too long to hold (`MovieBox.Entries.external`).
public protocol TableSink {
    mutating func write(_ bytes: [UInt8])
    /// The entries as the box will hold them; `co64Base` is added to every 64-bit chunk
    /// offset (they are written relative to the mdat payload).
    func entries(co64Base: Int64?) -> MovieBox.Entries
}

public struct MemorySink: TableSink {
    public private(set) var bytes: [UInt8] = []
    public init() {}
    public mutating func write(_ more: [UInt8]) { bytes += more }
    public func entries(co64Base: Int64?) -> MovieBox.Entries {
        .bytes(co64Base.map { Self.chunkOffsets(bytes, movedBy: $0) } ?? bytes)
    }

    /// co64 entries (big-endian 64-bit chunk offsets), each moved by `base`: they are
    /// written relative to the mdat payload, whose place is known only at the end.
    public static func chunkOffsets(_ entries: [UInt8], movedBy base: Int64) -> [UInt8] {
        var w = ByteWriter(capacity: entries.count)
        var r = ByteReader(entries)
        while r.remaining >= 8, let value = try? r.u64() { w.u64(value &+ UInt64(base)) }
        return w.bytes
    }
}

/// One track's stts, ctts, stss, stsz, stsc and co64 (ISO/IEC 14496-12 §8.6.1.2, §8.6.1.3,
/// §8.6.2, §8.7.3, §8.7.4, §8.7.5), built a sample and a chunk at a time in constant
/// memory: runs of equal durations and composition offsets are kept open until they end.
public struct SampleTableWriter<Sink: TableSink> {
    public static var kinds: [String] { ["stts", "ctts", "stss", "stsz", "stsc", "co64"] }
    public private(set) var sinks: [Sink]
    /// The open run of stts (0) and ctts (1).
    private var runs: [(value: UInt32, count: UInt32)?] = [nil, nil]
    private var counts = [UInt32](repeating: 0, count: 6)  // entries per table
    private var samples: UInt32 = 0
    private var nonSync = false
    private var nonZeroOffset = false
    private var lastChunkSamples: Int?

    /// One sink per table, in `kinds` order.
    public init(sinks: [Sink]) {
        precondition(sinks.count == Self.kinds.count)
        self.sinks = sinks
    }

    public mutating func add(_ sample: MovieTrack.Sample) {
        samples += 1
        extend(0, sample.duration)
        let offset = UInt32(bitPattern: sample.compositionOffset)
        if sample.compositionOffset != 0 { nonZeroOffset = true }
        extend(1, offset)
        if sample.isSync { put(2, samples) } else { nonSync = true }
        put(3, sample.size)
    }

    /// A chunk of `samples` samples at `offset` from the start of the mdat payload.
    public mutating func addChunk(offset: Int64, samples count: Int) {
        counts[5] += 1
        var w = ByteWriter()
        w.u64(UInt64(offset))
        sinks[5].write(w.bytes)
        if lastChunkSamples != count {
            var entry = ByteWriter()
            entry.u32(counts[5]); entry.u32(UInt32(count)); entry.u32(1)
            sinks[4].write(entry.bytes)
            counts[4] += 1
            lastChunkSamples = count
        }
    }

    private mutating func extend(_ table: Int, _ value: UInt32) {
        if let current = runs[table], current.value == value {
            runs[table] = (value, current.count + 1)
            return
        }
        flush(table)
        runs[table] = (value, 1)
    }

    private mutating func flush(_ table: Int) {
        guard let current = runs[table] else { return }
        var w = ByteWriter()
        w.u32(current.count); w.u32(current.value)
        sinks[table].write(w.bytes)
        counts[table] += 1
        runs[table] = nil
    }

    private mutating func put(_ table: Int, _ value: UInt32) {
        var w = ByteWriter()
        w.u32(value)
        sinks[table].write(w.bytes)
        counts[table] += 1
    }

    /// Ends the open runs: after it, only `boxes`.
    public mutating func finish() {
        flush(0)
        flush(1)
    }

    /// The tables as boxes (after `finish`), chunk offsets moved by `mdatPayload`: ctts only
    /// when a sample has an offset, stss only when one is not a sync sample.
    public func boxes(mdatPayload: Int64) -> [MovieBox] {
        precondition(runs[0] == nil && runs[1] == nil, "boxes() before finish()")
        func count(_ n: UInt32) -> [UInt8] { var w = ByteWriter(); w.u32(n); return w.bytes }
        var boxes: [MovieBox] = [.table(type: "stts", version: 0, fields: count(counts[0]), entries: sinks[0].entries(co64Base: nil))]
        // Version 1: signed offsets, as the fragments carried them.
        if nonZeroOffset { boxes.append(.table(type: "ctts", version: 1, fields: count(counts[1]), entries: sinks[1].entries(co64Base: nil))) }
        if nonSync { boxes.append(.table(type: "stss", version: 0, fields: count(counts[2]), entries: sinks[2].entries(co64Base: nil))) }
        boxes.append(.table(type: "stsz", version: 0, fields: count(0) + count(counts[3]), entries: sinks[3].entries(co64Base: nil)))
        boxes.append(.table(type: "stsc", version: 0, fields: count(counts[4]), entries: sinks[4].entries(co64Base: nil)))
        boxes.append(.table(type: "co64", version: 0, fields: count(counts[5]), entries: sinks[5].entries(co64Base: mdatPayload)))
        return boxes
    }
}
