import Basics
/// A single HTTP byte range (RFC 9110 §14.1.2). A header that is not exactly one
/// `first-pos "-" [last-pos]` or `"-" suffix-length` of digits is ignored (the whole file,
/// as §14.2 allows for an invalid or several ranges); digits too long for 64 bits are still
/// digits: a first position past any file, a last one clamped to the end.
public enum ByteRange: Equatable, Sendable {
    case none
    case unsatisfiable
    case range(Int64, Int64)

    public static func parse(_ header: String?, size: Int64) -> ByteRange {
        guard let header else { return .none }
        let parts = header.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        // The unit is case-insensitive (§14.1); white space may surround the range.
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return .none }
        let spec = parts[1].trimmingWhitespace()
        let ends = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard ends.count == 2 else { return .none }
        func digits(_ text: Substring) -> Int64?? {  // nil: not digits; .some(nil): too large
            guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return .some(Int64(text))
        }
        if ends[0].isEmpty {
            guard let suffix = digits(ends[1]) else { return .none }
            let length = suffix ?? Int64.max
            guard length > 0, size > 0 else { return .unsatisfiable }
            return .range(max(0, size - length), size - 1)
        }
        guard let parsedFirst = digits(ends[0]) else { return .none }
        let first = parsedFirst ?? Int64.max
        var last = size - 1
        if !ends[1].isEmpty {
            guard let parsedLast = digits(ends[1]) else { return .none }
            let value = parsedLast ?? Int64.max
            guard value >= first else { return .none }  // invalid: ignored (§14.1.2)
            last = min(value, size - 1)
        }
        guard first < size else { return .unsatisfiable }
        return .range(first, last)
    }
}
