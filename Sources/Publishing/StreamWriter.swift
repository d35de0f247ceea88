import Files
import HLS
import Media
#if canImport(Glibc)
import Glibc
#endif

/// The codec facts the multivariant playlist and the init segment are made from.
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

/// What a StreamWriter has just made durable, for whoever publishes the stream further.
public enum StreamEvent: Sendable, Equatable {
    /// init.mp4 and the first index.m3u8 are stored.
    case started(id: String)
    /// index.m3u8 was rewritten (a higher BANDWIDTH or FRAME-RATE, or the final figures).
    case multivariantRewritten(id: String)
    /// A segment of `bytes` is stored (the live bit rate counts them, without a stat).
    case segmentStored(id: String, sequence: Int, bytes: Int)
    /// The playlist carries ENDLIST.
    case ended(id: String)
}

/// Writes one stream into `streams/<id>/` in the order that keeps every reader safe:
/// init.mp4 and index.m3u8 before the first playlist; each segment stored before the
/// playlist that lists it; ENDLIST last. Every file goes temp → fsync → rename, and each
/// step is reported to `observer` once it is on disk.
public final class StreamWriter {
    public let id: String
    public let directory: String
    public let description: StreamDescription
    public private(set) var playlist: MediaPlaylist
    /// `iframes.m3u8`: each segment's IDR as a byte range of its file (RFC 8216bis
    /// §4.4.3.6), so players can show pictures while scrubbing; it lists exactly the
    /// segments `playlist` does.
    public private(set) var iFrames: MediaPlaylist
    private var meter: BitrateMeter
    private var iFrameMeter: BitrateMeter
    private var declaredBandwidth: Int
    private var declaredAverage: Int
    private var iFrameBandwidth: (peak: Int, average: Int)
    /// FRAME-RATE: the highest rate the stream has run at (RFC 8216bis §4.4.6.2, a maximum).
    public private(set) var declaredFrameRate: Int
    public private(set) var totalTicks: Int64 = 0
    public private(set) var totalBytes = 0
    private let observer: (StreamEvent) -> Void

    private let makeRoom: SpaceRetry.MakeRoom

    /// Creates the directory with init.mp4 and index.m3u8 in it. It is made as a hidden
    /// `.<id>.tmp` and renamed only once both are written, so no reader (or restart) ever
    /// finds a stream directory without them; a full disk leaves nothing behind.
    public init(root: String, id: String, description: StreamDescription, initSegment: [UInt8],
                makeRoom: @escaping SpaceRetry.MakeRoom = { false }, observer: @escaping (StreamEvent) -> Void = { _ in }) throws {
        self.id = id
        self.directory = "\(root)/streams/\(id)"
        self.description = description
        self.observer = observer
        self.makeRoom = makeRoom
        playlist = MediaPlaylist(targetDuration: description.targetDuration)
        // The same TARGETDURATION as the media it indexes (HLS_RULES V10, Apple's 6.11).
        iFrames = MediaPlaylist(targetDuration: description.targetDuration, iFramesOnly: true)
        // Measured as a player (and `onair validate`) measures: sizes over EXTINF as written.
        meter = BitrateMeter(timescale: 1000, targetDuration: description.targetDuration)
        iFrameMeter = meter
        // A guess until the first IDR is measured (an IDR is several times an average frame).
        iFrameBandwidth = (description.configuredBitrate / 8, description.configuredBitrate / 8)
        // Container overhead on top of the encoder rates, until the stream is measured.
        declaredBandwidth = description.configuredBitrate + description.configuredBitrate / 10
        declaredAverage = description.configuredBitrate
        declaredFrameRate = description.fps
        let staging = "\(root)/streams/.\(id).tmp"
        try SpaceRetry.run(makeRoom) {
            do {
                try AtomicFile.makeDirectories(staging + "/seg")
                try AtomicFile.write(initSegment, to: staging + "/init.mp4")
                try writeMultivariant(in: staging)
                guard rename(staging, directory) == 0 else { throw FileError(path: directory, operation: "rename to", code: errno) }
                try AtomicFile.syncDirectory("\(root)/streams")
            } catch {
                try? FileSystem.remove(staging)
                throw error
            }
        }
        observer(.started(id: id))
    }

