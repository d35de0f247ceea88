import Files
import HLS
import Layout
import System

/// What one rendition of a stream is: its folder, what it carries, and its codec facts.
public struct RenditionDescription: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Pictures and sound in the same segments: the one variant of a stream without a
        /// ladder.
        case muxed
        /// A rung of the ladder: pictures only.
        case video
        /// The ladder's sound, which every rung plays beside its pictures.
        case audio(channels: Int)
    }
    /// Where its files are in the stream's directory: "" (the directory itself) or a
    /// subfolder such as `v0` or `audio`.
    public var folder: String
    public var kind: Kind
    public var codecs: [String]
    public var width: Int
    public var height: Int
    /// What the encoders are asked for: BANDWIDTH until measurements exceed it.
    public var configuredBitrate: Int
    public var initSegment: [UInt8]

    public init(folder: String, kind: Kind, codecs: [String], width: Int = 0, height: Int = 0, configuredBitrate: Int, initSegment: [UInt8]) {
        self.folder = folder
        self.kind = kind
        self.codecs = codecs
        self.width = width
        self.height = height
        self.configuredBitrate = configuredBitrate
        self.initSegment = initSegment
    }

    /// A file of this rendition, as the stream's directory names it.
    public func path(_ name: String) -> String { StreamLayout.path(name, in: folder) }

    var isAudio: Bool { if case .audio = kind { return true } else { return false } }
}

/// One rendition's files: init.mp4, its segments, playlist.m3u8 and (with pictures)
/// iframes.m3u8, with the bit rates measured as a player measures them (sizes over
/// EXTINF as written). `StreamWriter` decides the order the files are written in.
final class RenditionWriter {
    let description: RenditionDescription
    private(set) var playlist: MediaPlaylist
    /// Each segment's IDR as a byte range of its file (RFC 8216bis §4.4.3.6), so players
    /// can show pictures while scrubbing; it lists exactly the segments `playlist` does.
    private(set) var iFrames: MediaPlaylist?
    private var meter: BitrateMeter
    private var iFrameMeter: BitrateMeter
    /// BANDWIDTH and AVERAGE-BANDWIDTH as index.m3u8 says them now.
    private(set) var declared: (peak: Int, average: Int)
    private(set) var iFrameDeclared: (peak: Int, average: Int)
    private(set) var totalTicks: Int64 = 0
    private(set) var totalBytes = 0

    init(_ description: RenditionDescription, targetDuration: Int) {
        self.description = description
        playlist = MediaPlaylist(targetDuration: targetDuration)
        // The same TARGETDURATION as the media it indexes (HLS_RULES V10, Apple's 6.11).
        iFrames = description.isAudio ? nil : MediaPlaylist(targetDuration: targetDuration, iFramesOnly: true)
        meter = BitrateMeter(timescale: 1000, targetDuration: targetDuration)
        iFrameMeter = meter
        // Container overhead on top of the encoder rates, until the stream is measured.
        let configured = description.configuredBitrate
        declared = (configured + configured / 10, configured)
        // A guess until the first IDR is measured (an IDR is several times an average frame).
        iFrameDeclared = (configured / 8, configured / 8)
    }

    /// init.mp4 and the empty seg/ folder, in the stream's directory being made.
    func stage(in directory: String) throws {
        try AtomicFile.makeDirectories(directory + "/" + description.path(StreamLayout.segmentFolder))
        try AtomicFile.write(description.initSegment, to: directory + "/" + description.path(StreamLayout.initSegment))
    }

