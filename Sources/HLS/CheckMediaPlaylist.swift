import Basics
import MP4

/// What a checked media playlist and its files turned out to be.
struct MediaSummary {
    var videoCodec: String?
    var audioCodec: String?
    var videoSize: (width: Int, height: Int)?
    var frameRate: Double?
    var peakBitrate = 0
    var averageBitrate = 0
    var targetDuration: Int?
    /// The sum of EXTINF, and whether the playlist has ENDLIST.
    var totalSeconds = 0.0
    var isEnded = false
    /// Each segment's first decode time and length in seconds: of its pictures, or (an
    /// audio rendition) of its sound; nil where the segment could not be read.
    var segmentTimes: [(start: Double, duration: Double)?] = []
    /// The segments (by index) that begin with EXT-X-DISCONTINUITY.
    var discontinuities: [Int] = []
    /// Its segments carry sound (muxed, or an audio rendition).
    var hasAudio = false
    var hasVideo = false
    /// One AAC frame of its sound, in seconds.
    var aacFrameSeconds: Double?
}

extension StreamChecker {
    /// P2–P7, P11–P13 on the text; then the init segment and every media segment (or,
    /// in an I-frame playlist, every I-frame).
    mutating func checkMediaPlaylist(_ p: ParsedPlaylist, _ path: String) -> MediaSummary {
        let target = checkMediaPlaylistText(p, path)
        var summary = p.tags("EXT-X-I-FRAMES-ONLY").isEmpty ? checkMedia(p, path: path, targetDuration: target ?? 0)
            : checkIFrames(p, path: path, targetDuration: target ?? 0)
        summary.targetDuration = target
        summary.totalSeconds = p.segments.reduce(0) { $0 + ($1.duration ?? 0) }
        summary.isEnded = p.isEnded
        return summary
    }

    /// P2–P7, P11–P13: the playlist's text. Returns its TARGETDURATION.
    mutating func checkMediaPlaylistText(_ p: ParsedPlaylist, _ path: String) -> Int? {
        for tag in p.tags where ["EXT-X-STREAM-INF", "EXT-X-I-FRAME-STREAM-INF", "EXT-X-MEDIA"].contains(tag.name) {
            error("P10", "\(path):\(tag.line)", "multivariant tag \(tag.name) in a media playlist")
        }
        let firstSegmentLine = p.segments.first?.line ?? Int.max
        for name in ["EXT-X-VERSION", "EXT-X-TARGETDURATION", "EXT-X-MEDIA-SEQUENCE", "EXT-X-DISCONTINUITY-SEQUENCE",
                     "EXT-X-PLAYLIST-TYPE", "EXT-X-ENDLIST", "EXT-X-INDEPENDENT-SEGMENTS"] {
            let found = p.tags(name)
            if found.count > 1 { error(name == "EXT-X-VERSION" ? "P3" : "P6", "\(path):\(found[1].line)", "\(name) appears \(found.count) times") }
        }
        for name in ["EXT-X-MEDIA-SEQUENCE", "EXT-X-DISCONTINUITY-SEQUENCE"] {
            if let tag = p.tags(name).first, tag.line > firstSegmentLine { error("P6", "\(path):\(tag.line)", "\(name) after the first segment") }
        }
        // P3: the version the features need (§8): MAP in a media playlist needs 6; 7 is
        // what Apple's spec and FFmpeg write for fMP4, so only a higher one is flagged.
        checkVersion(p, path, needs: requiredVersion(p, mediaPlaylist: true))
        // P6: the sequence numbers are decimal-integers (§4.4.3.2–3).
        for name in ["EXT-X-MEDIA-SEQUENCE", "EXT-X-DISCONTINUITY-SEQUENCE"] {
            for tag in p.tags(name) where HLSValue.decimalInteger(tag.value ?? "") == nil {
                error("P6", "\(path):\(tag.line)", "\(name) \(Self.quote(tag.value)) is not a decimal-integer")
            }
        }
        // P4, P5
        let targetTag = p.tags("EXT-X-TARGETDURATION").first
        let target = targetTag.flatMap { HLSValue.integer($0.value ?? "") }
        if target == nil || target! < 1 { error("P4", targetTag.map { "\(path):\($0.line)" } ?? path, "EXT-X-TARGETDURATION missing or not a positive integer") }
        for segment in p.segments {
            let at = "\(path):\(segment.line)"
            guard segment.extinfCount == 1, let duration = segment.duration else {
                let why = segment.extinfCount == 1 ? "EXTINF \(Self.quote(segment.extinf)) is not a decimal duration of at most a year"
                    : "needs exactly one EXTINF, has \(segment.extinfCount)"
                error("P5", at, "\(segment.uri): \(why)"); continue
            }
            if !(segment.extinf?.split(separator: ",").first?.contains(".") ?? false) {
                warning("P5", at, "EXTINF is not a decimal float")
            }
            if let target, (duration + 0.5).rounded(.down) > Double(target) {
                error("P4", at, "EXTINF \(duration) rounds above TARGETDURATION \(target)")
            }
            if let range = segment.byteRange, HLSValue.byteRange(range) == nil {
                error("P8", at, "EXT-X-BYTERANGE \(Self.quote(range)) is not n[@o] in decimal-integers")
            }
        }
        for tag in p.danglingTags { error("P5", "\(path):\(tag.line)", "\(tag.name) with no segment URI after it") }
        checkMaps(p, path, firstSegmentLine: firstSegmentLine)
        // P11: onair appends only, so the type is EVENT.
        if let type = p.value("EXT-X-PLAYLIST-TYPE"), type != "EVENT", type != "VOD" {
            error("P11", path, "PLAYLIST-TYPE \(type) is neither EVENT nor VOD")
        }
        if p.value("EXT-X-PLAYLIST-TYPE") == "VOD" && !p.isEnded { error("P11", path, "VOD playlist without ENDLIST") }
        checkProgramDateTimes(p, path)
        return target
    }

