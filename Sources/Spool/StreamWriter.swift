import Files
import HLS
import Layout
import System

/// The codec facts the multivariant playlist and the init segment are made from, for a
/// stream of one muxed variant.
public struct StreamDescription: Sendable, Equatable {
    public var codecs: [String]
    public var width: Int
    public var height: Int
    public var fps: Int
    /// Configured video + audio bit rate: BANDWIDTH until measurements exceed it.
    public var configuredBitrate: Int
    public var targetDuration: Int

    public init(codecs: [String], width: Int, height: Int, fps: Int, configuredBitrate: Int, targetDuration: Int) {
        self.codecs = codecs
        self.width = width
        self.height = height
        self.fps = fps
        self.configuredBitrate = configuredBitrate
        self.targetDuration = targetDuration
    }
}

/// Writes one stream into `streams/<id>/` in the order that keeps every reader safe:
/// init.mp4 and index.m3u8 before the first playlist; each segment stored before the
/// playlist that lists it; ENDLIST last. Every file goes temp → fsync → rename, and each
/// step is reported to `observer` once it is on disk and visible (from `.started`, when
/// the directory appears with its first segment in it). A stream is one muxed variant in
/// the directory itself, or (a quality ladder) video rungs and an audio rendition in
/// folders of their own, each like a one-variant stream without index.m3u8.
public final class StreamWriter {
    public let id: String
    public let directory: String
    private let renditions: [RenditionWriter]
    /// FRAME-RATE: the highest rate the stream has run at (RFC 8216bis §4.4.6.2, a maximum).
    public private(set) var declaredFrameRate: Int
    private let observer: (StreamEvent) -> Void
    private let makeRoom: SpaceRetry.MakeRoom
    /// The hidden `.<id>.tmp` the stream is made in until its first segment is complete
    /// there: only then is it renamed to `directory` (issue 29: a kill in the first moments
    /// left a directory no player could use).
    public let staging: String
    /// Where files are written now: `staging`, then `directory`.
    private var location: String
    /// The directory is there for readers (its first segment is stored).
    public var isVisible: Bool { location == directory }


    /// A stream of one muxed variant.
    public convenience init(root: String, id: String, description: StreamDescription, initSegment: [UInt8],
                            makeRoom: @escaping SpaceRetry.MakeRoom = { false }, observer: @escaping (StreamEvent) -> Void = { _ in }) throws {
        let variant = RenditionDescription(folder: "", kind: .muxed, codecs: description.codecs, width: description.width,
                                           height: description.height, configuredBitrate: description.configuredBitrate,
                                           initSegment: initSegment)
        try self.init(root: root, id: id, renditions: [variant], fps: description.fps, targetDuration: description.targetDuration,
                      makeRoom: makeRoom, observer: observer)
    }

    /// Stages index.m3u8 and every rendition's init.mp4 in the hidden `.<id>.tmp`; the
    /// first segment is stored there too before it is renamed to the stream's directory,
    /// so no reader (or restart) ever finds a stream directory without a segment to play.
    /// A full disk leaves nothing.
    public init(root: String, id: String, renditions: [RenditionDescription], fps: Int, targetDuration: Int,
                makeRoom: @escaping SpaceRetry.MakeRoom = { false }, observer: @escaping (StreamEvent) -> Void = { _ in }) throws {
        precondition(!renditions.isEmpty)
        self.id = id
        let layout = StreamLayout(root: root)
        self.directory = layout.stream(id)
        self.renditions = renditions.map { RenditionWriter($0, targetDuration: targetDuration) }
        self.observer = observer
        self.makeRoom = makeRoom
        declaredFrameRate = fps
        staging = layout.staging(id)
        location = staging
        try? FileSystem.remove(staging)
        try SpaceRetry.run(makeRoom) {
            do {
                try AtomicFile.makeDirectories(staging)
                for rendition in self.renditions { try rendition.stage(in: staging) }
                try writeMultivariant()
            } catch {
                try? FileSystem.remove(staging)
                throw error
            }
        }
    }

    /// The staged stream becomes its directory, with its first segment listed in it.
    private func reveal() throws {
        try FileError.at(directory, "rename to") { try Path.rename(staging, to: directory) }
        try AtomicFile.syncDirectory(AtomicFile.directory(of: directory))
        location = directory
        observer(.started(id: id))
    }

    /// The first (top) rendition's playlist: the stream as one playlist tells it.
    public var playlist: MediaPlaylist { renditions[0].playlist }
    public var segmentCount: Int { renditions[0].playlist.entries.count }
    public var totalTicks: Int64 { renditions[0].totalTicks }
    public var totalBytes: Int { renditions.reduce(0) { $0 + $1.totalBytes } }
    public var renditionFolders: [String] { renditions.map(\.description.folder) }

