import Server
import Spool

/// One value of onair.conf (or `--set`) into what it means, checked: a choice, a number in
/// its range, a size, a rate, a duration, a listen address. Each throws a message that
/// names what was wrong; `ConfigFile` adds the file, line and key.
extension ConfigFile {

    static func choice<T: RawRepresentable & CaseIterable>(_ value: String, _ type: T.Type) throws -> T where T.RawValue == String {
        guard let parsed = T(rawValue: value) else {
            throw ConfigError.expected("one of \(T.allCases.map(\.rawValue).joined(separator: ", "))", got: quoted(value))
        }
        return parsed
    }

    static func boolean(_ value: String) throws -> Bool {
        switch value.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: throw ConfigError.expected("true or false", got: quoted(value))
        }
    }

    static func integer(_ value: String, _ range: ClosedRange<Int>) throws -> Int {
        guard let n = Int(value), range.contains(n) else { throw ConfigError.expected("an integer in \(range.lowerBound)…\(range.upperBound)", got: quoted(value)) }
        return n
    }

    static func evenInteger(_ value: String, _ range: ClosedRange<Int>) throws -> Int {
        let n = try integer(value, range)
        guard n % 2 == 0 else { throw ConfigError.invalid("must be even for 4:2:0 video, got \(n)") }
        return n
    }

    /// Bits per second: `1500000`, `1500k` and `1.5M` are the same.
    public static func bitrate(_ value: String) throws -> Int {
        try scaled(value, 1000...100_000_000, "bits per second like 1500000, 1500k or 1.5M")
    }

    /// An encoder's capacity in pixels per second: `62208000` and `62.208M` are the same,
    /// and a hardware encoder's can reach billions.
    static func pixelRate(_ value: String) throws -> Int {
        try scaled(value, 1000...100_000_000_000, "pixels per second like 62208000 or 120M")
    }

    /// A number with an optional k or M suffix, within `range`.
    private static func scaled(_ value: String, _ range: ClosedRange<Int>, _ expected: String) throws -> Int {
        var number = Substring(value)
        var scale = 1
        if let last = number.last, "kKmM".contains(last) {
            scale = "kK".contains(last) ? 1000 : 1_000_000
            number = number.dropLast()
        }
        guard let scaled = try decimal(String(number), scale: scale), range.contains(scaled) else {
            throw ConfigError.expected(expected, got: quoted(value))
        }
        return scaled
    }

    /// Seconds with up to three decimals, as milliseconds.
    static func milliseconds(_ value: String, _ range: ClosedRange<Int>) throws -> Int {
        guard let ms = try decimal(value, scale: 1000), range.contains(ms) else {
            throw ConfigError.expected("seconds between \(Double(range.lowerBound) / 1000) and \(Double(range.upperBound) / 1000)", got: quoted(value))
        }
        return ms
    }

    /// A non-negative decimal times `scale`, exactly (no floating point); nil if malformed
    /// or if it has more precision than `scale` can hold.
    static func decimal(_ text: String, scale: Int) throws -> Int? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty || parts.count == 2, whole.allSatisfy(\.isASCIIDigitish) else { return nil }
        // Digits past what an Int holds are too many, not 0.
        guard let wholeValue = whole.isEmpty ? 0 : Int(whole) else { return nil }
        var result = wholeValue.multipliedReportingOverflow(by: scale)
        guard !result.overflow else { return nil }
        if parts.count == 2 {
            let fraction = parts[1]
            guard !fraction.isEmpty, fraction.allSatisfy(\.isASCIIDigitish) else { return nil }
            var place = scale
            for digit in fraction {
                place /= 10
                let d = Int(digit.asciiValue! - 0x30)
                if place == 0 { if d != 0 { return nil } else { continue } }
                result = result.partialValue.addingReportingOverflow(d * place)
                guard !result.overflow else { return nil }
            }
        }
        return result.partialValue
    }

    /// `auto`, a percentage (`10%`) or a size (`byteSize`).
    static func minimumFree(_ value: String) throws -> MinimumFree {
        if value == "auto" { return .automatic }
        if value.hasSuffix("%"), let percent = Int(value.dropLast()), (0...90).contains(percent) { return .percent(percent) }
        guard let bytes = byteSize(value) else {
            throw ConfigError.expected("auto, a percentage like 10% or a size like 2G", got: quoted(value))
        }
        return .bytes(bytes)
    }

    /// A size in bytes: `2G`, `500M`, `1048576` (binary units K, M, G, T); nil if malformed
    /// or past Int64.
    static func byteSize(_ value: String) -> Int64? {
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        var number = Substring(value), scale: Int64 = 1
        if let last = number.last?.uppercased().first, let unit = units[last] { scale = unit; number = number.dropLast() }
        guard let count = Int64(number), count >= 0, count <= Int64.max / scale else { return nil }
        return count * scale
    }

    /// `server.listen`: a numeric address and a port, checked as the server will bind it,
    /// so a bad one is reported here with its file and line.
    static func listenAddress(_ value: String) throws -> String {
        do { _ = try ListenAddress(value) } catch {
            throw ConfigError.expected("ADDR:PORT with a numeric address (127.0.0.1:8080; 0.0.0.0:8080 for every interface; [::1]:8080) or off", got: quoted(value))
        }
        return value
    }
}
