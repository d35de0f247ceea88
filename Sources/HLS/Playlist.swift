import Basics
import Layout
import Media

/// The media playlist onair writes (RFC 8216bis §4.4): an EVENT playlist that only grows,
/// one EXT-X-MAP (another only where a dropped rung carries the pictures of the one below), PROGRAM-DATE-TIME on every segment made while the wall clock was
/// trusted (none before: §4.4.4.6 lets the dates start at any segment), ENDLIST at stop.
public struct MediaPlaylist: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var uri: String
        public var duration: String   // EXTINF, decimal seconds with ms precision
        public var programDateTimeMs: Int64?
        /// EXT-X-DISCONTINUITY before it: the source was interrupted (§4.4.4.3).
        public var discontinuity: Bool
        /// EXT-X-BYTERANGE (§4.4.4.2): the first `length` bytes of the file from `offset`.
        /// In an I-frame playlist, a segment's `moof` and its IDR (§4.4.3.6).
        public var byteRange: (length: Int, offset: Int)?
        /// The init segment it needs when not the playlist's own (`mapURI`): a dropped rung
        /// carrying the pictures of the rung below (§4.4.4.5; after a discontinuity, P9).
        public var map: String?
        public init(uri: String, duration: String, programDateTimeMs: Int64?, discontinuity: Bool = false,
                    byteRange: (length: Int, offset: Int)? = nil, map: String? = nil) {
            self.uri = uri
            self.duration = duration
            self.programDateTimeMs = programDateTimeMs
            self.discontinuity = discontinuity
            self.byteRange = byteRange
            self.map = map
        }

        public static func == (a: Entry, b: Entry) -> Bool {
            a.uri == b.uri && a.duration == b.duration && a.programDateTimeMs == b.programDateTimeMs
                && a.discontinuity == b.discontinuity && a.byteRange?.length == b.byteRange?.length
                && a.byteRange?.offset == b.byteRange?.offset && a.map == b.map
        }
    }

    /// EXT-X-TARGETDURATION, fixed when the stream starts (§6.2.1: it must not change).
    public var targetDuration: Int
    public var mapURI: String
    public var mediaSequence: Int = 1
    public var entries: [Entry] = []
    public var isEnded = false
    /// EXT-X-I-FRAMES-ONLY (§4.4.3.6): each entry is one I-frame, lasting until the next.
    public var iFramesOnly = false

    public init(targetDuration: Int, mapURI: String = StreamLayout.initSegment, iFramesOnly: Bool = false) {
        self.targetDuration = targetDuration
        self.mapURI = mapURI
        self.iFramesOnly = iFramesOnly
    }

    public func render() -> String {
        // VERSION 7 as Apple's authoring spec and FFmpeg's fMP4 muxer write it; MAP
        // needs at least 6 (§8).
        // The first MAP is the rendition's own init, which says what it is; a stream that
        // began with its top rung dropped names the carried rung's before its first segment.
        var inForce = mapURI
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:\(targetDuration)",
                     "#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)", "#EXT-X-PLAYLIST-TYPE:EVENT",
                     "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-MAP:URI=\"\(inForce)\""]
        if iFramesOnly { lines.insert("#EXT-X-I-FRAMES-ONLY", at: 5) }
        for entry in entries {
            if entry.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            if (entry.map ?? mapURI) != inForce {
                inForce = entry.map ?? mapURI
                lines.append("#EXT-X-MAP:URI=\"\(inForce)\"")
            }
            if let date = entry.programDateTimeMs { lines.append("#EXT-X-PROGRAM-DATE-TIME:\(UTCDate.iso8601(milliseconds: date))") }
            lines.append("#EXTINF:\(entry.duration),")
            if let range = entry.byteRange { lines.append("#EXT-X-BYTERANGE:\(range.length)@\(range.offset)") }
            lines.append(entry.uri)
        }
        if isEnded { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// The multivariant playlist (§4.4.6): the variants and their I-frame playlists, whose
/// attributes come from the actual stream (CODECS from avcC and AudioSpecificConfig,
/// measured bit rates).
public struct MultivariantPlaylist: Sendable, Equatable {
    public struct Variant: Sendable, Equatable {
        public var uri: String
        public var bandwidth: Int
        public var averageBandwidth: Int
        public var codecs: [String]
        public var width: Int
        public var height: Int
        /// Frames per second × 1000 (FRAME-RATE has three decimals, §4.4.6.2).
        public var frameRateMilli: Int
        /// AUDIO: the GROUP-ID of the audio rendition it plays with; nil: its sound, if
        /// any, is in its own segments.
        public var audioGroup: String?
        public init(uri: String, bandwidth: Int, averageBandwidth: Int, codecs: [String], width: Int, height: Int, frameRateMilli: Int,
                    audioGroup: String? = nil) {
            self.uri = uri
            self.bandwidth = bandwidth
            self.averageBandwidth = averageBandwidth
            self.codecs = codecs
            self.width = width
            self.height = height
            self.frameRateMilli = frameRateMilli
            self.audioGroup = audioGroup
        }
    }
    /// An `EXT-X-MEDIA:TYPE=AUDIO` (§4.4.6.1): sound in a playlist of its own, which the
    /// variants of its group play beside their pictures.
    public struct AudioRendition: Sendable, Equatable {
        public var groupID: String
        public var name: String
        /// LANGUAGE (RFC 5646); `und` when nobody said.
        public var language: String
        public var channels: Int
        public var uri: String
        public init(groupID: String, name: String, language: String = "und", channels: Int, uri: String) {
            self.groupID = groupID
            self.name = name
            self.language = language
            self.channels = channels
            self.uri = uri
        }
    }
    /// An `EXT-X-I-FRAME-STREAM-INF` (§4.4.6.3): a variant's I-frame playlist, which has no
    /// FRAME-RATE and no audio; its bit rates are its byte ranges over their durations.
    public struct IFrameStream: Sendable, Equatable {
        public var uri: String
        public var bandwidth: Int
        public var averageBandwidth: Int
        public var codecs: [String]
        public var width: Int
        public var height: Int
        public init(uri: String, bandwidth: Int, averageBandwidth: Int, codecs: [String], width: Int, height: Int) {
            self.uri = uri
            self.bandwidth = bandwidth
            self.averageBandwidth = averageBandwidth
            self.codecs = codecs
            self.width = width
            self.height = height
        }
    }
    public var audio: [AudioRendition]
    public var variants: [Variant]
    public var iFrameStreams: [IFrameStream]

    public init(audio: [AudioRendition] = [], variants: [Variant], iFrameStreams: [IFrameStream] = []) {
        self.audio = audio
        self.variants = variants
        self.iFrameStreams = iFrameStreams
    }

    /// Every media playlist it names: variants, audio renditions, I-frame playlists.
    public var mediaPlaylists: [String] { variants.map(\.uri) + audio.map(\.uri) + iFrameStreams.map(\.uri) }

    /// Reads back a multivariant playlist this type rendered; nil if the text is not one.
    public init?(parsing text: String) {
        let parsed = ParsedPlaylist(text: text)
        guard parsed.isMultivariant else { return nil }
        func common(_ a: [String: String]) -> (bandwidth: Int, average: Int, codecs: [String], size: [Int])? {
            let size = (a["RESOLUTION"] ?? "").split(separator: "x").compactMap { Int($0) }
            guard let bandwidth = a["BANDWIDTH"].flatMap(HLSValue.integer), size.count == 2 else { return nil }
            return (bandwidth, a["AVERAGE-BANDWIDTH"].flatMap(HLSValue.integer) ?? bandwidth,
                    (a["CODECS"] ?? "").split(separator: ",").map(String.init), size)
        }
        var variants: [Variant] = []
        for v in parsed.variants {
            guard let c = common(v.attributes), let rate = v.attributes["FRAME-RATE"].flatMap(HLSValue.duration) else { return nil }
            variants.append(Variant(uri: v.uri, bandwidth: c.bandwidth, averageBandwidth: c.average, codecs: c.codecs,
                                    width: c.size[0], height: c.size[1], frameRateMilli: Int((rate * 1000).rounded()),
                                    audioGroup: v.attributes["AUDIO"]))
        }
        var audio: [AudioRendition] = []
        for tag in parsed.tags("EXT-X-MEDIA") {
            let a = ParsedPlaylist.attributes(tag.value ?? "")
            guard a["TYPE"] == "AUDIO", let group = a["GROUP-ID"], let name = a["NAME"], let uri = a["URI"],
                  let channels = a["CHANNELS"].flatMap({ Int($0) }) else { return nil }
            audio.append(AudioRendition(groupID: group, name: name, language: a["LANGUAGE"] ?? "und", channels: channels, uri: uri))
        }
        var iFrames: [IFrameStream] = []
        for s in parsed.iFrameStreams {
            guard let c = common(s.attributes) else { return nil }
            iFrames.append(IFrameStream(uri: s.uri, bandwidth: c.bandwidth, averageBandwidth: c.average, codecs: c.codecs,
                                        width: c.size[0], height: c.size[1]))
        }
        self.init(audio: audio, variants: variants, iFrameStreams: iFrames)
    }

    public func render() -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-INDEPENDENT-SEGMENTS"]
        for (index, a) in audio.enumerated() {
            // The first of a group is its default (at most one may be, §4.4.6.1).
            let first = !audio[..<index].contains { $0.groupID == a.groupID }
            lines.append("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"\(a.groupID)\",NAME=\"\(a.name)\",LANGUAGE=\"\(a.language)\","
                + "DEFAULT=\(first ? "YES" : "NO"),AUTOSELECT=YES,CHANNELS=\"\(a.channels)\",URI=\"\(a.uri)\"")
        }
        for v in variants {
            let rate = decimalSeconds(Int64(v.frameRateMilli), timescale: 1000)
            lines.append("#EXT-X-STREAM-INF:BANDWIDTH=\(v.bandwidth),AVERAGE-BANDWIDTH=\(v.averageBandwidth),"
                + "CODECS=\"\(v.codecs.joined(separator: ","))\",RESOLUTION=\(v.width)x\(v.height),FRAME-RATE=\(rate)"
                + (v.audioGroup.map { ",AUDIO=\"\($0)\"" } ?? ""))
            lines.append(v.uri)
        }
        for s in iFrameStreams {
            lines.append("#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=\(s.bandwidth),AVERAGE-BANDWIDTH=\(s.averageBandwidth),"
                + "CODECS=\"\(s.codecs.joined(separator: ","))\",RESOLUTION=\(s.width)x\(s.height),URI=\"\(s.uri)\"")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension MultivariantPlaylist {
    /// The renditions its media playlists belong to, in order: each playlist's folder and
    /// the playlists in it (a rung's playlist.m3u8 and iframes.m3u8 share one). Without
    /// any, the one-variant stream's own.
    public var renditions: [(folder: String, playlists: [String])] {
        var renditions: [(folder: String, playlists: [String])] = []
        for path in mediaPlaylists {
            let folder = StreamLayout.folder(of: path)
            if let r = renditions.firstIndex(where: { $0.folder == folder }) { renditions[r].playlists.append(path) } else {
                renditions.append((folder, [path]))
            }
        }
        return renditions.isEmpty ? [("", [StreamLayout.playlist])] : renditions
    }
}

/// Peak and average bit rate as RFC 8216bis §4.1 defines them for BANDWIDTH and
/// AVERAGE-BANDWIDTH, kept up to date as segments arrive.
public struct BitrateMeter: Sendable, Equatable {
    public private(set) var segments: [(bits: Int64, ticks: Int64)] = []
    public let timescale: Int64
    public let targetDuration: Int

    public init(timescale: Int64, targetDuration: Int) {
        self.timescale = timescale
        self.targetDuration = targetDuration
    }

    public static func == (a: BitrateMeter, b: BitrateMeter) -> Bool {
        a.timescale == b.timescale && a.segments.map(\.bits) == b.segments.map(\.bits)
            && a.segments.map(\.ticks) == b.segments.map(\.ticks)
    }

    public mutating func add(bytes: Int, ticks: Int64) { segments.append((Int64(bytes) * 8, ticks)) }

    public var average: Int {
        let bits = segments.reduce(0) { $0 + $1.bits }, ticks = segments.reduce(0) { $0 + $1.ticks }
        return ticks > 0 ? Int(bits * timescale / ticks) : 0
    }

    /// The largest bit rate over contiguous runs lasting between 0.5×TD and
    /// 1.5×TD + 0.5 s (§4.1); a single segment counts when no run fits.
    static let longestRun = 256

    public var peak: Int {
        let low = timescale * Int64(targetDuration) / 2
        let high = timescale * Int64(targetDuration) * 3 / 2 + timescale / 2
        var best: Int64 = 0
        for i in segments.indices {
            var bits: Int64 = 0, ticks: Int64 = 0
            // A run of more than `longestRun` segments only happens with (near) zero
            // durations, where the rate means nothing; the cap keeps the work linear.
            for j in i..<min(segments.count, i + Self.longestRun) {
                bits += segments[j].bits; ticks += segments[j].ticks
                if ticks > high { break }
                if ticks >= low || (i == 0 && j == segments.count - 1) {
                    best = max(best, ticks > 0 ? bits * timescale / ticks : 0)
                }
            }
        }
        return Int(best)
    }
}

extension MediaPlaylist {
    /// Reads back a playlist this type rendered; nil if the text is not one.
    public init?(parsing text: String) {
        let parsed = ParsedPlaylist(text: text)
        guard let target = parsed.value("EXT-X-TARGETDURATION").flatMap(HLSValue.integer), target > 0,
              let map = parsed.mapURI else { return nil }
        self.init(targetDuration: target, mapURI: map, iFramesOnly: !parsed.tags("EXT-X-I-FRAMES-ONLY").isEmpty)
        mediaSequence = parsed.value("EXT-X-MEDIA-SEQUENCE").flatMap(HLSValue.integer) ?? 1
        for segment in parsed.segments {
            guard let extinf = segment.extinf else { return nil }
            var date: Int64?
            if let text = segment.programDateTime {
                guard let parsed = UTCDate.parse(text) else { return nil }
                date = parsed
            }
            let duration = String(extinf.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)[0])
            guard HLSValue.duration(duration) != nil else { return nil }
            var range: (length: Int, offset: Int)?
            if let text = segment.byteRange {
                // Only the `n@o` form onair writes.
                guard let parsed = HLSValue.byteRange(text), let offset = parsed.offset, parsed.length <= Int.max,
                      offset <= Int.max else { return nil }
                range = (Int(parsed.length), Int(offset))
            }
            entries.append(.init(uri: segment.uri, duration: duration, programDateTimeMs: date, discontinuity: segment.discontinuity,
                                 byteRange: range, map: segment.map == map ? nil : segment.map))
        }
        isEnded = parsed.isEnded
    }

    /// Peak and average bit rate of the listed segments, as a player (and `onair
    /// validate`) measures them: sizes (a byte range's, else the file's) over EXTINF
    /// durations (§4.4.6.2).
    public func measuredBitrates(size: (String) -> Int64?) -> BitrateMeter {
        var meter = BitrateMeter(timescale: 1000, targetDuration: max(targetDuration, 1))
        for entry in entries {
            meter.add(bytes: entry.byteRange?.length ?? Int(size(entry.uri) ?? 0), ticks: Int64(((HLSValue.duration(entry.duration) ?? 0) * 1000).rounded()))
        }
        return meter
    }

    /// The playlist as it stands with only its first `count` segments; ENDLIST only if
    /// that is all of an ended playlist.
    public func prefix(_ count: Int) -> MediaPlaylist {
        var copy = self
        copy.entries = Array(entries.prefix(count))
        copy.isEnded = isEnded && count >= entries.count
        return copy
    }
}