    /// Stores a segment and measures it; true when index.m3u8 must say more before a
    /// playlist lists it (BANDWIDTH stays at or above the measured peak, RFC 8216bis
    /// §4.4.6.2), or say it for the first time.
    /// `linking` names the same segment stored by another rendition (one this rendition
    /// carries): linked, not written again.
    func store(_ segment: SegmentReport, in directory: String, linking original: String? = nil, makeRoom: SpaceRetry.MakeRoom) throws -> Bool {
        let uri = StreamLayout.segment(segment.sequence)
        let path = directory + "/" + description.path(uri)
        try SpaceRetry.run(makeRoom) {
            if let original { try Self.link(original, path, bytes: segment.bytes) } else { try AtomicFile.write(segment.bytes, to: path) }
        }
        let milliseconds = Int64(((HLSValue.duration(segment.durationSeconds) ?? 0) * 1000).rounded())
        meter.add(bytes: segment.bytes.count, ticks: milliseconds)
        if iFrames != nil, let length = segment.iFrameLength { iFrameMeter.add(bytes: length, ticks: milliseconds) }
        totalTicks += segment.videoDuration
        totalBytes += segment.bytes.count
        guard meter.peak > declared.peak || iFrameMeter.peak > iFrameDeclared.peak || segment.sequence == 1 else { return false }
        declared = (max(declared.peak, meter.peak), meter.average)
        // The I-frame figures are measured from the first IDR on, not a floor of a guess.
        iFrameDeclared = (segment.sequence == 1 ? iFrameMeter.peak : max(iFrameDeclared.peak, iFrameMeter.peak), iFrameMeter.average)
        return true
    }

    /// A second name for a complete, durable file (link(2): the name appears with every
    /// byte in place, as a rename does); written out where the file system cannot link.
    static func link(_ original: String, _ path: String, bytes: [UInt8]) throws {
        try? Path.unlink(path)  // a run cut before its playlist listed it
        do { try Path.link(original, as: path) } catch let error as Errno {
            guard [.crossDevice, .notPermitted, .tooManyLinks, .notSupported].contains(error) else {
                throw FileError(path: path, operation: "link", code: error)
            }
            return try AtomicFile.write(bytes, to: path)
        }
        try AtomicFile.syncDirectory(AtomicFile.directory(of: path))
    }

    /// Lists a stored segment in playlist.m3u8, then iframes.m3u8; `map` is the init it
    /// needs when not this rendition's own.
    func list(_ segment: SegmentReport, in directory: String, map: String? = nil, makeRoom: SpaceRetry.MakeRoom) throws {
        let entry = MediaPlaylist.Entry(uri: StreamLayout.segment(segment.sequence), duration: segment.durationSeconds,
                                        programDateTimeMs: segment.programDateTimeMs, discontinuity: segment.discontinuity, map: map)
        playlist.entries.append(entry)
        // Every segment opens with an IDR (the segmenter cuts only there), which lasts
        // until the next segment's: EXTINF is the segment's (§4.4.3.6).
        if let length = segment.iFrameLength {
            var iFrame = entry
            iFrame.byteRange = (length, 0)
            iFrames?.entries.append(iFrame)
        }
        try writePlaylists(in: directory, makeRoom: makeRoom)
    }

    /// The final AVERAGE-BANDWIDTH (index.m3u8 is written with it before `end`).
    func settle() {
        declared = (max(declared.peak, meter.peak), meter.average)
        iFrameDeclared = (max(iFrameDeclared.peak, iFrameMeter.peak), iFrameMeter.average)
    }

    /// ENDLIST on both playlists.
    func end(in directory: String, makeRoom: SpaceRetry.MakeRoom) throws {
        playlist.isEnded = true
        iFrames?.isEnded = true
        try writePlaylists(in: directory, makeRoom: makeRoom)
    }

    private func writePlaylists(in directory: String, makeRoom: SpaceRetry.MakeRoom) throws {
        try SpaceRetry.run(makeRoom) {
            try AtomicFile.write(Array(playlist.render().utf8), to: directory + "/" + description.path(StreamLayout.playlist))
            if let iFrames {
                try AtomicFile.write(Array(iFrames.render().utf8), to: directory + "/" + description.path(StreamLayout.iFrames))
            }
        }
    }
}
