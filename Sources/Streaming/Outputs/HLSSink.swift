import Live
import HLS
import Logging
import Media
import MP4
import Spool

/// The live stream's packager: encoded samples → segmenters → the stream's directory
/// (`StreamWriter`), and parts to the built-in server's low-latency edge. Without a
/// ladder, one segmenter cuts pictures and sound into the same segments; with one, each
/// rung's pictures are cut by a segmenter of their own (IDRs on the same frames, so the
/// cuts line up) and the sound by an `AudioSegmenter` at the top rung's cuts, each into a
/// rendition of the stream (`v0`, `v1`, …, `audio`).
final class HLSSink: EncodedSink {
    let writer: StreamWriter
    private let log: Log
    /// One per rung; the first cuts the sound too when there is no ladder.
    private var segmenters: [Segmenter]
    /// A ladder's sound; its rendition comes after the rungs'.
    private var sound: AudioSegmenter?
    private var isLadder: Bool { segmenters.count > 1 }
    /// Each rung as `WxH@RATE`, top first.
    private let rungNames: [String]
    /// The frame rate and the highest rung encoded now (the heat lowers the one and leaves
    /// out the rungs above the other).
    private var fps: Int
    private var topRung: Int
    /// Where the parts go for the low-latency playlist (nil: no parts).
    private let edge: LiveEdge?

    var id: String { writer.id }

    /// `segmenters` and `sound` cut the stream the writer holds; `edge` gets the top
    /// rung's parts (given only when the segmenters make them).
    init(writer: StreamWriter, segmenters: [Segmenter], sound: AudioSegmenter?, rungNames: [String], fps: Int, topRung: Int,
         edge: LiveEdge?, log: Log) {
        self.fps = fps
        self.writer = writer
        self.segmenters = segmenters
        self.sound = sound
        self.rungNames = rungNames
        self.topRung = topRung
        self.edge = edge
        self.log = log
    }

    /// A picture to its rung's segmenter.
    func append(video sample: EncodedSample) throws {
        try store(segmenters[sample.rung].appendVideo(sample), rendition: sample.rung)
    }

    /// Sound to the muxed segmenter, or to a ladder's own.
    func append(audio sample: EncodedSample) throws {
        if isLadder {
            if let reports = sound?.append(sample) { try store(reports, rendition: segmenters.count) }
        } else {
            try store(segmenters[0].appendAudio(sample))
        }
    }

    /// Every rendition's segment in progress ends here; a new rate is declared before any
    /// segment at it is listed, and rungs taken up again go on at the number the encoded
    /// ones have reached.
    func discontinuity(_ change: StreamChange) throws {
        for rung in segmenters.indices { try store(segmenters[rung].discontinuity(), rendition: rung) }
        guard change.format else {
            log(.streamDiscontinuity, ("id", id), ("frame", change.frame))
            return
        }
        if change.fps != fps {
            let from = fps
            fps = change.fps
            try writer.raiseFrameRate(to: fps)
            for rung in segmenters.indices { segmenters[rung].nominalFrameDuration = Timescale.video / Int64(fps) }
            log(.streamRate, ("id", id), ("from", from), ("to", fps), ("frame", change.frame))
        }
        if change.topRung != topRung {
            let next = segmenters[topRung].nextSegmentSequence
            if change.topRung < topRung { for rung in change.topRung..<topRung { segmenters[rung].resume(at: next) } }
            topRung = change.topRung
            log(.streamRungs, ("id", id), ("live", rungNames[topRung...].joined(separator: ",")),
                ("dropped", rungNames[..<topRung].joined(separator: ",")), ("seq", next), ("frame", change.frame))
        }
    }

    /// The last segments and ENDLIST.
    func finish(_ totals: StreamTotals) throws {
        for rung in segmenters.indices { try store(segmenters[rung].finish(), rendition: rung) }
        if let reports = sound?.finish() { try store(reports, rendition: segmenters.count) }
        try writer.finish()
        edge?.end(id)
        log(.streamEnded, ("id", id), ("segments", writer.segmentCount),
            ("duration", decimalSeconds(writer.totalTicks, timescale: Timescale.video)),
            ("frames", totals.framesEncoded), ("skipped", totals.framesSkipped), ("repeated", totals.framesRepeated),
            ("silence_samples", totals.audioSilenceFilled), ("idrs_for_viewers", totals.keyframesRequested), ("bytes", writer.totalBytes))
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
            guard rendition == topRung, isLadder else { continue }
            // The rungs the heat dropped carry this one's segment; the sound is cut where
            // the highest rung still encoded is.
            for dropped in 0..<rendition { try writer.carry(report, from: rendition, into: dropped) }
            if let cut = sound?.cut(after: report) { try store(cut, rendition: segmenters.count) }
        }
    }
}
