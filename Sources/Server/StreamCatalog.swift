import Foundation
import HLS
import Media

/// What /api/streams says of one stream, read from its files: the playlist is the record
/// of truth, so the list is right even for streams written by an earlier run.
public struct StreamInfo: Sendable, Equatable, Codable {
    public var id: String
    public var state: String        // "live" or "ended"
    public var start: String?       // first PROGRAM-DATE-TIME
    public var duration: Double     // seconds, the sum of EXTINF
    public var segments: Int
    public var targetDuration: Int? // EXT-X-TARGETDURATION, seconds
    public var playlist: String     // URL path of the multivariant playlist

    enum CodingKeys: String, CodingKey {
        case id, state, start, duration, segments, playlist
        case targetDuration = "target_duration"
    }
}

public enum StreamCatalog {
    /// Every stream under `root/streams`, newest first (ids sort by start time).
    public static func list(root: String) -> [StreamInfo] {
        let streams = root + "/streams"
        let ids = (try? FileManager.default.contentsOfDirectory(atPath: streams)) ?? []
        return ids.sorted(by: >).compactMap { id in
            guard !id.hasPrefix("."), let data = FileManager.default.contents(atPath: "\(streams)/\(id)/playlist.m3u8"),
                  let text = String(data: data, encoding: .utf8) else { return nil }
            let playlist = ParsedPlaylist(text: text)
            let duration = playlist.segments.reduce(0.0) { $0 + ($1.duration ?? 0) }
            return StreamInfo(id: id, state: playlist.isEnded ? "ended" : "live",
                              start: playlist.segments.first?.programDateTime,
                              duration: (duration * 1000).rounded() / 1000, segments: playlist.segments.count,
                              targetDuration: playlist.value("EXT-X-TARGETDURATION").flatMap(Int.init),
                              playlist: "/streams/\(id)/index.m3u8")
        }
    }

    public static func json(root: String) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(list(root: root))) ?? Data("[]".utf8))
    }
}
