import Codecs
import Files
import HLS
import Logging
import Media
import MP4
import Spool

/// One live HLS stream from its first video frame to ENDLIST: encoders → segmenter →
/// files. Runs on the live output's thread only; nothing here is shared. Without a
/// ladder, one segmenter cuts pictures and sound into the same segments; with one, each
/// rung's pictures are cut by a segmenter of their own (IDRs on the same frames, so the
/// cuts line up) and the sound by an `AudioSegmenter` at the top rung's cuts, each into a
/// rendition of the stream (`v0`, `v1`, …, `audio`).
final class LiveStream {
    let writer: StreamWriter
    private let log: Log
    private let encoder: StreamEncoder
    /// One per rung; the first cuts the sound too when there is no ladder.
    private var segmenters: [Segmenter]
    /// A ladder's sound; its rendition comes after the rungs'.
    private var sound: AudioSegmenter?
    private var isLadder: Bool { segmenters.count > 1 }
    /// Each rung as `WxH@RATE`, top first.
    private let rungNames: [String]
    /// A segment's length in 90 kHz ticks.
    private let segmentTicks: Int64

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
        let encoder = origin.encoder
        self.encoder = encoder
        if !origin.video.isEmpty { encoder.startCounting(from: origin.video.count) }
        let rate = Int64(profile.output.sampleRate)
        let ladder = encoder.videos.count > 1
        segmentTicks = profile.segmentTicks
        rungNames = profile.rungNames
        // The stream's first rate fixes PART-TARGET (the thermal ladder only lowers it).
        // A ladder's renditions are regular HLS: parts for each, with rendition reports,
        // are not made yet.
        let timing = edge == nil || ladder ? nil : profile.at(fps: encoder.fps).partTiming
        self.edge = timing == nil ? nil : edge
        segmenters = encoder.videos.map { _ in
            Segmenter(grid: origin.grid(profile.segmentTicks),
                      tracks: .init(audio: encoder.audio == nil || ladder ? nil : 2, audioTimescale: rate),
                      timeline: origin.timeline, nominalFrameDuration: Timescale.video / Int64(encoder.fps),
                      partTicks: timing?.ticks)
        }
        if ladder && encoder.audio != nil { sound = AudioSegmenter(timeline: origin.timeline, timescale: rate) }
        // One muxed variant in the stream's directory; or each rung's pictures, and the
        // sound, in folders of their own.
        var renditions: [RenditionDescription] = []
        for (rung, video) in profile.rungSettings.enumerated() {
            let tracks = try encoder.initSegment(rung: rung, withAudio: !ladder)
            renditions.append(RenditionDescription(folder: ladder ? "v\(rung)" : "", kind: ladder ? .video : .muxed, codecs: tracks.codecs,
                                                   width: video.width, height: video.height,
                                                   configuredBitrate: ladder ? video.bitrate : profile.configuredBitrate, initSegment: tracks.bytes))
        }
        if ladder, let audio = profile.output.audio, let tracks = try encoder.audioInitSegment() {
            renditions.append(RenditionDescription(folder: "audio", kind: .audio(channels: audio.channels), codecs: tracks.codecs,
                                                   configuredBitrate: audio.bitrate, initSegment: tracks.bytes))
        }
        // The rate the stream starts at: the thermal ladder's, when it has stepped down.
        writer = try StreamWriter(root: profile.output.dataDirectory, id: start.id, renditions: renditions, fps: encoder.fps,
                                  targetDuration: profile.targetDuration, makeRoom: makeRoom, observer: observer)
        if let timing { self.edge?.begin(start.id, targetDuration: profile.targetDuration, timing: timing) }
        var fields: [(String, Any)] = [("id", start.id), ("dir", writer.directory), ("target_duration", profile.targetDuration),
                                       ("priming", encoder.audio?.priming ?? 0), ("preroll_frames", origin.video.count)]
        if ladder {
            fields.append(("rungs", rungNames.joined(separator: ",")))
            if encoder.topRung > 0 { fields.append(("dropped", rungNames[..<encoder.topRung].joined(separator: ","))) }
        }
        log.emit(.streamStarted, level: .info, fields)
        for (isVideo, sample) in origin.heldInTimeOrder(audioTimescale: rate) {
            try isVideo ? append(video: sample) : append(audio: sample)
        }
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

