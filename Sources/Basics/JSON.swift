/// JSON text (RFC 8259) without Foundation: what onair writes (`/api/*`, `streams.json`,
/// a recording's `.json`, the log's JSON lines) and the little it reads back (a
/// recording's `.json`). Written compactly with keys sorted and `/` left alone, as
/// JSONEncoder's `.sortedKeys` and `.withoutEscapingSlashes` wrote it before.
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    /// An object from key/value pairs; a nil value leaves its key out (as a synthesized
    /// Encodable did for an optional).
    public static func fields(_ pairs: KeyValuePairs<String, (any JSONEncodable)?>) -> JSON {
        var members: [String: JSON] = [:]
        for (key, value) in pairs { if let value { members[key] = value.json } }
        return .object(members)
    }

    // MARK: Writing

    public var text: String {
        var out = ""
        write(into: &out)
        return out
    }

    public var bytes: [UInt8] { Array(text.utf8) }

    public func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value): out += Self.number(value)
        case .string(let value): Self.quote(value, into: &out)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                Self.quote(key, into: &out)
                out += ":"
                members[key]!.write(into: &out)
            }
            out += "}"
        }
    }

    /// A whole number without a fraction ("2", as JSONEncoder wrote it), any other the
    /// shortest text that reads back to the same Double; JSON has no NaN or infinity (null).
    public static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 { return String(Int64(value)) }
        return String(value)
    }

    /// A JSON string (RFC 8259 §7): quote, backslash and control characters escaped.
    public static func quote(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let s where s.value < 0x20:
                let hex = String(s.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    public static func quote(_ text: String) -> String {
        var out = ""
        quote(text, into: &out)
        return out
    }

    // MARK: Reading

    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var string: String? { if case .string(let value) = self { return value }; return nil }
    public var bool: Bool? { if case .bool(let value) = self { return value }; return nil }
    public var int64: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value == value.rounded() && abs(value) < 9_007_199_254_740_992: return Int64(value)
        default: return nil
        }
    }
    public var int: Int? { int64.map { Int($0) } }
    public var double: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// Parses one JSON text (RFC 8259 §2: whitespace around one value); nil when it is not
    /// JSON, nests deeper than `depth`, or has anything after the value.
    public static func parse(_ bytes: [UInt8], depth: Int = 64) -> JSON? {
        var parser = Parser(bytes: bytes, depthLeft: depth)
        guard let value = parser.value() else { return nil }
        parser.skipSpace()
        return parser.position == bytes.count ? value : nil
    }

    struct Parser {
        let bytes: [UInt8]
        var position = 0
        var depthLeft: Int

        init(bytes: [UInt8], depthLeft: Int) {
            self.bytes = bytes
            self.depthLeft = depthLeft
        }

        mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        mutating func literal(_ word: String, _ value: JSON) -> JSON? {
            let utf8 = Array(word.utf8)
            guard bytes.count - position >= utf8.count, Array(bytes[position..<position + utf8.count]) == utf8 else { return nil }
            position += utf8.count
            return value
        }

        mutating func value() -> JSON? {
            skipSpace()
            guard position < bytes.count else { return nil }
            switch bytes[position] {
            case UInt8(ascii: "n"): return literal("null", .null)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "\""): return string().map(JSON.string)
            case UInt8(ascii: "["):
                guard depthLeft > 0 else { return nil }
                depthLeft -= 1
                defer { depthLeft += 1 }
                position += 1
                var values: [JSON] = []
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") { position += 1; return .array(values) }
                while true {
                    guard let item = value() else { return nil }
                    values.append(item)
                    skipSpace()
                    guard position < bytes.count else { return nil }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "]") { return .array(values) }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { return nil }
                }
            case UInt8(ascii: "{"):
                guard depthLeft > 0 else { return nil }
                depthLeft -= 1
                defer { depthLeft += 1 }
                position += 1
                var members: [String: JSON] = [:]
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "}") { position += 1; return .object(members) }
                while true {
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), let key = string() else { return nil }
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return nil }
                    position += 1
                    guard let item = value() else { return nil }
                    members[key] = item
                    skipSpace()
                    guard position < bytes.count else { return nil }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "}") { return .object(members) }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { return nil }
                }
            default: return number()
            }
        }

        /// RFC 8259 §6: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        mutating func number() -> JSON? {
            let start = position
            func digits() -> Int {
                let first = position
                while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 { position += 1 }
                return position - first
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
            let integerStart = position
            let integerDigits = digits()
            guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
            var fractional = false
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                guard digits() > 0 else { return nil }
                fractional = true
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
                guard digits() > 0 else { return nil }
                fractional = true
            }
            let text = String(decoding: bytes[start..<position], as: UTF8.self)
            if !fractional, let value = Int64(text) { return .int(value) }
            return Double(text).map(JSON.double)
        }

        /// RFC 8259 §7, from the opening quote; nil for an unescaped control character, a
        /// bad escape or a lone surrogate.
        mutating func string() -> String? {
            position += 1
            var scalars = String.UnicodeScalarView()
            var run = position
            func flush() {
                if run < position { scalars.append(contentsOf: String(decoding: bytes[run..<position], as: UTF8.self).unicodeScalars) }
            }
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    flush()
                    position += 1
                    return String(scalars)
                }
                if byte < 0x20 { return nil }
                guard byte == UInt8(ascii: "\\") else { position += 1; continue }
                flush()
                position += 1
                guard position < bytes.count else { return nil }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{8}")
                case UInt8(ascii: "f"): scalars.append("\u{c}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    guard var code = hex4() else { return nil }
                    if (0xD800..<0xDC00).contains(code) {
                        guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                              bytes[position + 1] == UInt8(ascii: "u") else { return nil }
                        position += 2
                        guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { return nil }
                    scalars.append(scalar)
                default: return nil
                }
                run = position
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard bytes.count - position >= 4 else { return nil }
            var value: UInt32 = 0
            for byte in bytes[position..<position + 4] {
                guard let digit = Character(Unicode.Scalar(byte)).hexDigitValue else { return nil }
                value = value * 16 + UInt32(digit)
            }
            position += 4
            return value
        }
    }
}

/// A value that has a JSON form.
public protocol JSONEncodable {
    var json: JSON { get }
}

extension JSON: JSONEncodable { public var json: JSON { self } }
extension String: JSONEncodable { public var json: JSON { .string(self) } }
extension Bool: JSONEncodable { public var json: JSON { .bool(self) } }
extension Int: JSONEncodable { public var json: JSON { .int(Int64(self)) } }
extension Int64: JSONEncodable { public var json: JSON { .int(self) } }
extension Double: JSONEncodable { public var json: JSON { .double(self) } }
extension Array: JSONEncodable where Element: JSONEncodable { public var json: JSON { .array(map(\.json)) } }
