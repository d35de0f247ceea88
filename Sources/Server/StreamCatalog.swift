import Foundation
import HLS

/// The streams under a data directory, as `GET /api/streams` lists them.
public enum StreamCatalog {
    /// Every stream under `root/streams`, newest first (ids sort by start time).
    public static func list(root: String) -> [StreamInfo] {
        let streams = root + "/streams"
        let ids = (try? FileManager.default.contentsOfDirectory(atPath: streams)) ?? []
        return ids.sorted(by: >).compactMap { id in
            guard !id.hasPrefix("."), let data = FileManager.default.contents(atPath: "\(streams)/\(id)/playlist.m3u8") else { return nil }
            return StreamInfo(id: id, playlist: String(decoding: data, as: UTF8.self), playlistURL: "/streams/\(id)/index.m3u8")
        }
    }

    public static func json(root: String) -> [UInt8] { StreamInfo.json(list(root: root)) }
}
