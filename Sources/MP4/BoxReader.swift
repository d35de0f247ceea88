
/// Big-endian reads over a byte array, throwing instead of trapping on short input.
public struct ByteReader {
    public let bytes: [UInt8]
    public var position: Int
    public let end: Int

    public init(_ bytes: [UInt8], range: Range<Int>? = nil) {
        self.bytes = bytes
        self.position = range?.lowerBound ?? 0
        self.end = range?.upperBound ?? bytes.count
    }

    public var remaining: Int { end - position }

    public mutating func u8() throws -> UInt8 {
        guard position < end else { throw MP4Error.truncated(at: position) }
        defer { position += 1 }
        return bytes[position]
    }
    public mutating func u16() throws -> UInt16 { UInt16(try u8()) << 8 | UInt16(try u8()) }
    public mutating func u24() throws -> UInt32 { UInt32(try u16()) << 8 | UInt32(try u8()) }
    public mutating func u32() throws -> UInt32 { UInt32(try u16()) << 16 | UInt32(try u16()) }
    public mutating func u64() throws -> UInt64 { UInt64(try u32()) << 32 | UInt64(try u32()) }
    /// Four characters, always: a byte outside printable ASCII reads as "?" (UTF-8 decoding
    /// would make one bad byte three, and a code that no longer has four characters cannot be
    /// written back: the recording's finaliser copies the handler type).
    public mutating func fourCC() throws -> String {
        String(decoding: try take(4).map { (0x20...0x7E).contains($0) ? $0 : 0x3F }, as: UTF8.self)
    }
    /// `count` is compared with what is left, never added to the position first: a count
    /// near Int.max from a reader's input must be an error, not an overflow trap.
    public mutating func take(_ count: Int) throws -> [UInt8] {
        guard count >= 0, count <= end - position else { throw MP4Error.truncated(at: position) }
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }
    public mutating func skip(_ count: Int) throws {
        guard count >= 0, count <= end - position else { throw MP4Error.truncated(at: position) }
        position += count
    }
}

public enum MP4Error: Error, Equatable, CustomStringConvertible {
    case truncated(at: Int)
    case badBox(String, at: Int)
    case missing(String)

    public var description: String {
        switch self {
        case .truncated(let at): return "truncated at byte \(at)"
        case .badBox(let why, let at): return "\(why) at byte \(at)"
        case .missing(let what): return "missing \(what)"
        }
    }
}

/// One box of a parsed tree: where it is and what it holds.
public struct Box: Sendable {
    public var type: String
    public var start: Int
    public var size: Int
    public var headerSize: Int
    public var children: [Box]

    public var payload: Range<Int> { (start + headerSize)..<(start + size) }

    public func child(_ type: String) -> Box? { children.first { $0.type == type } }
    public func all(_ type: String) -> [Box] { children.filter { $0.type == type } }

    /// Follows a path of child types, e.g. `["mdia", "minf", "stbl"]`.
    public func find(_ path: [String]) -> Box? {
        var box: Box? = self
        for type in path { box = box?.child(type) }
        return box
    }
}

public enum BoxTree {
    /// Boxes whose payload is a list of boxes (14496-12 §8), and sample entries whose
    /// children start after a fixed prefix.
    static let containers: Set<String> = ["moov", "trak", "mdia", "minf", "stbl", "mvex", "moof",
                                          "traf", "dinf", "edts", "udta"]
    static let childOffsets: [String: Int] = ["stsd": 8, "dref": 8, "avc1": 78, "avc3": 78, "hvc1": 78, "mp4a": 28]
    /// The deepest a real file nests (moov/trak/mdia/minf/stbl/stsd/avc1/avcC is 8), with
    /// room to spare; deeper input is refused rather than recursed into.
    public static let maximumDepth = 16

    public static func parse(_ bytes: [UInt8]) throws -> [Box] {
        try parse(bytes, range: 0..<bytes.count, depth: 0)
    }

    static func parse(_ bytes: [UInt8], range: Range<Int>, depth: Int) throws -> [Box] {
        guard depth <= maximumDepth else { throw MP4Error.badBox("boxes nested deeper than \(maximumDepth)", at: range.lowerBound) }
        var boxes: [Box] = []
        var r = ByteReader(bytes, range: range)
        while r.remaining > 0 {
            let start = r.position
            guard r.remaining >= 8 else { throw MP4Error.badBox("\(r.remaining) stray bytes", at: start) }
            let header = try BoxHeader.read(&r, available: Int64(range.upperBound - start), topLevel: depth == 0)
            let size = Int(header.size)
            var box = Box(type: header.type, start: start, size: size, headerSize: header.headerSize, children: [])
            if containers.contains(header.type) {
                box.children = try parse(bytes, range: box.payload, depth: depth + 1)
            } else if let offset = childOffsets[header.type], box.payload.count >= offset {
                box.children = try parse(bytes, range: (box.payload.lowerBound + offset)..<box.payload.upperBound, depth: depth + 1)
            }
            boxes.append(box)
            r.position = start + size
        }
        return boxes
    }
}

/// A box header (ISO/IEC 14496-12 §4.2): a 32-bit size, the type, and a 64-bit
/// `largesize` when size is 1. Every size is checked against what its parent has left
/// before it becomes an offset, so no size field (0, 1, 2^31, 2^63, 2^64−1) can overflow.
public struct BoxHeader: Equatable, Sendable {
    public var type: String
    public var size: Int64
    public var headerSize: Int

    /// Reads the header at `r.position`; `available` is how many bytes the parent (or the
    /// file) has from there. Size 0 ("to the end of the file") is only allowed at the top
    /// level (§4.2).
    public static func read(_ r: inout ByteReader, available: Int64, topLevel: Bool) throws -> BoxHeader {
        let start = r.position
        let small = try r.u32()
        let type = try r.fourCC()
        var size = Int64(small), headerSize = 8
        if small == 1 {
            let large = try r.u64()
            guard large <= UInt64(Int64.max) else { throw MP4Error.badBox("box '\(type)' has a 64-bit size of \(large)", at: start) }
            size = Int64(large)
            headerSize = 16
        } else if small == 0 {
            guard topLevel else { throw MP4Error.badBox("box '\(type)' inside another has size 0", at: start) }
            size = available
        }
        guard size >= Int64(headerSize), size <= available else {
            throw MP4Error.badBox("box '\(type)' of size \(size) overruns its parent", at: start)
        }
        return BoxHeader(type: type, size: size, headerSize: headerSize)
    }
}