    /// P7 and P9 on EXT-X-MAP: one before the first segment, with a quoted URI; another
    /// init only where a discontinuity begins.
    mutating func checkMaps(_ p: ParsedPlaylist, _ path: String, firstSegmentLine: Int) {
        let maps = p.tags("EXT-X-MAP")
        if let map = maps.first {
            if map.line > firstSegmentLine { error("P7", "\(path):\(map.line)", "EXT-X-MAP after the first segment") }
            // Another init only where a discontinuity begins (HLS_RULES P9: new init bytes
            // need one, and the MAP is declared again after it).
            var previous = map.value
            for later in maps.dropFirst() where later.value != previous {
                previous = later.value
                // Before the first segment nothing played under the earlier one.
                if later.line > firstSegmentLine, !(p.segments.first { $0.line > later.line }?.discontinuity ?? true) {
                    error("P9", "\(path):\(later.line)", "EXT-X-MAP changes the init without EXT-X-DISCONTINUITY")
                }
            }
            do {
                let attributes = try ParsedPlaylist.attributeList(map.value ?? "")
                if !attributes.contains(where: { $0.name == "URI" && $0.quoted }) { error("P7", "\(path):\(map.line)", "EXT-X-MAP without a quoted URI") }
            } catch { self.error("P2", "\(path):\(map.line)", "\(error)") }
        } else if !p.segments.isEmpty { error("P7", path, "fMP4 segments without EXT-X-MAP") }
    }

