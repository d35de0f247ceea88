import Files
import HLS
import Layout
import Media
import MP4
import System

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
    public static func closeAll(root: String, skipped: (Skipped) -> Void = { _ in },
                                removed: (String) -> Void = { _ in }) -> [Closed] {
        let layout = StreamLayout(root: root)
        let names = FileSystem.names(in: layout.streams) ?? []
        // A stream still staged (`StreamWriter`: before its first segment was listed) when
        // the power went: it was never visible, listed or published.
        for name in StreamLayout.stagings(names) {
            try? FileSystem.remove(layout.streams + "/" + name)
            removed(layout.streams + "/" + name)
        }
        return StreamLayout.streamIDs(names).compactMap { id in
            let directory = layout.stream(id)
            do {
                guard let closed = try close(directory: directory, skipped: skipped) else {
                    // Only what the writer makes before the first segment (a kill in the
                    // first moments of a stream): nothing to play, publish or validate, and
                    // never listed. Anything else (a segment, a file set aside) is kept.
                    if FileSystem.filesBelow(directory).allSatisfy({ StreamLayout.beforeFirstSegment.contains(String(StreamLayout.name(of: $0))) }) {
                        try? FileSystem.remove(directory)
                        removed(directory)
                    }
                    return nil
                }
                return closed
            } catch {
                skipped(Skipped(path: directory, reason: "\(error)"))
                return nil
            }
        }
    }

    public static func close(directory: String, skipped: (Skipped) -> Void = { _ in }) throws -> Closed? {
        let id = directory.split(separator: "/").last.map(String.init) ?? directory
        for name in FileSystem.filesBelow(directory) where StreamLayout.isTemporary(StreamLayout.name(of: name)) {
            try? FileSystem.remove(directory + "/" + name)
        }
        // A ladder's renditions each close like a stream of one variant.
        let index = leftover(directory + "/" + StreamLayout.index, limit: FileSystem.playlistLimit, skipped: skipped)
            .flatMap { MultivariantPlaylist(parsing: String(decoding: $0, as: UTF8.self)) }
        var closed: [ClosedRendition] = []
        for (folder, _) in (index ?? MultivariantPlaylist(variants: [])).renditions {
            guard let rendition = try closeRendition(directory: directory, folder: folder, index: index, skipped: skipped) else {
                // No segment was ever stored in the stream: nothing to publish.
                if closed.isEmpty { return nil }
                continue
            }
            closed.append(rendition)
        }
        let interrupted = closed.contains { $0.wasInterrupted }
        // Every rendition's discontinuities on the same segments (V6): one that a rung's
        // recovered segment shows (it began or stopped carrying another rung's pictures)
        // goes on the other renditions' segment too.
        let breaks = Set(closed.flatMap { r in r.playlist.entries.indices.filter { r.playlist.entries[$0].discontinuity } })
        for r in closed.indices where closed[r].wasInterrupted {
            for k in breaks where k < closed[r].playlist.entries.count && !closed[r].playlist.entries[k].discontinuity {
                closed[r].playlist.entries[k].discontinuity = true
                if k < closed[r].iFrames?.entries.count ?? 0 {
                    closed[r].iFrames?.entries[k].discontinuity = true
                    closed[r].iFramesChanged = true
                }
            }
        }
        // index.m3u8 first: a playlist is never listed before the variant describing it.
        var playlists: [String: MediaPlaylist] = [:]
        for rendition in closed {
            playlists[rendition.path(StreamLayout.playlist)] = rendition.playlist
            if let iFrames = rendition.iFrames { playlists[rendition.path(StreamLayout.iFrames)] = iFrames }
        }
        let remeasured = interrupted ? try remeasure(directory: directory, playlists: playlists) : false
        for rendition in closed {
            if let iFrames = rendition.iFrames, rendition.iFramesChanged {
                try AtomicFile.write(Array(iFrames.render().utf8), to: directory + "/" + rendition.path(StreamLayout.iFrames))
            }
            if rendition.wasInterrupted {
                try AtomicFile.write(Array(rendition.playlist.render().utf8), to: directory + "/" + rendition.path(StreamLayout.playlist))
            }
        }
        return Closed(id: id, segments: closed[0].playlist.entries.count, wasInterrupted: interrupted, multivariantRewritten: remeasured)
    }

    /// One rendition as closed, not yet written.
    struct ClosedRendition {
        var folder: String
        var playlist: MediaPlaylist
        var wasInterrupted: Bool
        var iFrames: MediaPlaylist?
        var iFramesChanged: Bool
        func path(_ name: String) -> String { StreamLayout.path(name, in: folder) }
    }

    /// A rendition's playlist with ENDLIST and every complete segment, and its I-frame
    /// playlist to match; nil when it has no playlist (nothing was stored).
    static func closeRendition(directory: String, folder: String, index: MultivariantPlaylist?,
                               skipped: (Skipped) -> Void) throws -> ClosedRendition? {
        let base = folder.isEmpty ? directory : directory + "/" + folder
        let playlistPath = base + "/" + StreamLayout.playlist
        guard let data = leftover(playlistPath, limit: FileSystem.playlistLimit, skipped: skipped) else { return nil }
        guard let text = String(validating: data, as: UTF8.self), var playlist = MediaPlaylist(parsing: text) else {
            setAside(playlistPath, reason: "not a media playlist onair wrote", skipped: skipped)
            return nil
        }
        var parsedInit: ParsedInit?
        let initPath = base + "/" + StreamLayout.initSegment
        func readInit() -> ParsedInit? {
            if parsedInit == nil, let initBytes = leftover(initPath, limit: FileSystem.smallLimit, skipped: skipped) {
                do { parsedInit = try ParsedInit(bytes: initBytes) } catch {
                    // Without a readable init segment no unlisted segment can be measured.
                    setAside(initPath, reason: "\(error)", skipped: skipped)
                }
            }
            return parsedInit
        }
        let wasInterrupted = !playlist.isEnded
        if wasInterrupted {
            // Complete segments stored after the last playlist write, timed by their
            // pictures (their sound, in an audio rendition).
            if let parsedInit = readInit(), let track = parsedInit.track("vide") ?? parsedInit.track("soun") {
                // A rung carries only the rungs below it (later in index.m3u8).
                let rungs = index?.variants.map { StreamLayout.folder(of: $0.uri) } ?? []
                let below = rungs.firstIndex(of: folder).map { Array(rungs[($0 + 1)...]) } ?? []
                addUnlisted(to: &playlist, directory: base, trex: parsedInit.trex, video: track, carriers: below, skipped: skipped)
            }
            playlist.isEnded = true
        }
        // The writer ends playlist.m3u8 before iframes.m3u8: a cut between the two leaves
        // the I-frame playlist to close, even in a stream that ended.
        let listsIFrames = index?.iFrameStreams.contains { $0.uri == StreamLayout.path(StreamLayout.iFrames, in: folder) } ?? false
        let found = leftover(base + "/" + StreamLayout.iFrames, limit: FileSystem.playlistLimit, skipped: skipped)
            .flatMap { MediaPlaylist(parsing: String(decoding: $0, as: UTF8.self)) }
        var iFrames = found
        var changed = false
        if listsIFrames || found != nil, !(found?.isEnded == true && found?.entries.count == playlist.entries.count) {
            // One that cannot be read is made again from the segments.
            iFrames = closedIFrames(from: found ?? MediaPlaylist(targetDuration: playlist.targetDuration, mapURI: playlist.mapURI, iFramesOnly: true),
                                    directory: base, playlist: playlist, parsedInit: readInit)
            changed = true
        }
        return ClosedRendition(folder: folder, playlist: playlist, wasInterrupted: wasInterrupted, iFrames: iFrames, iFramesChanged: changed)
    }

    /// The rendition's I-frame playlist, ended and listing exactly the segments
    /// `playlist` does (each one's IDR read from its own file when the crash came before
    /// it was listed).
    private static func closedIFrames(from found: MediaPlaylist, directory: String, playlist: MediaPlaylist,
                                      parsedInit: () -> ParsedInit?) -> MediaPlaylist {
        var iFrames = found
        iFrames.iFramesOnly = true
        iFrames.entries = Array(found.entries.prefix { entry in playlist.entries.contains { $0.uri == entry.uri } })
        let listed = Set(iFrames.entries.map(\.uri))
        for entry in playlist.entries where !listed.contains(entry.uri) {
            guard let initSegment = parsedInit(), let video = initSegment.track("vide"),
                  let bytes = FileSystem.read(directory + "/" + entry.uri, limit: FileSystem.segmentLimit, followLinks: false),
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

    /// A live stream's index.m3u8 carries the bit rates measured when it was last
    /// rewritten (the writer rewrites it when a peak rises, and at the end); a stream the
    /// power cut ended never got the final ones, so AVERAGE-BANDWIDTH can be more than 10%
    /// off what was stored (HLS_RULES C7), and the segments recovered after the last
    /// playlist write can raise a peak (C6). All are measured again from the files, as
    /// the writer composes them (a rung's figures plus its sound's); `playlists` are the
    /// closed playlists by path, read from disk where not given. True if it changed.
    static func remeasure(directory: String, playlists: [String: MediaPlaylist]) throws -> Bool {
        let path = directory + "/" + StreamLayout.index
        guard let text = FileSystem.readText(path), var index = MultivariantPlaylist(parsing: text) else { return false }
        func meter(_ uri: String) -> BitrateMeter? {
            guard let playlist = playlists[uri] ?? FileSystem.readText(directory + "/" + uri).flatMap(MediaPlaylist.init(parsing:)) else { return nil }
            let folder = uri.lastIndex(of: "/").map { String(uri[...$0]) } ?? ""
            return playlist.measuredBitrates { FileSystem.size(directory + "/" + folder + $0) }
        }
        let before = index
        for i in index.variants.indices {
            guard let pictures = meter(index.variants[i].uri) else { continue }
            let sound = index.audio.first { $0.groupID == index.variants[i].audioGroup }.flatMap { meter($0.uri) }
            index.variants[i].averageBandwidth = pictures.average + (sound?.average ?? 0)
            index.variants[i].bandwidth = max(index.variants[i].bandwidth, pictures.peak + (sound?.peak ?? 0))
        }
        for i in index.iFrameStreams.indices {
            guard let iFrames = meter(index.iFrameStreams[i].uri) else { continue }
            index.iFrameStreams[i].averageBandwidth = iFrames.average
            index.iFrameStreams[i].bandwidth = max(index.iFrameStreams[i].bandwidth, iFrames.peak)
        }
        guard index != before else { return false }
        try AtomicFile.write(Array(index.render().utf8), to: path)
        return true
    }

    /// Appends each complete segment after the last listed one, its EXTINF read from its own
    /// trun and its date following the one before; stops at the first missing one and sets
    /// aside one that cannot be read.
    static func addUnlisted(to playlist: inout MediaPlaylist, directory: String, trex: [ParsedInit.Trex],
                            video: ParsedInit.Track, carriers: [String] = [], skipped: (Skipped) -> Void) {
        while let last = playlist.entries.last {
            let uri = StreamLayout.segment(playlist.entries.count + 1)
            let path = directory + "/" + uri
            guard let bytes = leftover(path, limit: FileSystem.segmentLimit, skipped: skipped) else { return }
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
            let map = carriedFrom(path, rungs: carriers, directory: directory, sequence: playlist.entries.count + 1)
            playlist.entries.append(.init(uri: uri, duration: decimalSeconds(Int64(traf.duration), timescale: Int64(video.timescale)),
                                          programDateTimeMs: last.programDateTimeMs.map { $0 + previousTicks },
                                          discontinuity: map != last.map, map: map))
        }
    }

    /// The init a segment of a ladder's rung needs when the rung carried one of the
    /// `rungs` below it (the heat dropped it: the writer linked that rung's file, so both
    /// names are one file), as the playlist names it; nil for its own pictures.
    static func carriedFrom(_ path: String, rungs: [String], directory: String, sequence: Int) -> String? {
        guard !rungs.isEmpty, let own = try? Path.status(path), own.links > 1 else { return nil }
        let parent = AtomicFile.directory(of: directory)
        for rung in rungs {
            let candidate = "\(parent)/\(rung)/" + StreamLayout.segment(sequence)
            if let other = try? Path.status(candidate), other.isSameFile(as: own) { return StreamLayout.carriedMap(from: rung) }
        }
        return nil
    }

    /// A leftover file's bytes: nil when it is not there, and nil when it is not what
    /// onair leaves (a FIFO, a device, a symbolic link, or larger than `limit`), which is
    /// set aside like any other bad leftover. Neither costs time or memory by its size.
    static func leftover(_ path: String, limit: Int, skipped: (Skipped) -> Void) -> [UInt8]? {
        do { return try FileSystem.readRegular(path, limit: limit, followLinks: false) } catch {
            if error as? FileSystem.Refusal != .missing { setAside(path, reason: "\(error)", skipped: skipped) }
            return nil
        }
    }

    /// Sets `path` aside (`AtomicFile.setAside`) and says so.
    static func setAside(_ path: String, reason: String, skipped: (Skipped) -> Void) {
        skipped(Skipped(path: path, reason: AtomicFile.setAside(path, because: reason)))
    }
}
