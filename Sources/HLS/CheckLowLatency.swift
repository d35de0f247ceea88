import MP4

/// HLS_RULES §7: a low-latency media playlist (LL1, LL2, LL4, LL5, LL8) and the parts it
/// lists against the segments they became (LL6, LL7), as `onair validate URL` sees them
/// while it follows a live server.
public enum LowLatencyChecker {
    public struct Part: Sendable, Equatable {
        public var uri: String
        public var duration: Double
        public var independent: Bool
        /// The media sequence number of its parent segment.
        public var parent: Int
        /// Whether the parent's EXTINF follows it (it is the parent's last part).
        public var endsParent: Bool
    }

    /// What a player takes from a low-latency playlist.
    public struct Snapshot: Sendable {
        public var parts: [Part] = []
        public var partTarget: Double?
        public var hint: String?
        /// The media sequence number of the last complete segment (or one less than the first).
        public var lastSegment = 0
        public var isEnded = false
        public var targetDuration = 0

        public func contains(part uri: String) -> Bool { parts.contains { $0.uri == uri } }
    }

    public static func parse(_ text: String) -> Snapshot {
        var snapshot = Snapshot()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        var msn = 0
        for line in lines {
            if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") { msn += Int(line.dropFirst(22)) ?? 0 }
            if line.hasPrefix("#EXT-X-SKIP:") { msn += Int(ParsedPlaylist.attributes(String(line.dropFirst(12)))["SKIPPED-SEGMENTS"] ?? "") ?? 0 }
            if line.hasPrefix("#EXT-X-TARGETDURATION:") { snapshot.targetDuration = Int(line.dropFirst(22)) ?? 0 }
            if line.hasPrefix("#EXT-X-PART-INF:") {
                snapshot.partTarget = ParsedPlaylist.attributes(String(line.dropFirst(16)))["PART-TARGET"].flatMap(HLSValue.duration)
            }
            if line.hasPrefix("#EXT-X-PART:") {
                let attributes = ParsedPlaylist.attributes(String(line.dropFirst(12)))
                snapshot.parts.append(Part(uri: attributes["URI"] ?? "", duration: attributes["DURATION"].flatMap(HLSValue.duration) ?? -1,
                                           independent: attributes["INDEPENDENT"] == "YES", parent: msn, endsParent: false))
            }
            if line.hasPrefix("#EXT-X-PRELOAD-HINT:"), ParsedPlaylist.attributes(String(line.dropFirst(20)))["TYPE"] == "PART" {
                snapshot.hint = ParsedPlaylist.attributes(String(line.dropFirst(20)))["URI"]
            }
            if line == "#EXT-X-ENDLIST" { snapshot.isEnded = true }
            if !line.isEmpty && !line.hasPrefix("#") {
                if let last = snapshot.parts.indices.last, snapshot.parts[last].parent == msn { snapshot.parts[last].endsParent = true }
                msn += 1
            }
        }
        snapshot.lastSegment = msn - 1
        return snapshot
    }

