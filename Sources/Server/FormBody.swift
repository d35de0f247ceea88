/// An HTML form's body as a browser posts it (`application/x-www-form-urlencoded`, the
/// WHATWG URL standard §5.1): `name=value` pairs joined by `&`, `+` for a space and
/// `%XX` for any other byte. Read in one pass over the bytes, at most `maximumFields`
/// pairs; nil for a `%` without two hex digits, bytes that are not UTF-8, or too many.
public enum FormBody {
    public static let maximumFields = 256

    public static func decode(_ body: [UInt8]) -> [(name: String, value: String)]? {
        var fields: [(name: String, value: String)] = []
        var name: [UInt8]?
        var current: [UInt8] = []
        var index = 0
        func finish() -> Bool {
            guard let text = String(validating: current, as: UTF8.self) else { return false }
            if let decodedName = name {
                guard let key = String(validating: decodedName, as: UTF8.self) else { return false }
                fields.append((key, text))
            } else if !current.isEmpty {
                fields.append((text, ""))
            }
            name = nil
            current = []
            return fields.count <= maximumFields
        }
        while index < body.count {
            let byte = body[index]
            switch byte {
            case UInt8(ascii: "&"):
                guard finish() else { return nil }
            case UInt8(ascii: "=") where name == nil:
                name = current
                current = []
            case UInt8(ascii: "+"):
                current.append(0x20)
            case UInt8(ascii: "%"):
                guard index + 2 < body.count, let high = hex(body[index + 1]), let low = hex(body[index + 2]) else { return nil }
                current.append(high << 4 | low)
                index += 2
            default:
                current.append(byte)
            }
            index += 1
        }
        guard finish() else { return nil }
        return fields
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
