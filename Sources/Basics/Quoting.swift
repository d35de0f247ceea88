/// Text from a file or a command line, made safe to put in a one-line message: quoted,
/// control characters escaped (`\u{0}`), and cut after `limit` characters, so a hostile
/// value can neither break the line nor flood the log.
public func quotedForMessage(_ value: String, limit: Int = 64) -> String {
    var out = ""
    for scalar in value.unicodeScalars.prefix(limit) {
        out += scalar.value < 0x20 || scalar.value == 0x7F ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
    }
    return "'" + out + (value.unicodeScalars.count > limit ? "…'" : "'")
}
