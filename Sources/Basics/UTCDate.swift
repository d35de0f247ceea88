/// ISO-8601 UTC timestamps with milliseconds (`2026-12-02T16:42:33.123Z`), as
/// EXT-X-PROGRAM-DATE-TIME wants them (RFC 8216bis §4.4.4.6), without Foundation.
public enum UTCDate {
    /// Civil date from days since 1970-01-01 (H. Hinnant, "chrono-Compatible Low-Level
    /// Date Algorithms", days_from_civil inverse).
    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The UTC calendar date and time of day of a Unix time in ms.
    public static func components(milliseconds: Int64) -> (year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64, millisecond: Int64) {
        let ms = ((milliseconds % 1000) + 1000) % 1000
        let seconds = (milliseconds - ms) / 1000
        let secondOfDay = ((seconds % 86400) + 86400) % 86400
        let (y, mo, d) = civil(days: (seconds - secondOfDay) / 86400)
        return (y, mo, d, secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60, ms)
    }

    public static func iso8601(milliseconds: Int64) -> String {
        let c = components(milliseconds: milliseconds)
        func pad(_ v: Int64, _ n: Int) -> String {
            var s = String(v)
            while s.count < n { s = "0" + s }
            return s
        }
        return "\(pad(c.year, 4))-\(pad(c.month, 2))-\(pad(c.day, 2))T\(pad(c.hour, 2)):"
            + "\(pad(c.minute, 2)):\(pad(c.second, 2)).\(pad(c.millisecond, 3))Z"
    }

    /// Compact form for stream ids: `20261202T164233Z`.
    public static func compact(milliseconds: Int64) -> String {
        let full = iso8601(milliseconds: milliseconds)
        return String(full.prefix(19).filter { $0 != "-" && $0 != ":" }) + "Z"
    }

    /// The time at the start of a compact id (`20261202T164233Z-3f9a`), ms; nil if none.
    public static func parseCompact(_ text: String) -> Int64? {
        let c = Array(text.prefix(16))
        guard c.count == 16, c[8] == "T", c[15] == "Z" else { return nil }
        let s = String(c)
        func part(_ from: Int, _ count: Int) -> Substring { s.dropFirst(from).prefix(count) }
        return parse("\(part(0, 4))-\(part(4, 2))-\(part(6, 2))T\(part(9, 2)):\(part(11, 2)):\(part(13, 2))Z")
    }

    /// Parses `YYYY-MM-DDThh:mm:ss(.sss)?(Z|±hh:mm)` back to milliseconds; nil if malformed.
    public static func parse(_ text: String) -> Int64? {
        let c = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= c.count else { return nil }
            var v: Int64 = 0
            for i in from..<(from + count) {
                guard c[i] >= 48, c[i] <= 57 else { return nil }
                v = v * 10 + Int64(c[i] - 48)
            }
            return v
        }
        guard c.count >= 20, c[4] == 45, c[7] == 45, c[10] == 84, c[13] == 58, c[16] == 58,
              let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2),
              let h = num(11, 2), let mi = num(14, 2), let s = num(17, 2) else { return nil }
        var i = 19
        var ms: Int64 = 0
        if i < c.count, c[i] == 46 {
            i += 1
            var digits = 0
            while i < c.count, c[i] >= 48, c[i] <= 57 {
                if digits < 3 { ms = ms * 10 + Int64(c[i] - 48) }
                digits += 1; i += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { ms *= 10 }
        }
        var offset: Int64 = 0
        if i < c.count, c[i] == 90 { i += 1 } else if i + 6 == c.count, c[i] == 43 || c[i] == 45,
                  let oh = num(i + 1, 2), let om = num(i + 4, 2) {
            offset = (c[i] == 43 ? 1 : -1) * (oh * 60 + om) * 60_000
            i += 6
        } else { return nil }
        guard i == c.count else { return nil }
        return (days(year: y, month: mo, day: d) * 86400 + h * 3600 + mi * 60 + s) * 1000 + ms - offset
    }
}

extension UTCDate {
    /// RFC 9110 §5.6.7 IMF-fixdate, e.g. `Wed, 02 Dec 2026 16:42:33 GMT`.
    public static func httpDate(seconds: Int64) -> String {
        let iso = iso8601(milliseconds: seconds * 1000)
        let days = (seconds - ((seconds % 86400) + 86400) % 86400) / 86400
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][Int(((days % 7) + 7) % 7)]
        let (y, m, d) = civil(days: days)
        let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][Int(m) - 1]
        let time = iso.dropFirst(11).prefix(8)
        return "\(weekday), \(d < 10 ? "0" : "")\(d) \(month) \(y) \(time) GMT"
    }
}
