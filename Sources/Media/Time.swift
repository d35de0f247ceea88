/// Media time is integer ticks in a timescale (ticks per second); no floating point on the
/// media path. Capture times are nanoseconds of CLOCK_MONOTONIC.
public enum Timescale {
    public static let nanoseconds: Int64 = 1_000_000_000
    /// 90 kHz: the MPEG convention, and a multiple of every common frame rate's tick.
    public static let video: Int64 = 90_000
}

/// `value * to / from`, rounded to the nearest tick (halves away from zero), without
/// intermediate overflow (like av_rescale_rnd NEAR_INF); a result past Int64 saturates
/// at its end rather than trapping, since values a file gives arrive here.
@inlinable
public func rescale(_ value: Int64, from: Int64, to: Int64) -> Int64 {
    precondition(from > 0 && to > 0, "timescales must be positive")
    let product = value.multipliedFullWidth(by: to)
    let negative = value < 0
    // |value * to| as a 128-bit magnitude split into high/low words.
    var high = product.high, low = product.low
    if negative {
        // Two's complement negate of the 128-bit value.
        low = ~low &+ 1
        high = ~high &+ (low == 0 ? 1 : 0)
    }
    let magnitude = (high: UInt64(bitPattern: high), low: low)
    let divisor = UInt64(from)
    let half = divisor / 2
    // Add half the divisor for rounding to nearest.
    let (sumLow, carry) = magnitude.low.addingReportingOverflow(half)
    let sumHigh = magnitude.high &+ (carry ? 1 : 0)
    // A quotient of 2^64 or more (the high word at least the divisor) would trap.
    guard sumHigh < divisor else { return negative ? .min : .max }
    let (quotient, _) = divisor.dividingFullWidth((high: sumHigh, low: sumLow))
    guard quotient <= UInt64(Int64.max) else { return negative ? .min : .max }
    return negative ? -Int64(quotient) : Int64(quotient)
}

/// A duration in seconds written for people and playlists (e.g. `2.000`), from ticks.
public func decimalSeconds(_ ticks: Int64, timescale: Int64, places: Int = 3) -> String {
    var scale: Int64 = 1
    for _ in 0..<places { scale *= 10 }
    let scaled = rescale(ticks, from: timescale, to: scale)
    let sign = scaled < 0 ? "-" : ""
    let magnitude = scaled.magnitude
    let whole = magnitude / UInt64(scale)
    var fraction = String(magnitude % UInt64(scale))
    while fraction.count < places { fraction = "0" + fraction }
    return places == 0 ? "\(sign)\(whole)" : "\(sign)\(whole).\(fraction)"
}
