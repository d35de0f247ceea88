import Codecs
import Files
import HLS
import Layout
import Live
import Logging
import Media
import MP4
import Spool

/// One live HLS stream from its first video frame to ENDLIST: the live encoders
/// (`EncodedStream`) publish every sample into the live feed (`FeedSink`), which the HLS
/// packager (`HLSSink`, on its own thread: `HLSReader`) reads completely and the
/// real-time outputs read as they can. Called on the live output's thread only.
final class LiveStream: EncodingStream {
    let writer: StreamWriter
    let stream: EncodedStream
    private let hls: HLSReader
    private var encoder: StreamEncoder { stream.encoder }

    var id: String { writer.id }
    var videoEndTicks: Int64 { encoder.videoEndTicks }
    var audioEndTicks: Int64 { encoder.audioEndTicks }
    var framesEncoded: Int { encoder.framesEncoded }
    var framesSkipped: Int { encoder.framesSkipped }
    var framesRepeated: Int { encoder.framesRepeated }
    var audioSilenceFilled: Int { encoder.audioSilenceFilled }

    /// A stream from `origin`: its encoder, timeline, and any pre-roll already encoded.
    /// `edge` gets the parts for the built-in server's low-latency playlist.
    /// `feed` is where the stream is published (the appliance's, which the real-time
    /// servers read; else one of the stream's own, for the packager alone).
    init(start: StreamStart, origin: StreamOrigin, profile: LiveProfile, log: Log, makeRoom: @escaping SpaceRetry.MakeRoom = { false },
         edge: LiveEdge? = nil, feed: LiveFeed? = nil, observer: @escaping (StreamEvent) -> Void) throws {
        let encoder = origin.encoder
        let rate = Int64(profile.output.sampleRate)
        let ladder = encoder.videos.count > 1
        // The stream's first rate fixes PART-TARGET (the thermal ladder only lowers it).
        // A ladder's renditions are regular HLS: parts for each, with rendition reports,
        // are not made yet.
        let timing = edge == nil || ladder ? nil : profile.at(fps: encoder.fps).partTiming
        let segmenters = encoder.videos.map { _ in
            Segmenter(grid: origin.grid(profile.segmentTicks),
                      tracks: .init(audio: encoder.audio == nil || ladder ? nil : 2, audioTimescale: rate),
                      timeline: origin.timeline, nominalFrameDuration: Timescale.video / Int64(encoder.fps),
                      partTicks: timing?.ticks)
        }
        let sound = ladder && encoder.audio != nil ? AudioSegmenter(timeline: origin.timeline, timescale: rate) : nil
        // One muxed variant in the stream's directory; or each rung's pictures, and the
        // sound, in folders of their own.
        var renditions: [RenditionDescription] = []
        for (rung, video) in profile.rungSettings.enumerated() {
            let tracks = try encoder.initSegment(rung: rung, withAudio: !ladder)
            renditions.append(RenditionDescription(folder: ladder ? StreamLayout.rung(rung) : "", kind: ladder ? .video : .muxed,
                                                   codecs: tracks.codecs, width: video.width, height: video.height,
                                                   configuredBitrate: ladder ? video.bitrate : profile.configuredBitrate, initSegment: tracks.bytes))
        }
        if ladder, let audio = profile.output.audio, let tracks = try encoder.audioInitSegment() {
            renditions.append(RenditionDescription(folder: StreamLayout.audio, kind: .audio(channels: audio.channels), codecs: tracks.codecs,
                                                   configuredBitrate: audio.bitrate, initSegment: tracks.bytes))
        }
        // The rate the stream starts at: the thermal ladder's, when it has stepped down.
        writer = try StreamWriter(root: profile.output.dataDirectory, id: start.id, renditions: renditions, fps: encoder.fps,
                                  targetDuration: profile.targetDuration, makeRoom: makeRoom, observer: observer)
        if let timing { edge?.begin(start.id, targetDuration: profile.targetDuration, timing: timing) }
        let packager = HLSSink(writer: writer, segmenters: segmenters, sound: sound, rungNames: profile.rungNames, fps: encoder.fps,
                               topRung: encoder.topRung, edge: timing == nil ? nil : edge, log: log)
        // A ladder's sound is a rendition of its own, cut when its sound has come: with a
        // microphone that stopped delivering it would stop, and players with it. Sound a
        // whole segment late is made up with silence (the muxed segmenter writes its
        // pictures without it instead).
        let feed = feed ?? LiveFeed(audioBitrate: profile.output.audio?.bitrate ?? 64_000, log: log)
        hls = HLSReader(packager, feed: feed)
        stream = EncodedStream(origin: origin, sinks: [FeedSink(feed: feed, origin: origin, id: start.id, firstRung: profile.rungsLeftOut)], marksDiscontinuities: true,
                               silenceAfterTicks: ladder ? profile.segmentTicks : nil)
        var fields: [(String, Any)] = [("id", start.id), ("dir", writer.directory), ("target_duration", profile.targetDuration),
                                       ("priming", encoder.audio?.priming ?? 0), ("preroll_frames", origin.video.count)]
        if ladder {
            fields.append(("rungs", profile.rungNames.joined(separator: ",")))
            if encoder.topRung > 0 { fields.append(("dropped", profile.rungNames[..<encoder.topRung].joined(separator: ","))) }
        }
        log.emit(.streamStarted, level: .info, fields)
        try stream.appendHeld(audioTimescale: rate)
    }

