import MP4

/// Action Message Format 0 (Adobe's "AMF0 File Format Specification"), as RTMP's commands
/// and the stream's metadata carry it: the values a publisher sends and the replies it
/// reads. Objects keep their keys' order (servers and players show them so).
public enum AMF0Value: Equatable, Sendable {
    case number(Double)
    case boolean(Bool)
    case string(String)
    case object([(String, AMF0Value)])
    case null
    case undefined
    /// An ECMA array: keys and values, as an object (onMetaData is one).
    case ecmaArray([(String, AMF0Value)])
    case strictArray([AMF0Value])
    /// Milliseconds since 1970 (the time zone field is written 0 and ignored, §2.13).
    case date(Double)

    public static func == (a: AMF0Value, b: AMF0Value) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)): return x == y || x.isNaN && y.isNaN
        case (.boolean(let x), .boolean(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.object(let x), .object(let y)), (.ecmaArray(let x), .ecmaArray(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.null, .null), (.undefined, .undefined): return true
        case (.strictArray(let x), .strictArray(let y)): return x == y
        case (.date(let x), .date(let y)): return x == y || x.isNaN && y.isNaN
        default: return false
        }
    }

    /// A property of an object or ECMA array (the first with the key).
    public subscript(key: String) -> AMF0Value? {
        switch self {
        case .object(let pairs), .ecmaArray(let pairs): return pairs.first { $0.0 == key }?.1
        default: return nil
        }
    }

    public var string: String? { if case .string(let value) = self { value } else { nil } }
    public var number: Double? { if case .number(let value) = self { value } else { nil } }
}

/// Writing and reading AMF0 values (§2: one marker byte, then the value, big-endian).
public enum AMF0 {
    static let objectEnd: [UInt8] = [0, 0, 9]

    public static func encode(_ values: [AMF0Value]) -> [UInt8] {
        var w = ByteWriter()
        for value in values { encode(value, into: &w) }
        return w.bytes
    }

    static func encode(_ value: AMF0Value, into w: inout ByteWriter) {
        switch value {
        case .number(let number):
            w.u8(0x00); w.u64(number.bitPattern)
        case .boolean(let flag):
            w.u8(0x01); w.u8(flag ? 1 : 0)
        case .string(let text):
            let utf8 = Array(text.utf8)
            if utf8.count <= 0xFFFF {
                w.u8(0x02); w.u16(UInt16(utf8.count))
            } else {
                w.u8(0x0C); w.u32(UInt32(clamping: utf8.count))  // long string, §2.14
            }
            w.append(utf8)
        case .object(let pairs):
            w.u8(0x03); encode(pairs, into: &w)
        case .null:
            w.u8(0x05)
        case .undefined:
            w.u8(0x06)
        case .ecmaArray(let pairs):
            w.u8(0x08); w.u32(UInt32(clamping: pairs.count)); encode(pairs, into: &w)
        case .strictArray(let values):
            w.u8(0x0A); w.u32(UInt32(clamping: values.count))
            for value in values { encode(value, into: &w) }
        case .date(let milliseconds):
            w.u8(0x0B); w.u64(milliseconds.bitPattern); w.u16(0)
        }
    }

    /// An object's properties: each key a short string without its marker, then the
    /// end marker (an empty key and 0x09).
    private static func encode(_ pairs: [(String, AMF0Value)], into w: inout ByteWriter) {
        for (key, value) in pairs {
            let utf8 = Array(key.utf8.prefix(0xFFFF))
            w.u16(UInt16(utf8.count)); w.append(utf8)
            encode(value, into: &w)
        }
        w.append(objectEnd)
    }

    /// Objects and arrays nest at most this deep in what is read: a server's replies nest
    /// two levels; a deeper one is an attack on the stack.
    static let maximumDepth = 16

    /// Every value in `bytes`, in order; time and memory linear in the input (a count is
    /// believed only as far as the bytes left can hold it).
    public static func decode(_ bytes: [UInt8]) throws -> [AMF0Value] {
        var reader = ByteReader(bytes)
        var values: [AMF0Value] = []
        while reader.remaining > 0 { values.append(try value(&reader, depth: 0)) }
        return values
    }

    private static func value(_ r: inout ByteReader, depth: Int) throws -> AMF0Value {
        let at = r.position
        guard depth < maximumDepth else { throw RTMPError.malformed("AMF0 nested more than \(maximumDepth) deep at byte \(at)") }
        do {
            switch try r.u8() {
            case 0x00: return .number(Double(bitPattern: try r.u64()))
            case 0x01: return .boolean(try r.u8() != 0)
            case 0x02: return .string(try text(&r, count: Int(try r.u16())))
            case 0x03: return .object(try properties(&r, depth: depth))
            case 0x05: return .null
            case 0x06: return .undefined
            case 0x08:
                _ = try r.u32()  // the count is a hint (§2.10): the end marker ends it
                return .ecmaArray(try properties(&r, depth: depth))
            case 0x0A:
                let count = Int(try r.u32())
                // Each value takes at least its marker byte.
                guard count <= r.remaining else { throw RTMPError.malformed("AMF0 strict array of \(count) values in \(r.remaining) bytes at byte \(at)") }
                var values: [AMF0Value] = []
                for _ in 0..<count { values.append(try value(&r, depth: depth + 1)) }
                return .strictArray(values)
            case 0x0B:
                let milliseconds = Double(bitPattern: try r.u64())
                _ = try r.u16()
                return .date(milliseconds)
            case 0x0C: return .string(try text(&r, count: Int(try r.u32())))
            case let marker: throw RTMPError.malformed("AMF0 type \(marker) at byte \(at) is not one onair reads")
            }
        } catch let error as MP4Error {
            throw RTMPError.malformed("AMF0 \(error)")
        }
    }

    private static func text(_ r: inout ByteReader, count: Int) throws -> String {
        String(decoding: try r.take(count), as: UTF8.self)
    }

    private static func properties(_ r: inout ByteReader, depth: Int) throws -> [(String, AMF0Value)] {
        var pairs: [(String, AMF0Value)] = []
        while true {
            let key = try text(&r, count: Int(try r.u16()))
            if key.isEmpty, r.remaining > 0, r.bytes[r.position] == 0x09 {
                try r.skip(1)
                return pairs
            }
            pairs.append((key, try value(&r, depth: depth + 1)))
        }
    }
}

/// What goes wrong talking to an RTMP server, in words for the console.
public enum RTMPError: Error, Equatable, CustomStringConvertible {
    /// Bytes that are not what RTMP says they are.
    case malformed(String)
    /// The server said no (its own words, e.g. a wrong stream key).
    case refused(String)

    public var description: String {
        switch self {
        case .malformed(let what): return what
        case .refused(let why): return why
        }
    }
}