    /// Stores a segment of rendition `index`, then publishes the playlists that list it;
    /// index.m3u8 first when the segment raised a bit rate it declares.
    public func append(_ segment: SegmentReport, rendition index: Int = 0) throws { try store(segment, into: index, carriedFrom: nil) }

    /// Rendition `index`, a rung the heat dropped, carries segment `segment` of rendition
    /// `source`, the rung below that is still encoded: the same file under its own name,
    /// listed after a discontinuity under the source's init. Players on the dropped rung
    /// play on at the lower picture, and every rendition keeps every segment k, aligned.
    public func carry(_ segment: SegmentReport, from source: Int, into index: Int) throws {
        try store(segment, into: index, carriedFrom: renditions[source].description)
    }

    /// The text of a stored stream's main playlist (the first variant its index.m3u8 names,
    /// else playlist.m3u8), read as every spool reader reads; nil when there is none.
    public static func mainPlaylist(in directory: String) -> String? {
        let index = FileSystem.readText(directory + "/" + StreamLayout.index, followLinks: false)
        return FileSystem.readText(directory + "/" + StreamLayout.mainPlaylist(index: index), followLinks: false)
    }

    private func store(_ segment: SegmentReport, into index: Int, carriedFrom source: RenditionDescription?) throws {
        let rendition = renditions[index]
        let original = source.map { location + "/" + $0.path(StreamLayout.segment(segment.sequence)) }
        if try rendition.store(segment, in: location, linking: original, makeRoom: makeRoom) {
            try writeMultivariant()
            if isVisible { observer(.multivariantRewritten(id: id)) }
        }
        try rendition.list(segment, in: location, map: source.map { StreamLayout.carriedMap(from: $0.folder) }, makeRoom: makeRoom)
        if !isVisible { try reveal() }
        observer(.segmentStored(id: id, sequence: segment.sequence, bytes: segment.bytes.count, rendition: rendition.description.folder))
    }

    /// The stream goes on at `fps` from the next segment (the thermal ladder stepped up):
    /// FRAME-RATE is the variant's maximum, so index.m3u8 says so before any playlist lists
    /// a segment at that rate.
    public func raiseFrameRate(to fps: Int) throws {
        guard fps > declaredFrameRate else { return }
        declaredFrameRate = fps
        try writeMultivariant()
        if isVisible { observer(.multivariantRewritten(id: id)) }
    }

    /// Writes the final AVERAGE-BANDWIDTH, then ENDLIST on every playlist. A stream that
    /// never stored a segment was never visible: its staging goes, and nothing is said.
    public func finish() throws {
        guard isVisible else {
            try? FileSystem.remove(staging)
            return
        }
        for rendition in renditions { rendition.settle() }
        try writeMultivariant()
        observer(.multivariantRewritten(id: id))
        for rendition in renditions { try rendition.end(in: location, makeRoom: makeRoom) }
        observer(.ended(id: id))
    }

    /// index.m3u8: each variant with what it really is; a ladder's rungs each with the
    /// sound rendition's codec and bit rate added (BANDWIDTH covers what plays together,
    /// §4.4.6.2.1), and each rung's I-frame playlist.
    private func writeMultivariant() throws {
        let sound = renditions.first { $0.description.isAudio }
        var playlist = MultivariantPlaylist(variants: [])
        if let sound, case .audio(let channels) = sound.description.kind {
            playlist.audio = [.init(groupID: StreamLayout.audio, name: "Main", channels: channels,
                                    uri: sound.description.path(StreamLayout.playlist))]
        }
        for rendition in renditions where !rendition.description.isAudio {
            let d = rendition.description
            playlist.variants.append(.init(
                uri: d.path(StreamLayout.playlist), bandwidth: rendition.declared.peak + (sound?.declared.peak ?? 0),
                averageBandwidth: rendition.declared.average + (sound?.declared.average ?? 0),
                codecs: d.codecs + (sound?.description.codecs ?? []), width: d.width, height: d.height,
                frameRateMilli: declaredFrameRate * 1000, audioGroup: sound == nil ? nil : StreamLayout.audio))
            playlist.iFrameStreams.append(.init(
                uri: d.path(StreamLayout.iFrames), bandwidth: rendition.iFrameDeclared.peak, averageBandwidth: rendition.iFrameDeclared.average,
                codecs: d.codecs.filter { !$0.hasPrefix("mp4a.") }, width: d.width, height: d.height))
        }
        let text = Array(playlist.render().utf8)
        try SpaceRetry.run(makeRoom) { try AtomicFile.write(text, to: location + "/" + StreamLayout.index) }
    }
}
