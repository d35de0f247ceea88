/// Base64 (RFC 4648 §4, with padding): what SDP carries H.264's parameter sets in
/// (RFC 6184 §8.1 sprop-parameter-sets), and WS-Security its nonces and digests.
public enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            let chunk = UInt32(bytes[index]) << 16 | (count > 1 ? UInt32(bytes[index + 1]) << 8 : 0) | (count > 2 ? UInt32(bytes[index + 2]) : 0)
            for position in 0..<4 {
                out.append(position <= count ? alphabet[Int((chunk >> UInt32(18 - 6 * position)) & 0x3F)] : UInt8(ascii: "="))
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of Base64 text (padding optional, white space skipped); nil for text
    /// that is not Base64.
    public static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(byte - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(byte - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"): values.append(62)
            case UInt8(ascii: "/"): values.append(63)
            case UInt8(ascii: "="), 0x20, 0x0A, 0x0D, 0x09: continue
            default: return nil
            }
        }
        guard values.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var index = 0
        while index + 1 < values.count {
            let (a, b) = (values[index], values[index + 1])
            out.append(a << 2 | b >> 4)
            if index + 2 < values.count { out.append(b << 4 | values[index + 2] >> 2) }
            if index + 3 < values.count { out.append(values[index + 2] << 6 | values[index + 3]) }
            index += 4
        }
        return out
    }
}