    /// The rules one playlist can be checked against by itself.
    public static func checkPlaylist(_ text: String, path: String) -> [Finding] {
        var findings: [Finding] = []
        func report(_ severity: Finding.Severity, _ rule: String, _ message: String) {
            findings.append(Finding(rule: rule, severity: severity, location: path, message: message))
        }
        let snapshot = parse(text)
        let lines = text.split(separator: "\n").map(String.init)
        guard let target = snapshot.partTarget else {
            if !snapshot.parts.isEmpty { report(.error, "LL1", "EXT-X-PART without EXT-X-PART-INF") }
            return findings
        }
        // LL2: SERVER-CONTROL's hold-backs.
        let control = lines.first { $0.hasPrefix("#EXT-X-SERVER-CONTROL:") }.map { ParsedPlaylist.attributes(String($0.dropFirst(22))) } ?? [:]
        if let holdBack = control["PART-HOLD-BACK"].flatMap(HLSValue.duration) {
            if holdBack < 2 * target - 1e-9 { report(.error, "LL2", "PART-HOLD-BACK \(holdBack) is under twice PART-TARGET \(target)") }
            else if holdBack < 3 * target - 1e-5 { report(.warning, "LL2", "PART-HOLD-BACK \(holdBack) is under three PART-TARGETs") }
        } else {
            report(.error, "LL2", "EXT-X-PART-INF without PART-HOLD-BACK in EXT-X-SERVER-CONTROL")
        }
        let targetDuration = Double(snapshot.targetDuration)
        if let holdBack = control["HOLD-BACK"].flatMap(HLSValue.duration), holdBack < 3 * targetDuration {
            report(.error, "LL2", "HOLD-BACK \(holdBack) is under three target durations")
        }
        if let skip = control["CAN-SKIP-UNTIL"].flatMap(HLSValue.duration), skip < 6 * targetDuration {
            report(.error, "LL2", "CAN-SKIP-UNTIL \(skip) is under six target durations")
        }
        // LL4: no part longer than PART-TARGET; none much shorter but the ones allowed.
        for part in snapshot.parts {
            if part.duration < 0 { report(.error, "LL4", "\(part.uri): no DURATION") }
            if part.duration > target { report(.error, "LL4", "\(part.uri): DURATION \(part.duration) exceeds PART-TARGET \(target)") }
            if part.duration >= 0 && part.duration < 0.85 * target && !part.independent && !part.endsParent
                && part.parent <= snapshot.lastSegment {
                report(.error, "LL4", "\(part.uri): DURATION \(part.duration) is under 85% of PART-TARGET, and not the last of its segment")
            }
            if part.uri.isEmpty { report(.error, "LL5", "EXT-X-PART without URI") }
        }
        // LL5: a segment's own tags come before its first part.
        var inParts = false
        for line in lines {
            if line.hasPrefix("#EXT-X-PART:") { inParts = true }
            else if !line.hasPrefix("#") { inParts = false }
            else if inParts && ["#EXT-X-DISCONTINUITY", "#EXT-X-PROGRAM-DATE-TIME:", "#EXT-X-MAP:", "#EXT-X-KEY:"].contains(where: { line.hasPrefix($0) }) {
                report(.error, "LL5", "\(line.prefix(40)) between the parts of one segment")
            }
        }
        // LL8: one part hint, never with ENDLIST.
        let hints = lines.filter { $0.hasPrefix("#EXT-X-PRELOAD-HINT:") }.map { ParsedPlaylist.attributes(String($0.dropFirst(20))) }
        if hints.contains(where: { $0["TYPE"] == nil || $0["URI"] == nil }) { report(.error, "LL8", "EXT-X-PRELOAD-HINT without TYPE or URI") }
        if hints.filter({ $0["TYPE"] == "PART" }).count > 1 { report(.warning, "LL8", "more than one EXT-X-PRELOAD-HINT of TYPE=PART") }
        if snapshot.isEnded && !hints.isEmpty { report(.error, "LL8", "EXT-X-PRELOAD-HINT with EXT-X-ENDLIST") }
        return findings
    }

    /// A complete segment against the parts a player read of it (all of them, in order):
    /// the same samples (LL6), and INDEPENDENT=YES exactly where a part starts with a
    /// sync sample (LL7: a MUST for YES, a SHOULD for the others).
    public static func checkParts(_ parts: [(part: Part, bytes: [UInt8])], segment: [UInt8], location: String) -> [Finding] {
        var findings: [Finding] = []
        if let difference = partsDiffer(parts: parts.map(\.bytes), segment: segment) {
            findings.append(Finding(rule: "LL6", severity: .error, location: location, message: "its parts are not the segment: \(difference)"))
        }
        for (part, bytes) in parts {
            guard let video = (try? ParsedSegment(bytes: bytes))?.fragments.first?.trafs.first(where: { !$0.samples.isEmpty }) else { continue }
            let sync = video.samples[0].isSync
            if part.independent && !sync {
                findings.append(Finding(rule: "LL7", severity: .error, location: part.uri, message: "INDEPENDENT=YES, but its first sample is not a sync sample"))
            } else if !part.independent && sync {
                findings.append(Finding(rule: "LL7", severity: .warning, location: part.uri, message: "starts with a sync sample, but is not marked INDEPENDENT=YES"))
            }
        }
        return findings
    }
}