    /// Stores a segment, then publishes the playlist that lists it.
    public func append(_ segment: SegmentReport) throws {
        let uri = MediaPlaylist.segmentURI(segment.sequence)
        try SpaceRetry.run(makeRoom) { try AtomicFile.write(segment.bytes, to: "\(directory)/\(uri)") }
        let milliseconds = Int64(((HLSValue.duration(segment.durationSeconds) ?? 0) * 1000).rounded())
        meter.add(bytes: segment.bytes.count, ticks: milliseconds)
        if let length = segment.iFrameLength { iFrameMeter.add(bytes: length, ticks: milliseconds) }
        totalTicks += segment.videoDuration
        totalBytes += segment.bytes.count
        // BANDWIDTH must stay at or above the measured peak (RFC 8216bis §4.4.6.2), so the
        // multivariant playlist is rewritten before a playlist lists a segment that raised it.
        if meter.peak > declaredBandwidth || iFrameMeter.peak > iFrameBandwidth.peak || segment.sequence == 1 {
            declaredBandwidth = max(declaredBandwidth, meter.peak)
            declaredAverage = meter.average
            // The I-frame figures are measured from the first IDR on, not a floor of a guess.
            iFrameBandwidth = (segment.sequence == 1 ? iFrameMeter.peak : max(iFrameBandwidth.peak, iFrameMeter.peak), iFrameMeter.average)
            try writeMultivariant()
            observer(.multivariantRewritten(id: id))
        }
        let entry = MediaPlaylist.Entry(uri: uri, duration: segment.durationSeconds, programDateTimeMs: segment.programDateTimeMs,
                                        discontinuity: segment.discontinuity)
        playlist.entries.append(entry)
        // Every segment opens with an IDR (the segmenter cuts only there), which lasts
        // until the next segment's: EXTINF is the segment's (§4.4.3.6).
        if let length = segment.iFrameLength {
            var iFrame = entry
            iFrame.byteRange = (length, 0)
            iFrames.entries.append(iFrame)
        }
        try writePlaylists()
        observer(.segmentStored(id: id, sequence: segment.sequence, bytes: segment.bytes.count))
    }

    /// playlist.m3u8, then iframes.m3u8: both list only stored segments.
    private func writePlaylists() throws {
        try SpaceRetry.run(makeRoom) {
            try AtomicFile.write(Array(playlist.render().utf8), to: directory + "/" + Self.playlistName)
            try AtomicFile.write(Array(iFrames.render().utf8), to: directory + "/" + Self.iFramesName)
        }
    }

    public static let playlistName = "playlist.m3u8"
    public static let iFramesName = "iframes.m3u8"

    /// The stream goes on at `fps` from the next segment (the thermal ladder stepped up):
    /// FRAME-RATE is the variant's maximum, so index.m3u8 says so before any playlist lists
    /// a segment at that rate.
    public func raiseFrameRate(to fps: Int) throws {
        guard fps > declaredFrameRate else { return }
        declaredFrameRate = fps
        try writeMultivariant()
        observer(.multivariantRewritten(id: id))
    }

    /// Writes the final AVERAGE-BANDWIDTH, then ENDLIST.
    public func finish() throws {
        declaredAverage = meter.average
        declaredBandwidth = max(declaredBandwidth, meter.peak)
        iFrameBandwidth = (max(iFrameBandwidth.peak, iFrameMeter.peak), iFrameMeter.average)
        try writeMultivariant()
        observer(.multivariantRewritten(id: id))
        playlist.isEnded = true
        iFrames.isEnded = true
        try writePlaylists()
        observer(.ended(id: id))
    }

    public var segmentCount: Int { playlist.entries.count }

    private func writeMultivariant(in folder: String? = nil) throws {
        let variant = MultivariantPlaylist.Variant(
            uri: Self.playlistName, bandwidth: declaredBandwidth, averageBandwidth: declaredAverage,
            codecs: description.codecs, width: description.width, height: description.height,
            frameRateMilli: declaredFrameRate * 1000)
        let iFrameStream = MultivariantPlaylist.IFrameStream(
            uri: Self.iFramesName, bandwidth: iFrameBandwidth.peak, averageBandwidth: iFrameBandwidth.average,
            codecs: description.codecs.filter { !$0.hasPrefix("mp4a.") }, width: description.width, height: description.height)
        let text = Array(MultivariantPlaylist(variants: [variant], iFrameStreams: [iFrameStream]).render().utf8)
        try SpaceRetry.run(makeRoom) { try AtomicFile.write(text, to: (folder ?? directory) + "/index.m3u8") }
    }
}
