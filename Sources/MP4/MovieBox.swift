/// A movie header as a tree of boxes whose sizes are known before any byte is written, so
/// a sample table too large to hold (an export of hours: ~12 bytes a sample) can be
/// streamed from wherever its entries were spilled, and every box size still comes first
/// (ISO/IEC 14496-12 §4.2). Small boxes are plain bytes; a sample table is its header
/// fields plus entries that are either bytes or `external` (the caller copies them in).
public indirect enum MovieBox: Sendable {
    /// Whole boxes (or fields), as bytes.
    case raw([UInt8])
    /// Boxes one after another (a file's top level: ftyp, moov).
    case sequence([MovieBox])
    /// A container box: size + type + its children.
    case box(String, [MovieBox])
    /// A full box whose entries may live elsewhere: size + type + version/flags + `fields`
    /// (entry count, and stsz's sample_size before it) + the entries.
    case table(type: String, version: UInt8, fields: [UInt8], entries: Entries)

    public enum Entries: Sendable {
        case bytes([UInt8])
        /// `length` bytes the caller supplies, by `id`.
        case external(id: Int, length: Int64)

        var length: Int64 {
            switch self {
            case .bytes(let bytes): return Int64(bytes.count)
            case .external(_, let length): return length
            }
        }
    }

    public var size: Int64 {
        switch self {
        case .raw(let bytes): return Int64(bytes.count)
        case .sequence(let children): return children.reduce(0) { $0 + $1.size }
        case .box(_, let children): return 8 + children.reduce(0) { $0 + $1.size }
        case .table(_, _, let fields, let entries): return 12 + Int64(fields.count) + entries.length
        }
    }

    /// Writes the tree: bytes go to `emit`, external entries to `external(id, length)`.
    public func write(_ emit: ([UInt8]) throws -> Void, external: (Int, Int64) throws -> Void) rethrows {
        switch self {
        case .raw(let bytes):
            try emit(bytes)
        case .sequence(let children):
            for child in children { try child.write(emit, external: external) }
        case .box(let type, let children):
            try emit(Self.header(size: size, type: type))
            for child in children { try child.write(emit, external: external) }
        case .table(let type, let version, let fields, let entries):
            var w = ByteWriter()
            w.append(Self.header(size: size, type: type))
            w.u8(version)
            w.u24(0)
            w.append(fields)
            if case .bytes(let bytes) = entries { w.append(bytes) }
            try emit(w.bytes)
            if case .external(let id, let length) = entries { try external(id, length) }
        }
    }

    /// The tree as bytes, when every entry is in memory.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        write({ out += $0 }, external: { id, _ in preconditionFailure("external entries \(id) in an in-memory movie") })
        return out
    }

    static func header(size: Int64, type: String) -> [UInt8] {
        // A 32-bit size: a moov past 4 GiB would be a sample table of 300 million samples.
        precondition(size <= Int64(UInt32.max), "box \(type) of \(size) bytes")
        var w = ByteWriter()
        w.u32(UInt32(size))
        w.fourCC(type)
        return w.bytes
    }
}
