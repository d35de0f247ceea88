/// One stream as a list of streams shows it (`GET /api/streams`, and `streams.json` at a
/// destination's root): read from its playlist, which is the record of truth.
public struct StreamInfo: Sendable, Equatable, Codable {
    public var id: String
    public var state: String        // "live" or "ended"
    public var start: String?       // first PROGRAM-DATE-TIME
    public var duration: Double     // seconds, the sum of EXTINF
    public var segments: Int
    public var targetDuration: Int? // EXT-X-TARGETDURATION, seconds
    public var playlist: String     // URL of the multivariant playlist

    enum CodingKeys: String, CodingKey {
        case id, state, start, duration, segments, playlist
        case targetDuration = "target_duration"
    }

    /// The stream as `playlist` shows it, or as its first `visible` segments only (what
    /// a destination has listed so far; ended only once it lists them all with ENDLIST).
    public init(id: String, playlist text: String, playlistURL: String, visible: Int? = nil, ended: Bool? = nil) {
        let parsed = ParsedPlaylist(text: text)
        let count = min(visible ?? parsed.segments.count, parsed.segments.count)
        let listed = parsed.segments.prefix(count)
        let seconds = listed.reduce(0.0) { $0 + ($1.duration ?? 0) }
        self.id = id
        state = (ended ?? parsed.isEnded) && count == parsed.segments.count ? "ended" : "live"
        start = listed.first?.programDateTime
        duration = (seconds * 1000).rounded() / 1000
        segments = count
        targetDuration = parsed.value("EXT-X-TARGETDURATION").flatMap(HLSValue.integer)
        playlist = playlistURL
    }
}

import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

extension StreamInfo {
    /// A list of streams as JSON, keys sorted, slashes left alone.
    /// Each stream is encoded on its own, so one that cannot be (it never should) is left
    /// out instead of hiding every other.
    public static func json(_ streams: [StreamInfo]) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let items = streams.compactMap { try? encoder.encode($0) }
        return Array("[".utf8) + Array(items.map { Array($0) }.joined(separator: Array(",".utf8))) + Array("]".utf8)
    }
}
