import Foundation
import HLS
import Media
import MP4

/// After a crash, kill -9 or power cut: closes a stream that has no ENDLIST so that it
/// holds exactly the segments that were completely stored. Writes are temp → fsync →
/// rename, so a segment under its final name is complete; `.tmp` leftovers are half-written
/// and deleted. A complete segment the crash kept out of the playlist is added back, its
/// EXTINF read from its own trun and its date following the one before.
public enum Recovery {
    public struct Closed: Sendable, Equatable {
        public var id: String
        public var segments: Int
        /// It had no ENDLIST and was closed now.
        public var wasInterrupted: Bool
    }

    /// Every stream under `root/streams`, oldest first, each closed if it was open.
    public static func closeAll(root: String) throws -> [Closed] {
        let streams = root + "/streams"
        let ids = ((try? FileManager.default.contentsOfDirectory(atPath: streams)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        return try ids.compactMap { try close(directory: streams + "/" + $0) }
    }

    public static func close(directory: String) throws -> Closed? {
        let id = URL(fileURLWithPath: directory).lastPathComponent
        let files = FileManager.default
        for name in (files.subpaths(atPath: directory) ?? []) where name.hasSuffix(".tmp") {
            try? files.removeItem(atPath: directory + "/" + name)
        }
        guard let text = files.contents(atPath: directory + "/playlist.m3u8").map({ String(decoding: $0, as: UTF8.self) }),
              var playlist = MediaPlaylist(parsing: text) else {
            return nil  // no segment was ever stored: nothing to publish
        }
        if playlist.isEnded { return Closed(id: id, segments: playlist.entries.count, wasInterrupted: false) }
        // Complete segments stored after the last playlist write.
        if let initBytes = files.contents(atPath: directory + "/init.mp4"), let parsedInit = try? ParsedInit(bytes: Array(initBytes)),
           let video = parsedInit.track("vide") {
            while let last = playlist.entries.last {
                let next = playlist.entries.count + 1
                let uri = MediaPlaylist.segmentURI(next)
                guard let bytes = files.contents(atPath: directory + "/" + uri),
                      let segment = try? ParsedSegment(bytes: Array(bytes), trex: parsedInit.trex),
                      let traf = segment.traf(video.trackID).first, traf.duration > 0 else { break }
                let previousTicks = Int64(((Double(last.duration) ?? 0) * 1000).rounded())
                playlist.entries.append(.init(uri: uri, duration: decimalSeconds(Int64(traf.duration), timescale: Int64(video.timescale)),
                                              programDateTimeMs: last.programDateTimeMs + previousTicks))
            }
        }
        playlist.isEnded = true
        try AtomicFile.write(Array(playlist.render().utf8), to: directory + "/playlist.m3u8")
        return Closed(id: id, segments: playlist.entries.count, wasInterrupted: true)
    }
}

/// What the destination has confirmed of one stream, kept beside it as `.published`, so a
/// restart resumes instead of starting over. Rewritten atomically, without fsync: losing
/// it only means uploading again, and PUTs are idempotent.
public struct Journal: Equatable, Sendable {
    public var destination: String
    public var confirmedSegments: Int
    public var listed: Int
    public var endlist: Bool

    public static func path(_ directory: String) -> String { directory + "/.published" }

    public static func read(_ directory: String, destination: String) -> Journal? {
        guard let data = FileManager.default.contents(atPath: path(directory)) else { return nil }
        var values: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
        // A journal of another destination says nothing about this one.
        guard values["destination"] == destination, let segments = values["segments"].flatMap(Int.init),
              let listed = values["listed"].flatMap(Int.init) else { return nil }
        return Journal(destination: destination, confirmedSegments: segments, listed: listed, endlist: values["endlist"] == "1")
    }

    public func write(_ directory: String) throws {
        let text = "destination=\(destination)\nsegments=\(confirmedSegments)\nlisted=\(listed)\nendlist=\(endlist ? 1 : 0)\n"
        let temporary = directory + "/.published.tmp"
        try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, Self.path(directory)) == 0 else {
            throw FileError(path: Self.path(directory), operation: "rename to", code: errno)
        }
    }
}
