/// The value types of RFC 8216bis §4.2, parsed strictly: what a playlist says is only a
/// number if it has the grammar's form, so "NaN", "inf", "1e308", "-1" or "" are refused
/// here instead of becoming a value that traps when it is turned into an integer.
public enum HLSValue {
    /// decimal-integer: `[0-9]+`, 0 to 2^64−1.
    public static func decimalInteger<S: StringProtocol>(_ text: S) -> UInt64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return UInt64(text)
    }

    /// A decimal-integer that also fits an `Int` (every count onair works with).
    public static func integer<S: StringProtocol>(_ text: S) -> Int? {
        decimalInteger(text).flatMap { $0 <= UInt64(Int.max) ? Int($0) : nil }
    }

    /// decimal-floating-point: `[0-9]+(.[0-9]*)?`, non-negative and finite.
    public static func decimalFloat<S: StringProtocol>(_ text: S) -> Double? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, decimalDigits(whole, allowEmpty: false),
              parts.count == 1 || decimalDigits(parts[1], allowEmpty: true), let value = Double(String(text)),
              value.isFinite else { return nil }
        return value
    }

    /// The longest a segment can last and still be a number onair computes with
    /// (ticks, milliseconds) without overflow: a year.
    public static let longestDuration = 365.0 * 86_400

    /// An EXTINF duration (§4.4.4.1): a decimal-floating-point (or decimal-integer) number
    /// of seconds, up to `longestDuration`.
    public static func duration<S: StringProtocol>(_ text: S) -> Double? {
        decimalFloat(text).flatMap { $0 <= longestDuration ? $0 : nil }
    }

    /// `n[@o]` of EXT-X-BYTERANGE and the BYTERANGE attribute (§4.4.4.2).
    public static func byteRange<S: StringProtocol>(_ text: S) -> (length: UInt64, offset: UInt64?)? {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        guard let length = decimalInteger(parts[0]) else { return nil }
        if parts.count == 1 { return (length, nil) }
        guard let offset = decimalInteger(parts[1]) else { return nil }
        return (length, offset)
    }

    private static func decimalDigits<S: StringProtocol>(_ text: S, allowEmpty: Bool) -> Bool {
        (allowEmpty || !text.isEmpty) && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }
}
