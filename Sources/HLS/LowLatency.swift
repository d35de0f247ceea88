import Basics
import Layout
import Media

/// The numbers a low-latency stream keeps from its first part to its end (RFC 8216bis
/// §4.4.3.7, §4.4.3.8; HLS_RULES LL2–LL4): PART-TARGET and what follows from it. They
/// never change during a stream (AVPlayer rejects a playlist whose PART-HOLD-BACK moves).
public struct PartTiming: Sendable, Equatable {
    /// PART-TARGET in ticks of `timescale`: a whole number of frames at the stream's first
    /// rate, never longer than a segment.
    public let ticks: Int64
    public let timescale: Int64
    /// EXT-X-TARGETDURATION of the stream, seconds.
    public let targetDuration: Int

    public init(ticks: Int64, timescale: Int64 = Timescale.video, targetDuration: Int) {
        precondition(ticks > 0 && timescale > 0 && targetDuration > 0)
        self.ticks = ticks
        self.timescale = timescale
        self.targetDuration = targetDuration
    }

    /// `hls.part_seconds` as whole frames at `fps`: 200 ms at 30 fps is 6 frames, 333 ms 10.
    ///
    /// PART-TARGET cannot change during a stream (LL3), but the thermal ladder may move it
    /// to any of `rates`, and every part but a segment's first and last must last between
    /// 85% and 100% of it at each (LL4; AVPlayer drops the stream otherwise). So it is
    /// raised, a tick at a time, to the least value where whole frames fit that way at
    /// every rate: 200 ms at 30 fps fits 30, 20, 15 and 10 fps, but at 24 fps four frames
    /// are 83% of it and five too long, so the default ladder makes it 5 × 1/24 s (0.20834).
    public init(partMilliseconds: Int, fps: Int, rates: [Int] = [], segmentTicks: Int64, targetDuration: Int,
                timescale: Int64 = Timescale.video) {
        let frames = max(1, (Int64(partMilliseconds) * Int64(fps) + 500) / 1000)
        let first = min(frames * timescale / Int64(fps), segmentTicks)
        let all = Set(rates + [fps]).filter { $0 > 0 }
        let ticks = (first...max(first, segmentTicks)).first { target in all.allSatisfy { Self.partsFit(target, rate: $0, timescale: timescale) } }
        // No such value within a segment (a ladder down to 1 fps with short segments):
        // at least no part is ever longer than PART-TARGET, the rule players enforce.
        let slowest = all.map { (timescale + Int64($0) - 1) / Int64($0) }.max() ?? first
        self.init(ticks: ticks ?? min(max(first, slowest), max(segmentTicks, slowest)), timescale: timescale, targetDuration: targetDuration)
    }

    /// Whether the parts the segmenter cuts at `rate` (as many whole frames as fit in
    /// `target`) last at least 85% of it. Frame times are whole ticks, so a frame at a rate
    /// that does not divide the timescale may be a tick longer or shorter than the mean.
    static func partsFit(_ target: Int64, rate: Int, timescale: Int64) -> Bool {
        let longest = (timescale + Int64(rate) - 1) / Int64(rate), shortest = timescale / Int64(rate)
        let frames = target / longest
        return frames >= 1 && 100 * frames * shortest >= 85 * target
    }

    /// PART-TARGET as written: rounded up to the 10 µs part DURATIONs are written in
    /// (`PartReport.durationSeconds` rounds to nearest), so no part reads longer than it.
    public var partTarget: String { Self.secondsRoundedUp(ticks, timescale: timescale) }
    /// PART-HOLD-BACK: three part targets as written (bis §4.4.3.8 SHOULD, Apple's MUST:
    /// 3 × 0.33334 is 1.00002, where three of the exact target would read 1.00000).
    public var partHoldBack: String { Self.format(3 * Self.unitsRoundedUp(ticks, timescale: timescale)) }
    /// CAN-SKIP-UNTIL: six target durations, the least the RFC allows (§4.4.3.8).
    public var skipUntilSeconds: Int { 6 * targetDuration }
    /// How far past the last part a blocking request may ask before it is refused: three
    /// divided by PART-TARGET below a second, three otherwise (§6.2.5.2).
    public var advancePartLimit: Int { ticks < timescale ? Int(3 * timescale / ticks) : 3 }

    static func secondsRoundedUp(_ ticks: Int64, timescale: Int64) -> String { format(unitsRoundedUp(ticks, timescale: timescale)) }

    /// Ticks in 10 µs units, rounded up.
    static func unitsRoundedUp(_ ticks: Int64, timescale: Int64) -> Int64 { (ticks * 100_000 + timescale - 1) / timescale }

    static func format(_ units: Int64) -> String {
        var fraction = String(units % 100_000)
        while fraction.count < 5 { fraction = "0" + fraction }
        return "\(units / 100_000).\(fraction)"
    }
}

/// What a playlist request asks of a live stream (RFC 8216bis §6.2.5): to be held until
/// segment `msn` (and part `part` of it) exists, and to skip old segments.
public struct DeliveryDirectives: Sendable, Equatable {
    public var msn: Int?
    public var part: Int?
    public var skip = false

    public init(msn: Int? = nil, part: Int? = nil, skip: Bool = false) {
        self.msn = msn
        self.part = part
        self.skip = skip
    }

