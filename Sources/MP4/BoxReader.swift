import Media

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
    public mutating func fourCC() throws -> String { String(decoding: try take(4), as: UTF8.self) }
    public mutating func take(_ count: Int) throws -> [UInt8] {
        guard count >= 0, position + count <= end else { throw MP4Error.truncated(at: position) }
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }
    public mutating func skip(_ count: Int) throws {
        guard count >= 0, position + count <= end else { throw MP4Error.truncated(at: position) }
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

    public static func parse(_ bytes: [UInt8]) throws -> [Box] {
        try parse(bytes, range: 0..<bytes.count)
    }

    static func parse(_ bytes: [UInt8], range: Range<Int>) throws -> [Box] {
        var boxes: [Box] = []
        var r = ByteReader(bytes, range: range)
        while r.remaining > 0 {
            let start = r.position
            guard r.remaining >= 8 else { throw MP4Error.badBox("\(r.remaining) stray bytes", at: start) }
            var size = Int(try r.u32())
            let type = try r.fourCC()
            var header = 8
            if size == 1 {
                size = Int(try r.u64())
                header = 16
            } else if size == 0 {
                size = range.upperBound - start  // extends to the end
            }
            guard size >= header, start + size <= range.upperBound else {
                throw MP4Error.badBox("box '\(type)' of size \(size) overruns its parent", at: start)
            }
            var box = Box(type: type, start: start, size: size, headerSize: header, children: [])
            if containers.contains(type) {
                box.children = try parse(bytes, range: box.payload)
            } else if let offset = childOffsets[type], box.payload.count >= offset {
                box.children = try parse(bytes, range: (box.payload.lowerBound + offset)..<box.payload.upperBound)
            }
            boxes.append(box)
            r.position = start + size
        }
        return boxes
    }
}
