/// An onair.conf text edited in place, as its owner would by hand: a key's value replaced
/// on its own line (its indentation and a comment after it kept), a key added at the end
/// of its section (the section added at the file's end when there is none), a key taken
/// out; every other line — comments, blank lines, keys onair has or not — as it was.
/// What `onair passwd` and the settings page write back to the FAT.
struct ConfigEdit {
    private(set) var lines: [String]

    init(_ text: String) {
        lines = text.isEmpty ? [] : text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
    }

    /// The text to write: every line ended by LF (a CRLF line keeps its CR).
    var text: String { lines.map { $0 + "\n" }.joined() }

    struct Line {
        /// The dotted section (`publish.s3`), "" before the first header.
        var section: String
        var key: String
        var value: String
        var index: Int
        /// The full key, as `ConfigFile` names it.
        var fullKey: String { section.isEmpty ? key : section + "." + key }
    }

    /// Each `key = value` line, in order (a value as written: quotes and a trailing
    /// comment are `ConfigFile`'s to read).
    var entries: [Line] {
        var section = ""
        var result: [Line] = []
        for (index, raw) in lines.enumerated() {
            let line = raw.trimmingWhitespace()
            if line.hasPrefix("[") && line.hasSuffix("]") { section = String(line.dropFirst().dropLast()).trimmingWhitespace(); continue }
            guard !line.hasPrefix("#"), !line.hasPrefix(";"), let eq = line.firstIndex(of: "=") else { continue }
            result.append(Line(section: section, key: String(line[..<eq]).trimmingWhitespace(),
                               value: String(line[line.index(after: eq)...]).trimmingWhitespace(), index: index))
        }
        return result
    }

    /// The `[section]` and key a full key is written as: the longest section onair knows
    /// that prefixes it (`publish.s3.secret_key` → `[publish.s3]` + `secret_key`), the
    /// named sections (`destination.yt`, `wifi.office`) included.
    static func split(_ fullKey: String) -> (section: String, key: String) {
        let parts = fullKey.split(separator: ".").map(String.init)
        for count in stride(from: parts.count - 1, through: 1, by: -1) {
            let section = parts[..<count].joined(separator: ".")
            if ConfigFile.knownSections.contains(section) || ConfigFile.destinationName(section: section) != nil
                || ConfigFile.wifiName(section: section) != nil {
                return (section, parts[count...].joined(separator: "."))
            }
        }
        return ("", fullKey)
    }

    /// Sets `fullKey` to `value`: on the key's last line where it has one, else after the
    /// last line of its section. nil takes every line of the key out.
    mutating func set(_ fullKey: String, _ value: String?) {
        let mine = entries.filter { $0.fullKey == fullKey }
        guard let value else { return remove(mine.map(\.index)) }
        let written = Self.written(value)
        if let last = mine.last {
            // Earlier lines of a key set twice (across repeated sections) go: one value.
            let raw = lines[last.index]
            let indent = raw.prefix { $0 == " " || $0 == "\t" }
            let comment = Self.trailingComment(raw)
            lines[last.index] = "\(indent)\(last.key) = \(written)" + (comment.map { "  " + $0 } ?? "")
            return remove(mine.dropLast().map(\.index))
        }
        let (section, key) = Self.split(fullKey)
        add(["\(key) = \(written)"], section: section)
    }

    /// Takes out the lines at `indices` (of `entries`).
    mutating func remove(_ indices: [Int]) {
        for index in indices.sorted(by: >) { lines.remove(at: index) }
    }

    /// Adds whole lines at the end of `section` (after its last key, or its header), or
    /// at the file's end under a new header.
    mutating func add(_ added: [String], section: String) {
        if let last = entries.last(where: { $0.section == section }) {
            lines.insert(contentsOf: added, at: last.index + 1)
        } else if section.isEmpty {
            // Before the first header: keys there belong to no section.
            let header = lines.firstIndex { $0.trimmingWhitespace().hasPrefix("[") } ?? lines.count
            lines.insert(contentsOf: added, at: header)
        } else if let header = lines.lastIndex(where: { Self.header($0) == section }) {
            lines.insert(contentsOf: added, at: header + 1)
        } else {
            if let last = lines.last, !last.trimmingWhitespace().isEmpty { lines.append("") }
            lines += ["[\(section)]"] + added
        }
    }

    private static func header(_ line: String) -> String? {
        let trimmed = line.trimmingWhitespace()
        guard trimmed.hasPrefix("["), trimmed.hasSuffix("]") else { return nil }
        return String(trimmed.dropFirst().dropLast()).trimmingWhitespace()
    }

    /// A value as `ConfigFile.parse` reads it back exactly: in double quotes when it
    /// begins or ends with white space, begins with a quote, or holds a `#` a reader could
    /// take for a comment.
    static func written(_ value: String) -> String {
        let needsQuotes = value.first.map { $0 == " " || $0 == "\t" || $0 == "\"" } == true
            || value.last.map { $0 == " " || $0 == "\t" } == true || value.contains("#")
        return needsQuotes ? "\"\(value)\"" : value
    }

    /// A comment after a line's value (`fps = 30  # smooth`), kept when the value changes;
    /// not when the value is quoted or the comment holds a quote (a quoted value runs to
    /// its line's last quote).
    static func trailingComment(_ line: String) -> String? {
        guard let eq = line.firstIndex(of: "=") else { return nil }
        let value = line[line.index(after: eq)...].trimmingWhitespace()
        guard !value.hasPrefix("\""), let hash = value.firstRange(of: " #") ?? value.firstRange(of: "\t#") else { return nil }
        let comment = value[hash.lowerBound...].trimmingWhitespace()
        return comment.contains("\"") ? nil : String(comment)
    }
}