    /// A stream that starts at `firstFrame` (with `lowerRungs`' encoders, a ladder).
    convenience init(start: StreamStart, firstFrame: VideoFrame, profile: LiveProfile, video: VideoEncoder, lowerRungs: [VideoEncoder] = [],
                     audio: AACEncoder?, log: Log, observer: @escaping (StreamEvent) -> Void) throws {
        let encoder = Self.encoder(firstFrame: firstFrame, dating: start.dating, profile: profile, videos: [video] + lowerRungs, audio: audio)
        try self.init(start: start, origin: StreamOrigin(encoder: encoder), profile: profile, log: log, observer: observer)
        try encode(firstFrame)
    }

    /// The same, for a stream whose first frame was captured at `wallClockMs` (tests).
    convenience init(firstFrame: VideoFrame, wallClockMs: Int64, profile: LiveProfile, video: VideoEncoder, audio: AACEncoder?,
                     log: Log, observer: @escaping (StreamEvent) -> Void) throws {
        let dating = StreamDating(offsetMs: wallClockMs - firstFrame.captureTime / 1_000_000)
        try self.init(start: StreamStart(id: StreamNames.datedID(wallClockMs: wallClockMs, device: "test"), dating: dating),
                      firstFrame: firstFrame, profile: profile, video: video, audio: audio, log: log, observer: observer)
    }

    /// The live encoders on a timeline that starts at `firstFrame`, IDRs on the segment grid.
    static func encoder(firstFrame: VideoFrame, dating: StreamDating, profile: LiveProfile, videos: [VideoEncoder],
                        audio: AACEncoder?) -> StreamEncoder {
        let timeline = Timeline(firstVideoCaptureTime: firstFrame.captureTime, dating: dating)
        return StreamEncoder(timeline: timeline, fps: profile.fps, rotation: profile.output.rotation,
                             keyframes: SegmentGrid(start: timeline.startTicks(timescale: Timescale.video), segmentTicks: profile.segmentTicks),
                             video: videos[0], lowerRungs: Array(videos.dropFirst()), audio: audio)
    }

    func encode(_ frame: VideoFrame) throws { try stream.encode(frame) }
    func encode(_ chunk: AudioChunk) throws { try stream.encode(chunk) }

    func setRate(_ fps: Int) { stream.setRate(fps) }
    func setDroppedRungs(_ dropped: Int) { stream.setDroppedRungs(dropped) }

    /// Drains the encoders; returns once the packager has written the last segment and
    /// ENDLIST.
    func finish() throws { try stream.finish() }
}
