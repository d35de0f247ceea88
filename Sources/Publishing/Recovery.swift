import Files
import HLS
import Media
import MP4
#if canImport(Glibc)
import Glibc
#endif

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
        /// index.m3u8 was rewritten with the bit rates the stream really had.
        public var multivariantRewritten = false
    }

    /// A file recovery could not use: renamed to `<name>.corrupt` beside where it was (never
    /// deleted), so it is looked at once and the start goes on (`recovery.skipped`).
    public struct Skipped: Sendable, Equatable {
        public var path: String
        public var reason: String
        public init(path: String, reason: String) { self.path = path; self.reason = reason }
    }

    /// Every stream under `root/streams`, oldest first, each closed if it was open. One
    /// stream that cannot be closed (a corrupt file, a full disk) is reported through
    /// `skipped` and the others are still closed.
    public static func closeAll(root: String, skipped: (Skipped) -> Void = { _ in }) -> [Closed] {
        let streams = root + "/streams"
        let names = FileSystem.names(in: streams) ?? []
        // A stream directory still being made (`StreamWriter`) when the power went: it was
        // never listed or published.
        for name in names where name.hasPrefix(".") && name.hasSuffix(".tmp") {
            try? FileSystem.remove(streams + "/" + name)
        }
        let ids = names.filter { !$0.hasPrefix(".") }.sorted()
        return ids.compactMap { id in
            do { return try close(directory: streams + "/" + id, skipped: skipped) } catch {
                skipped(Skipped(path: streams + "/" + id, reason: "\(error)"))
                return nil
            }
        }
    }

    public static func close(directory: String, skipped: (Skipped) -> Void = { _ in }) throws -> Closed? {
        let id = directory.split(separator: "/").last.map(String.init) ?? directory
        for name in FileSystem.filesBelow(directory) where name.hasSuffix(".tmp") {
            try? FileSystem.remove(directory + "/" + name)
        }
        let playlistPath = directory + "/" + StreamWriter.playlistName
        guard let data = FileSystem.read(playlistPath) else {
            return nil  // no segment was ever stored: nothing to publish
        }
        guard let text = String(validating: data, as: UTF8.self), var playlist = MediaPlaylist(parsing: text) else {
            setAside(playlistPath, reason: "not a media playlist onair wrote", skipped: skipped)
            return nil
        }
        // The writer ends playlist.m3u8 before iframes.m3u8: a cut between the two leaves
        // the I-frame playlist to close.
        var parsedInit: ParsedInit?
        let initPath = directory + "/init.mp4"
        func readInit() -> ParsedInit? {
            if parsedInit == nil, let initBytes = FileSystem.read(initPath) {
                do { parsedInit = try ParsedInit(bytes: initBytes) } catch {
                    // Without a readable init segment no unlisted segment can be measured.
                    setAside(initPath, reason: "\(error)", skipped: skipped)
                }
            }
            return parsedInit
        }
        if playlist.isEnded {
            if let iFrames = try closedIFrames(directory: directory, playlist: playlist, parsedInit: readInit) {
                try AtomicFile.write(Array(iFrames.render().utf8), to: directory + "/" + StreamWriter.iFramesName)
            }
            return Closed(id: id, segments: playlist.entries.count, wasInterrupted: false)
        }
        // Complete segments stored after the last playlist write.
        if let parsedInit = readInit(), let video = parsedInit.track("vide") {
            addUnlisted(to: &playlist, directory: directory, trex: parsedInit.trex, video: video, skipped: skipped)
        }
        playlist.isEnded = true
        let iFrames = try closedIFrames(directory: directory, playlist: playlist, parsedInit: readInit)
        // index.m3u8 first: a playlist is never listed before the variant describing it.
        let remeasured = try remeasure(directory: directory, playlist: playlist, iFrames: iFrames)
        if let iFrames { try AtomicFile.write(Array(iFrames.render().utf8), to: directory + "/" + StreamWriter.iFramesName) }
        try AtomicFile.write(Array(playlist.render().utf8), to: playlistPath)
        return Closed(id: id, segments: playlist.entries.count, wasInterrupted: true, multivariantRewritten: remeasured)
    }

    /// The stream's I-frame playlist, ended and listing exactly the segments `playlist`
    /// does (each one's IDR read from its own file when the crash came before it was
    /// listed); nil when it has none to close (a stream from before I-frame playlists, or
    /// one already closed).
    static func closedIFrames(directory: String, playlist: MediaPlaylist, parsedInit: () -> ParsedInit?) throws -> MediaPlaylist? {
        let path = directory + "/" + StreamWriter.iFramesName
        guard let text = FileSystem.readText(path) else {
            let index = FileSystem.readText(directory + "/index.m3u8").flatMap(MultivariantPlaylist.init(parsing:))
            guard index?.iFrameStreams.contains(where: { $0.uri == StreamWriter.iFramesName }) ?? false else { return nil }
            return try closedIFrames(from: MediaPlaylist(targetDuration: playlist.targetDuration, mapURI: playlist.mapURI, iFramesOnly: true),
                                     directory: directory, playlist: playlist, parsedInit: parsedInit)
        }
        // One that cannot be read is made again from the segments.
        let found = MediaPlaylist(parsing: text) ?? MediaPlaylist(targetDuration: playlist.targetDuration, mapURI: playlist.mapURI, iFramesOnly: true)
        if found.isEnded && found.entries.count == playlist.entries.count { return nil }
        return try closedIFrames(from: found, directory: directory, playlist: playlist, parsedInit: parsedInit)
    }

    private static func closedIFrames(from found: MediaPlaylist, directory: String, playlist: MediaPlaylist,
                                      parsedInit: () -> ParsedInit?) throws -> MediaPlaylist {
        var iFrames = found
        iFrames.iFramesOnly = true
        iFrames.entries = Array(found.entries.prefix { entry in playlist.entries.contains { $0.uri == entry.uri } })
        let listed = Set(iFrames.entries.map(\.uri))
        for entry in playlist.entries where !listed.contains(entry.uri) {
            guard let initSegment = parsedInit(), let video = initSegment.track("vide"),
                  let bytes = FileSystem.read(directory + "/" + entry.uri),
                  let length = iFrameLength(bytes, trex: initSegment.trex, video: video) else { continue }
            var iFrame = entry
            iFrame.byteRange = (length, 0)
            iFrames.entries.append(iFrame)
        }
        iFrames.isEnded = true
        return iFrames
    }

    /// The bytes from a segment's start through its first video sample, when that is a
    /// sync sample in the first fragment: its I-frame playlist range (§4.4.3.6).
    static func iFrameLength(_ bytes: [UInt8], trex: [ParsedInit.Trex], video: ParsedInit.Track) -> Int? {
        guard let segment = try? ParsedSegment(bytes: bytes, trex: trex),
              let first = segment.fragments.first?.trafs.first(where: { $0.trackID == video.trackID })?.samples.first,
              first.isSync, first.range.upperBound <= bytes.count else { return nil }
        return first.range.upperBound
    }

    /// A live stream's index.m3u8 carries the AVERAGE-BANDWIDTH measured when it was last
    /// rewritten (the writer rewrites it when the peak rises, and at the end); a stream the
    /// power cut ended never got the final one, so it can be more than 10% off what was
    /// stored (HLS_RULES C7), and the segments recovered after the last playlist write can
    /// raise the peak (C6). Both are measured again from the files; true if it changed.
    static func remeasure(directory: String, playlist: MediaPlaylist, iFrames: MediaPlaylist? = nil) throws -> Bool {
        let path = directory + "/index.m3u8"
        guard let text = FileSystem.readText(path), var index = MultivariantPlaylist(parsing: text) else { return false }
        let meter = playlist.measuredBitrates { FileSystem.size(directory + "/" + $0) }
        let before = index
        for i in index.variants.indices where index.variants[i].uri == StreamWriter.playlistName {
            index.variants[i].averageBandwidth = meter.average
            index.variants[i].bandwidth = max(index.variants[i].bandwidth, meter.peak)
        }
        if let iFrames {
            let meter = iFrames.measuredBitrates { _ in nil }
            for i in index.iFrameStreams.indices where index.iFrameStreams[i].uri == StreamWriter.iFramesName {
                index.iFrameStreams[i].averageBandwidth = meter.average
                index.iFrameStreams[i].bandwidth = max(index.iFrameStreams[i].bandwidth, meter.peak)
            }
        }
        guard index != before else { return false }
        try AtomicFile.write(Array(index.render().utf8), to: path)
        return true
    }

    /// Appends each complete segment after the last listed one, its EXTINF read from its own
    /// trun and its date following the one before; stops at the first missing one and sets
    /// aside one that cannot be read.
    static func addUnlisted(to playlist: inout MediaPlaylist, directory: String, trex: [ParsedInit.Trex],
                            video: ParsedInit.Track, skipped: (Skipped) -> Void) {
        while let last = playlist.entries.last {
            let uri = MediaPlaylist.segmentURI(playlist.entries.count + 1)
            let path = directory + "/" + uri
            guard let bytes = FileSystem.read(path) else { return }
            let traf: ParsedSegment.TrackFragment
            do {
                let segment = try ParsedSegment(bytes: bytes, trex: trex)
                guard let first = segment.traf(video.trackID).first, first.duration > 0 else {
                    throw MP4Error.missing("video samples")
                }
                traf = first
            } catch {
                setAside(path, reason: "\(error)", skipped: skipped)
                return
            }
            let previousTicks = Int64(((HLSValue.duration(last.duration) ?? 0) * 1000).rounded())
            playlist.entries.append(.init(uri: uri, duration: decimalSeconds(Int64(traf.duration), timescale: Int64(video.timescale)),
                                          programDateTimeMs: last.programDateTimeMs.map { $0 + previousTicks }))
        }
    }

    /// Sets `path` aside (`AtomicFile.setAside`) and says so.
    static func setAside(_ path: String, reason: String, skipped: (Skipped) -> Void) {
        skipped(Skipped(path: path, reason: AtomicFile.setAside(path, because: reason)))
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
        guard let data = FileSystem.read(path(directory)) else { return nil }
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
        try FileSystem.write(Array(text.utf8), to: temporary)
        guard rename(temporary, Self.path(directory)) == 0 else {
            throw FileError(path: Self.path(directory), operation: "rename to", code: errno)
        }
    }
}
