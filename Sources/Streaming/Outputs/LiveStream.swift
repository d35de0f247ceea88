import Codecs
import Files
import HLS
import Logging
import Media
import MP4
import Publishing

/// One live HLS stream from its first video frame to ENDLIST: encoders → segmenter →
/// files. Runs on the live output's thread only; nothing here is shared.
final class LiveStream {
    let writer: StreamWriter
    private let log: Log
    private let encoder: StreamEncoder
    private var segmenter: Segmenter

    var id: String { writer.id }
    var videoEndTicks: Int64 { encoder.videoEndTicks }
    var audioEndTicks: Int64 { encoder.audioEndTicks }
    var framesEncoded: Int { encoder.framesEncoded }
    var framesSkipped: Int { encoder.framesSkipped }
    var framesRepeated: Int { encoder.framesRepeated }
    var audioSilenceFilled: Int { encoder.audioSilenceFilled }

    private let origin: StreamOrigin
    /// Where the parts go for the built-in server's low-latency playlist (nil: no parts).
    private let edge: LiveEdge?

    /// A stream from `origin`: its encoder, timeline, and any pre-roll already encoded.
    init(start: StreamStart, origin: StreamOrigin, profile: LiveProfile, log: Log, makeRoom: @escaping SpaceRetry.MakeRoom = { false },
         edge: LiveEdge? = nil, observer: @escaping (StreamEvent) -> Void) throws {
        self.log = log
        self.origin = origin
        encoder = origin.encoder
        if !origin.video.isEmpty { encoder.startCounting(from: origin.video.count) }
        let rate = Int64(profile.output.sampleRate)
        // The stream's first rate fixes PART-TARGET (the thermal ladder only lowers it).
        let timing = edge == nil ? nil : profile.at(fps: encoder.fps).partTiming
        self.edge = timing == nil ? nil : edge
        segmenter = Segmenter(grid: origin.grid(profile.segmentTicks),
                              tracks: .init(audio: encoder.audio == nil ? nil : 2, audioTimescale: rate),
                              timeline: origin.timeline, nominalFrameDuration: Timescale.video / Int64(encoder.fps),
                              partTicks: timing?.ticks)
        let tracks = try encoder.initSegment()
        let video = profile.output.video
        // The rate the stream starts at: the thermal ladder's, when it has stepped down.
        let description = StreamDescription(codecs: tracks.codecs, width: video.width, height: video.height, fps: encoder.fps,
                                            configuredBitrate: profile.configuredBitrate, targetDuration: profile.targetDuration)
        writer = try StreamWriter(root: profile.output.dataDirectory, id: start.id, description: description,
                                  initSegment: tracks.bytes, makeRoom: makeRoom, observer: observer)
        if let timing { self.edge?.begin(start.id, targetDuration: profile.targetDuration, timing: timing) }
        log(.streamStarted, ("id", start.id), ("dir", writer.directory), ("target_duration", profile.targetDuration),
            ("priming", encoder.audio?.priming ?? 0), ("preroll_frames", origin.video.count))
        for (isVideo, sample) in origin.heldInTimeOrder(audioTimescale: rate) {
            try store(isVideo ? segmenter.appendVideo(sample) : segmenter.appendAudio(sample))
        }
    }

    /// A stream that starts at `firstFrame`.
    convenience init(start: StreamStart, firstFrame: VideoFrame, profile: LiveProfile, video: VideoEncoder, audio: AACEncoder?, log: Log,
                     observer: @escaping (StreamEvent) -> Void) throws {
        let encoder = Self.encoder(firstFrame: firstFrame, dating: start.dating, profile: profile, video: video, audio: audio)
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
    static func encoder(firstFrame: VideoFrame, dating: StreamDating, profile: LiveProfile, video: VideoEncoder,
                        audio: AACEncoder?) -> StreamEncoder {
        let timeline = Timeline(firstVideoCaptureTime: firstFrame.captureTime, dating: dating)
        return StreamEncoder(timeline: timeline, fps: profile.fps, rotation: profile.output.rotation,
                             keyframes: SegmentGrid(start: timeline.startTicks(timescale: Timescale.video), segmentTicks: profile.segmentTicks),
                             video: video, audio: audio)
    }

    /// The init segment of an H.264 (+ AAC) stream and its RFC 6381 codecs.
    func encode(_ frame: VideoFrame) throws {
        if encoder.rateChangeDue(frame) {
            // A new frame rate starts a new discontinuity domain (HLS_RULES S17: one rate
            // per domain); the timeline runs on without a gap.
            let from = encoder.fps
            try store(segmenter.discontinuity())
            let samples = try encoder.encode(frame)
            try writer.raiseFrameRate(to: encoder.fps)
            for sample in samples { try store(segmenter.appendVideo(origin.moved(video: sample))) }
            segmenter.nominalFrameDuration = Timescale.video / Int64(encoder.fps)
            log(.streamRate, ("id", id), ("from", from), ("to", encoder.fps), ("frame", frame.index))
            return
        }
        if frame.discontinuity && framesEncoded > 0 {
            // EXT-X-DISCONTINUITY rather than a broken timeline: close the segment, start
            // the next at this frame with an IDR. (The encoder holds no frames back: no
            // B-frames, zero latency.)
            try store(segmenter.discontinuity())
            encoder.resync()
            log(.streamDiscontinuity, ("id", id), ("frame", frame.index))
        }
        for sample in try encoder.encode(frame) { try store(segmenter.appendVideo(origin.moved(video: sample))) }
    }

    func encode(_ chunk: AudioChunk) throws {
        for sample in try encoder.encode(chunk) { try store(segmenter.appendAudio(origin.moved(audio: sample))) }
    }

    /// The thermal ladder's new rate, from the next segment on.
    func requestRate(_ fps: Int) { encoder.requestRate(fps) }

    /// Drains both encoders, writes the last segment and ENDLIST.
    func finish() throws {
        let rest = try encoder.flush()
        for sample in rest.video { try store(segmenter.appendVideo(origin.moved(video: sample))) }
        for sample in rest.audio { try store(segmenter.appendAudio(origin.moved(audio: sample))) }
        try store(segmenter.finish())
        try writer.finish()
        edge?.end(id)
        log(.streamEnded, ("id", id), ("segments", writer.segmentCount),
            ("duration", decimalSeconds(writer.totalTicks, timescale: Timescale.video)),
            ("frames", framesEncoded), ("skipped", framesSkipped), ("repeated", framesRepeated),
            ("silence_samples", audioSilenceFilled), ("bytes", writer.totalBytes))
    }

    /// A stream that stops without its ENDLIST (a failure) is no longer live either.
    deinit { edge?.end(id) }

    private func store(_ reports: [SegmentReport]) throws {
        // Parts first: each comes before its segment, and the edge lists a part only once
        // the segments before it are in the playlist.
        edge?.add(id, parts: segmenter.takeParts())
        for report in reports {
            try writer.append(report)
            if let entry = writer.playlist.entries.last { edge?.add(id, segment: report, entry: entry) }
            log(.segmentStored, ("id", id), ("seq", report.sequence), ("duration", report.durationSeconds),
                ("bytes", report.bytes.count), ("frames", report.videoSamples), ("audio_frames", report.audioSamples))
        }
    }
}
