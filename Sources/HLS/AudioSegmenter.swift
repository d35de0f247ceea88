import Media
import MP4

/// Cuts the audio rendition of a ladder stream into segments that cover the same time as
/// the pictures': segment k is the sound that starts before video segment k ends, the
/// rule `Segmenter` keeps for muxed segments, so every rendition's segment k holds the
/// same moment (RFC 8216bis §6.2.4) and the sequence numbers agree.
public struct AudioSegmenter {
    public let timeline: Timeline
    public let timescale: Int64
    public let trackID: UInt32
    /// Sound not yet in a segment, in decode order.
    private var pending: [EncodedSample] = []
    private var audioEnd: Int64?
    /// Video segments cut whose sound is not written yet: start and end in video ticks.
    private var cuts: [(start: Int64, end: Int64, videoTimescale: Int64, discontinuity: Bool)] = []
    private var nextSequence = 1

    public init(timeline: Timeline, timescale: Int64, trackID: UInt32 = 1) {
        self.timeline = timeline
        self.timescale = timescale
        self.trackID = trackID
    }

    public mutating func append(_ sample: EncodedSample) -> [SegmentReport] {
        pending.append(sample)
        audioEnd = sample.dts + sample.duration
        return drain(final: false)
    }

    /// Video segment `video` was cut: the sound before its end makes the next segment,
    /// once it has all arrived.
    public mutating func cut(after video: SegmentReport) -> [SegmentReport] {
        cuts.append((video.videoStart, video.videoStart + video.videoDuration, video.videoTimescale, video.discontinuity))
        return drain(final: false)
    }

    /// The last segments; sound past the last picture is dropped, as in a muxed stream.
    public mutating func finish() -> [SegmentReport] {
        defer { pending = [] }
        return drain(final: true)
    }

    /// Audio tick `a` is before video tick `v` (at `videoTimescale`), compared exactly.
    private func before(_ a: Int64, _ v: Int64, _ videoTimescale: Int64) -> Bool { a * videoTimescale < v * timescale }

    private mutating func drain(final: Bool) -> [SegmentReport] {
        var reports: [SegmentReport] = []
        while let cut = cuts.first {
            guard final || audioEnd.map({ !before($0, cut.end, cut.videoTimescale) }) ?? false else { break }
            cuts.removeFirst()
            // Sound captured while the pictures were away ends before this segment.
            if cut.discontinuity {
                let scale = timescale
                pending.removeAll { ($0.dts + $0.duration) * cut.videoTimescale <= cut.start * scale }
            }
            let take = pending.prefix { before($0.dts, cut.end, cut.videoTimescale) }.count
            let samples = Array(pending.prefix(take))
            pending.removeFirst(take)
            // No sound at all for it (a microphone that went silent): the rendition's
            // playlist waits for sound rather than list a segment with nothing in it.
            guard let first = samples.first, let last = samples.last else { continue }
            let bytes = MP4.Fragment.make(sequenceNumber: UInt32(nextSequence),
                                          runs: [TrackRun(trackID: trackID, baseDecodeTime: first.dts, samples: samples)])
            var report = SegmentReport(sequence: nextSequence, bytes: bytes, videoStart: first.dts,
                                       videoDuration: last.dts + last.duration - first.dts, videoTimescale: timescale,
                                       videoSamples: 0, audioSamples: samples.count,
                                       programDateTimeMs: timeline.wallClockMs(ticks: first.dts, timescale: timescale))
            report.discontinuity = cut.discontinuity
            reports.append(report)
            nextSequence += 1
        }
        return reports
    }
}
