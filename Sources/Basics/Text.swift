// Text helpers that Foundation's String extensions used to give, kept to what onair needs
// (onair links no Foundation: no ICU, no CharacterSet, no String(format:)).

extension StringProtocol {
    /// Without leading and trailing spaces, tabs, CRs and LFs.
    public func trimmingWhitespace() -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }
        var s = Substring(self)
        while let f = s.first, blank(f) { s = s.dropFirst() }
        while let l = s.last, blank(l) { s = s.dropLast() }
        return String(s)
    }
}

extension BinaryFloatingPoint {
    /// Fixed-point text with `digits` after the point, rounded half away from zero:
    /// `2.0.fixed(1)` is "2.0", `(-0.05).fixed(1)` is "-0.1" (what printf's %.Nf prints for
    /// the values onair shows; it is not meant for numbers beyond ±9e15).
    public func fixed(_ digits: Int) -> String {
        let value = Double(self)
        guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
        var scale: Int64 = 1
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(value) * Double(scale)).rounded(.toNearestOrAwayFromZero)
        let units = Int64(scaled)
        let sign = value < 0 && units != 0 ? "-" : ""
        let whole = units / scale
        guard digits > 0 else { return sign + String(whole) }
        let fraction = String(units % scale)
        return sign + String(whole) + "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
}

extension BinaryInteger {
    /// Decimal text padded with zeros to `width` digits: `7.zeroPadded(2)` is "07".
    public func zeroPadded(_ width: Int) -> String {
        let digits = String(self.magnitude)
        return (self < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

extension Character {
    /// 0–9 and nothing else: `("0"..."9").contains` also holds "1" + a combining keycap,
    /// which `Int(_:)` then refuses (a force-unwrap trap on a value from outside).
    public var isASCIIDigitish: Bool { asciiValue.map { (0x30...0x39).contains($0) } ?? false }
}
