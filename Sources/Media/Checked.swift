/// Numbers from outside the process (a query, a header, a playlist, a box, a file, the
/// command line) become integers here, checked: in Swift an overflowing conversion or
/// arithmetic traps, and a trap on any thread ends the whole appliance (issue 29).

/// Seconds of media that came from outside: finite, 0 or more, and at most `limit`, so
/// that seconds × any 32-bit timescale (ISO/IEC 14496-12 timescales are 32-bit) and
/// seconds × 1000 stay far inside Int64. Parsed once, at the edge; what holds one can
/// compute ticks without another check.
public struct MediaSeconds: Sendable, Equatable {
    /// About 31 years.
    public static let limit = 1_000_000_000.0
    public let value: Double

    public init?(_ value: Double) {
        guard value.isFinite, value >= 0, value <= Self.limit else { return nil }
        self.value = value
    }

    /// A decimal number of seconds (`2`, `2.5`, `1e3`); nil for anything else or out of range.
    public init?<S: StringProtocol>(parsing text: S) {
        // Decimal only: Double(_:) also takes "0x10", "nan" and "infinity".
        guard text.utf8.count <= 64, text.utf8.allSatisfy({ (0x30...0x39).contains($0) || [0x2E, 0x65, 0x45, 0x2B, 0x2D].contains($0) }),
              let value = Double(String(text)) else { return nil }
        self.init(value)
    }

    /// The seconds as ticks of `timescale` (1...UInt32.max), rounded down.
    public func ticks(_ timescale: Int64) -> Int64 { ticksSaturating(seconds: value, timescale: timescale) }
}

/// `seconds × timescale` as whole ticks (rounded down), saturating at Int64's ends and 0
/// for NaN: for seconds a file implies (a movie's total over its own timescale), which can
/// be anything a corrupt box says.
public func ticksSaturating(seconds: Double, timescale: Int64) -> Int64 {
    int64Saturating((seconds * Double(timescale)).rounded(.down))
}

/// A Double as an Int64: its whole part, saturating at Int64's ends, 0 for NaN.
public func int64Saturating(_ value: Double) -> Int64 {
    guard !value.isNaN else { return 0 }
    // 2^63 is exact as a Double; everything below it converts.
    if value >= 9_223_372_036_854_775_808.0 { return .max }
    if value <= -9_223_372_036_854_775_808.0 { return .min }
    return Int64(value)
}

/// A Double as an Int: the same, for counts and sizes.
public func intSaturating(_ value: Double) -> Int { Int(int64Saturating(value)) }