    /// The init segment of an H.264 (+ AAC) stream and its RFC 6381 codecs.
    func encode(_ frame: VideoFrame) throws {
        if encoder.changeDue(frame) {
            // A new frame rate starts a new discontinuity domain (HLS_RULES S17: one rate
            // per domain); so do rungs dropped or taken up (a dropped rung carries the
            // next one's pictures under its init, P9, and every rendition's discontinuities
            // stay on the same segments, V6). The timeline runs on without a gap.
            let (from, top) = (encoder.fps, encoder.topRung)
            try discontinuity()
            let samples = try encoder.encode(frame)
            if encoder.fps != from {
                try writer.raiseFrameRate(to: encoder.fps)
                for rung in segmenters.indices { segmenters[rung].nominalFrameDuration = Timescale.video / Int64(encoder.fps) }
                log(.streamRate, ("id", id), ("from", from), ("to", encoder.fps), ("frame", frame.index))
            }
            if encoder.topRung != top {
                // Rungs taken up again go on at the number the encoded ones have reached.
                let next = segmenters[top].nextSegmentSequence
                if encoder.topRung < top { for rung in encoder.topRung..<top { segmenters[rung].resume(at: next) } }
                log(.streamRungs, ("id", id), ("live", rungNames[encoder.topRung...].joined(separator: ",")),
                    ("dropped", rungNames[..<encoder.topRung].joined(separator: ",")), ("seq", next), ("frame", frame.index))
            }
            for sample in samples { try append(video: origin.moved(video: sample)) }
            return
        }
        if frame.discontinuity && framesEncoded > 0 {
            // EXT-X-DISCONTINUITY rather than a broken timeline: close the segment, start
            // the next at this frame with an IDR. (The encoder holds no frames back: no
            // B-frames, zero latency.)
            try discontinuity()
            encoder.resync()
            log(.streamDiscontinuity, ("id", id), ("frame", frame.index))
        }
        for sample in try encoder.encode(frame) { try append(video: origin.moved(video: sample)) }
        // A ladder's sound is a rendition of its own, cut when its sound has come: with a
        // microphone that stopped delivering it would stop, and players with it. Sound a
        // whole segment late is made up with silence (the muxed segmenter writes its
        // pictures without it instead).
        if isLadder, encoder.audio != nil, encoder.videoEndTicks - encoder.audioEndTicks > segmentTicks {
            for sample in try encoder.fillSilence(upTo: encoder.videoEndTicks) { try append(audio: origin.moved(audio: sample)) }
        }
    }

    func encode(_ chunk: AudioChunk) throws {
        for sample in try encoder.encode(chunk) { try append(audio: origin.moved(audio: sample)) }
    }

    /// A picture to its rung's segmenter.
    private func append(video sample: EncodedSample) throws {
        try store(segmenters[sample.rung].appendVideo(sample), rendition: sample.rung)
    }

    /// Sound to the muxed segmenter, or to a ladder's own.
    private func append(audio sample: EncodedSample) throws {
        if isLadder {
            if let reports = sound?.append(sample) { try store(reports, rendition: segmenters.count) }
        } else {
            try store(segmenters[0].appendAudio(sample))
        }
    }

    /// Every rendition's segment in progress ends here.
    private func discontinuity() throws {
        for rung in segmenters.indices { try store(segmenters[rung].discontinuity(), rendition: rung) }
    }

    /// The thermal ladder's new rate, from the next segment on.
    func setRate(_ fps: Int) { encoder.setRate(fps) }

    /// The thermal ladder's rungs: the `dropped` top ones stop being encoded (or, fewer,
    /// are taken up again) from the next segment on.
    func setDroppedRungs(_ dropped: Int) { encoder.setDroppedRungs(dropped) }

    /// Drains both encoders, writes the last segment and ENDLIST.
    func finish() throws {
        let rest = try encoder.flush()
        for sample in rest.video { try append(video: origin.moved(video: sample)) }
        for sample in rest.audio { try append(audio: origin.moved(audio: sample)) }
        for rung in segmenters.indices { try store(segmenters[rung].finish(), rendition: rung) }
        if let reports = sound?.finish() { try store(reports, rendition: segmenters.count) }
        try writer.finish()
        edge?.end(id)
        log(.streamEnded, ("id", id), ("segments", writer.segmentCount),
            ("duration", decimalSeconds(writer.totalTicks, timescale: Timescale.video)),
            ("frames", framesEncoded), ("skipped", framesSkipped), ("repeated", framesRepeated),
            ("silence_samples", audioSilenceFilled), ("bytes", writer.totalBytes))
    }

    /// A stream that stops without its ENDLIST (a failure) is no longer live either.
    deinit { edge?.end(id) }

    /// Writes the segments a segmenter of rendition `rendition` cut; the top rung's cuts
    /// are where a ladder's sound is cut too.
    private func store(_ reports: [SegmentReport], rendition: Int = 0) throws {
        // Parts first: each comes before its segment, and the edge lists a part only once
        // the segments before it are in the playlist.
        if rendition == 0 { edge?.add(id, parts: segmenters[0].takeParts()) }
        for report in reports {
            try writer.append(report, rendition: rendition)
            if rendition == 0, let entry = writer.playlist.entries.last { edge?.add(id, segment: report, entry: entry) }
            var fields: [(String, Any)] = [("id", id), ("seq", report.sequence), ("duration", report.durationSeconds),
                                           ("bytes", report.bytes.count), ("frames", report.videoSamples), ("audio_frames", report.audioSamples)]
            if isLadder { fields.insert(("rendition", writer.renditionFolders[rendition]), at: 1) }
            log.emit(.segmentStored, level: .info, fields)
            guard rendition == encoder.topRung, isLadder else { continue }
            // The rungs the heat dropped carry this one's segment; the sound is cut where
            // the highest rung still encoded is.
            for dropped in 0..<rendition { try writer.carry(report, from: rendition, into: dropped) }
            if let cut = sound?.cut(after: report) { try store(cut, rendition: segmenters.count) }
        }
    }
}