    /// From the request's `_HLS_msn`, `_HLS_part` and `_HLS_skip` arguments; why not, in
    /// one line, for a Bad Request (§6.2.5.2: a part without a segment is one).
    public static func parse(_ argument: (String) -> String?) -> Result<DeliveryDirectives, DirectiveError> {
        func number(_ name: String) -> Result<Int?, DirectiveError> {
            guard let text = argument(name) else { return .success(nil) }
            // decimal-integer (§4.2): digits only, and within what a stream can reach.
            guard !text.isEmpty, text.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let value = Int(text) else {
                return .failure(.notAnInteger(name, String(text.prefix(40))))
            }
            return .success(value)
        }
        var directives = DeliveryDirectives()
        switch (number("_HLS_msn"), number("_HLS_part")) {
        case (.failure(let error), _), (_, .failure(let error)): return .failure(error)
        case (.success(let msn), .success(let part)):
            if part != nil && msn == nil { return .failure(.partWithoutSegment) }
            directives.msn = msn
            directives.part = part
        }
        if let skip = argument("_HLS_skip") {
            // v2 also skips date ranges; onair's playlists have none, so both mean the same.
            guard skip == "YES" || skip == "v2" else {
                return .failure(.badSkip(String(skip.prefix(40))))
            }
            directives.skip = true
        }
        return .success(directives)
    }
}

/// Why a blocking request's directives are a Bad Request (RFC 8216bis §6.2.5.2).
public enum DirectiveError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `_HLS_msn` or `_HLS_part` is not a decimal-integer (§4.2); the value, cut to 40 characters.
    case notAnInteger(String, String)
    /// `_HLS_part` without `_HLS_msn`.
    case partWithoutSegment
    /// `_HLS_skip` other than YES or v2.
    case badSkip(String)

    public var description: String {
        switch self {
        case .notAnInteger(let name, let text): return "\(name) must be a decimal integer, got \"\(text)\""
        case .partWithoutSegment: return "_HLS_part needs _HLS_msn"
        case .badSkip(let text): return "_HLS_skip must be YES or v2, got \"\(text)\""
        }
    }
}

/// A live media playlist with its parts (RFC 8216bis §4.4.4.9, HLS_RULES LL1–LL8, LL12):
/// the segments as the file on disk lists them, EXT-X-PART for the segments of the last
/// three target durations and the one in progress, and a PRELOAD-HINT for the next part.
public struct LowLatencyPlaylist: Sendable {
    public var playlist: MediaPlaylist
    public var timing: PartTiming
    /// The listed parts of complete segments, by media sequence number.
    public var parts: [Int: [PartReport]]
    /// The parts of the segment in progress (its media sequence number is the one after
    /// the last listed segment), and the part that will come next.
    public var partial: [PartReport]
    public var next: (sequence: Int, index: Int)?
    /// A delta update (§6.2.5.1): segments further than CAN-SKIP-UNTIL from the end are
    /// replaced by EXT-X-SKIP.
    public var skip = false

    public init(playlist: MediaPlaylist, timing: PartTiming, parts: [Int: [PartReport]], partial: [PartReport],
                next: (sequence: Int, index: Int)?, skip: Bool = false) {
        self.playlist = playlist
        self.timing = timing
        self.parts = parts
        self.partial = partial
        self.next = next
        self.skip = skip
    }

    /// How many leading segments a delta update leaves out: those that end at least
    /// CAN-SKIP-UNTIL before the end of the last segment.
    func skippedSegments() -> Int {
        let durations = playlist.entries.map { HLSValue.duration($0.duration) ?? 0 }
        var after = durations.reduce(0, +)
        var count = 0
        for duration in durations {
            after -= duration
            guard after >= Double(timing.skipUntilSeconds) else { break }
            count += 1
        }
        return count
    }

    public func render() -> String {
        // VERSION 9: EXT-X-SKIP (§8); the same in full and delta playlists.
        var lines = ["#EXTM3U", "#EXT-X-VERSION:9", "#EXT-X-TARGETDURATION:\(playlist.targetDuration)",
                     "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=\(timing.skipUntilSeconds).0,PART-HOLD-BACK=\(timing.partHoldBack)",
                     "#EXT-X-PART-INF:PART-TARGET=\(timing.partTarget)",
                     "#EXT-X-MEDIA-SEQUENCE:\(playlist.mediaSequence)", "#EXT-X-PLAYLIST-TYPE:EVENT",
                     "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-MAP:URI=\"\(playlist.mapURI)\""]
        let skipped = skip && !playlist.isEnded ? skippedSegments() : 0
        if skip && !playlist.isEnded { lines.append("#EXT-X-SKIP:SKIPPED-SEGMENTS=\(skipped)") }
        func partLines(_ parts: [PartReport]) {
            for part in parts {
                lines.append("#EXT-X-PART:DURATION=\(part.durationSeconds),URI=\"\(StreamLayout.part(sequence: part.sequence, index: part.index))\""
                             + (part.independent ? ",INDEPENDENT=YES" : ""))
            }
        }
        for (offset, entry) in playlist.entries.enumerated().dropFirst(skipped) {
            // DISCONTINUITY and PROGRAM-DATE-TIME before the parent's first part (LL5).
            if entry.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            if let date = entry.programDateTimeMs { lines.append("#EXT-X-PROGRAM-DATE-TIME:\(UTCDate.iso8601(milliseconds: date))") }
            partLines(parts[playlist.mediaSequence + offset] ?? [])
            lines.append("#EXTINF:\(entry.duration),")
            lines.append(entry.uri)
        }
        if let first = partial.first {
            if first.parentDiscontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            if let date = first.parentProgramDateTimeMs { lines.append("#EXT-X-PROGRAM-DATE-TIME:\(UTCDate.iso8601(milliseconds: date))") }
            partLines(partial)
        }
        if playlist.isEnded {
            lines.append("#EXT-X-ENDLIST")
        } else if let next {
            lines.append("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"\(StreamLayout.part(sequence: next.sequence, index: next.index))\"")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
