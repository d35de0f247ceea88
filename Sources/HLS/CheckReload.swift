import Layout
/// HLS_RULES §2: how a live media playlist may change between two reloads. A client that
/// polls compares each snapshot with the one before (RFC 8216bis §6.2.1–6.2.2).
public enum ReloadChecker {
    public static func check(previous old: String, next new: String, path: String = StreamLayout.playlist) -> [Finding] {
        var findings: [Finding] = []
        func error(_ rule: String, _ message: String) {
            findings.append(Finding(rule: rule, severity: .error, location: path, message: message))
        }
        let before = ParsedPlaylist(text: old), after = ParsedPlaylist(text: new)
        // L8: after ENDLIST the playlist never changes.
        if before.isEnded {
            if old != new { error("L8", "changed after EXT-X-ENDLIST") }
            return findings
        }
        // L4: TARGETDURATION never changes.
        if before.value("EXT-X-TARGETDURATION") != after.value("EXT-X-TARGETDURATION") {
            error("L4", "TARGETDURATION changed from \(before.value("EXT-X-TARGETDURATION") ?? "none") to \(after.value("EXT-X-TARGETDURATION") ?? "none")")
        }
        // L2: the media sequence grows by exactly the number of segments removed.
        let oldSequence = Int(before.value("EXT-X-MEDIA-SEQUENCE") ?? "0") ?? 0
        let newSequence = Int(after.value("EXT-X-MEDIA-SEQUENCE") ?? "0") ?? 0
        let removed = newSequence - oldSequence
        if removed < 0 { error("L2", "MEDIA-SEQUENCE went back from \(oldSequence) to \(newSequence)") }
        if before.value("EXT-X-PLAYLIST-TYPE") == "EVENT" && removed > 0 { error("L2", "an EVENT playlist removed \(removed) segments") }
        // L1: every segment in both keeps its URI, EXTINF, BYTERANGE, PDT, discontinuity and MAP.
        let kept = before.segments.dropFirst(max(0, removed))
        for (index, segment) in kept.enumerated() {
            guard index < after.segments.count else {
                error("L1", "segment \(oldSequence + max(0, removed) + index) (\(segment.uri)) disappeared")
                break
            }
            let other = after.segments[index]
            if segment.uri != other.uri || segment.extinf != other.extinf || segment.programDateTime != other.programDateTime
                || segment.discontinuity != other.discontinuity || segment.map != other.map || segment.byteRange != other.byteRange {
                error("L1", "segment \(oldSequence + max(0, removed) + index) changed: \(segment.uri) → \(other.uri)")
                break  // one report per reload is enough; the rest follow from it
            }
        }
        return findings
    }
}
