import Basics

/// One stream as a list of streams shows it (`GET /api/streams`, and `streams.json` at a
/// destination's root): read from its playlist, which is the record of truth.
public struct StreamInfo: Sendable, Equatable {
    public var id: String
    public var state: String        // "live" or "ended"
    public var start: String?       // when its first frame was captured (ISO 8601), once known
    public var duration: Double     // seconds, the sum of EXTINF
    public var segments: Int
    public var targetDuration: Int? // EXT-X-TARGETDURATION, seconds
    public var playlist: String     // URL of the multivariant playlist
    public var export: String?      // URL of the stream as one MP4 (on the device only)

    public var json: JSON {
        .fields(["id": id, "state": state, "start": start, "duration": duration, "segments": segments,
                 "target_duration": targetDuration, "playlist": playlist, "export": export])
    }

    /// A stream as `json` wrote it (a destination's `streams.json`); nil when a field is
    /// missing or of the wrong kind.
    public init?(json: JSON) {
        guard let id = json["id"]?.string, let state = json["state"]?.string, let duration = json["duration"]?.double,
              let segments = json["segments"]?.int, let playlist = json["playlist"]?.string else { return nil }
        self.id = id
        self.state = state
        start = json["start"]?.string
        self.duration = duration
        self.segments = segments
        targetDuration = json["target_duration"]?.int
        self.playlist = playlist
        export = json["export"]?.string
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
        start = Self.start(of: Array(listed))
        duration = (seconds * 1000).rounded() / 1000
        segments = count
        targetDuration = parsed.value("EXT-X-TARGETDURATION").flatMap(HLSValue.integer)
        playlist = playlistURL
    }
}

extension StreamInfo {
    /// The stream's start, from its first PROGRAM-DATE-TIME less the media time before that
    /// segment: a stream started before the clock was synchronised gets its true start
    /// once a later segment is dated. (Within a millisecond or so: EXTINF is rounded.)
    static func start(of segments: [ParsedPlaylist.Segment]) -> String? {
        var seconds = 0.0
        for segment in segments {
            if let text = segment.programDateTime {
                guard let ms = UTCDate.parse(text) else { return nil }
                return seconds == 0 ? text : UTCDate.iso8601(milliseconds: ms - Int64((seconds * 1000).rounded()))
            }
            seconds += segment.duration ?? 0
        }
        return nil
    }

    /// A list of streams as JSON, keys sorted, slashes left alone.
    public static func json(_ streams: [StreamInfo]) -> [UInt8] {
        JSON.array(streams.map(\.json)).bytes
    }

    /// A list as `json(_:)` wrote it; nil when it is not one.
    public static func list(json bytes: [UInt8]) -> [StreamInfo]? {
        guard case .array(let items)? = JSON.parse(bytes) else { return nil }
        let streams = items.compactMap(StreamInfo.init(json:))
        return streams.count == items.count ? streams : nil
    }
}