    /// P13. A board without a real-time clock has no trustworthy date until NTP answers,
    /// so onair dates segments only from then on (RFC 8216bis §4.4.4.6 lets the tag start
    /// at any segment): undated segments may lead a live playlist, but once dated, every
    /// later segment is; dates never go backwards, and advance with the media time (per
    /// segment within 50 ms, and in total within 1 s between discontinuities).
    mutating func checkProgramDateTimes(_ p: ParsedPlaylist, _ path: String) {
        var previous: (ms: Int64, duration: Double?)?
        var run: (ms: Int64, seconds: Double)?  // the first date since a discontinuity, and media time since
        var dated = false
        for segment in p.segments {
            let at = "\(path):\(segment.line)"
            if segment.discontinuity { run = nil }
            guard let text = segment.programDateTime else {
                if dated && !p.isEnded { error("P13", at, "live segment without EXT-X-PROGRAM-DATE-TIME after dated ones") }
                previous = nil
                run = nil
                continue
            }
            guard let ms = UTCDate.parse(text) else { error("P13", at, "bad date \(text)"); continue }
            dated = true
            if !text.contains(".") { warning("P13", at, "PROGRAM-DATE-TIME without milliseconds") }
            if let previous, ms < previous.ms {
                error("P13", at, "PROGRAM-DATE-TIME went back \(Double(previous.ms &- ms) / 1000) s")
            } else if let previous, let duration = previous.duration, !segment.discontinuity,
                      abs(Double(ms &- previous.ms) / 1000 - duration) > 0.05 {
                // After EXT-X-DISCONTINUITY the date jumps by the gap (§4.4.4.3). (A segment
                // without a usable EXTINF was reported under P5 already.)
                error("P13", at, "PROGRAM-DATE-TIME advanced \(Double(ms &- previous.ms) / 1000) s over a \(duration) s segment")
            } else if let run, abs(Double(ms &- run.ms) / 1000 - run.seconds) > 1 {
                error("P13", at, "PROGRAM-DATE-TIME drifted \(Double(ms &- run.ms) / 1000 - run.seconds) s from the media time")
            }
            if run == nil { run = (ms, 0) }
            run?.seconds += segment.duration ?? 0
            previous = (ms, segment.duration)
        }
        if !dated && !p.isEnded && !p.segments.isEmpty {
            warning("P13", path, "live playlist without EXT-X-PROGRAM-DATE-TIME (its clock was not synchronised)")
        }
    }

    /// P3: the lowest version the playlist's tags need (§8).
    func requiredVersion(_ p: ParsedPlaylist, mediaPlaylist: Bool) -> Int {
        var needs = 1
        if p.segments.contains(where: { $0.extinf?.contains(".") ?? false }) { needs = 3 }
        if !p.tags("EXT-X-BYTERANGE").isEmpty || !p.tags("EXT-X-I-FRAMES-ONLY").isEmpty { needs = 4 }
        // MAP needs 5 in an I-frame playlist, 6 in any other (§8).
        if mediaPlaylist && !p.tags("EXT-X-MAP").isEmpty { needs = p.tags("EXT-X-I-FRAMES-ONLY").isEmpty ? 6 : 5 }
        if !p.tags("EXT-X-DEFINE").isEmpty || p.text.contains("{$") { needs = 8 }
        return needs
    }

    mutating func checkVersion(_ p: ParsedPlaylist, _ path: String, needs required: Int) {
        let tag = p.tags("EXT-X-VERSION").first
        if let tag {
            guard let version = HLSValue.integer(tag.value ?? "") else {
                return error("P3", "\(path):\(tag.line)", "EXT-X-VERSION \(Self.quote(tag.value)) is not a decimal-integer")
            }
            if version < required { error("P3", path, "VERSION \(version) but the tags need \(required)") }
            if version > max(required, 7) { warning("P3", path, "VERSION \(version) is higher than needed (\(required))") }
        } else if required > 1 { error("P3", path, "no EXT-X-VERSION but the tags need \(required)") }
    }

    /// A value from the file, quoted for a message (cut short: a hostile line must not
    /// flood the report).
    static func quote(_ value: String?) -> String { value.map { quotedForMessage($0, limit: 40) } ?? "(none)" }

    /// Resolves a URI relative to the playlist that lists it.
    func resolve(_ uri: String, against playlist: String) -> String {
        guard let slash = playlist.lastIndex(of: "/") else { return uri }
        return String(playlist[...slash]) + uri
    }
}
