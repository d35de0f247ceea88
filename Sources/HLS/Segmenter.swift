import Media
import MP4

/// One finished media segment and what the playlist needs to know of it.
public struct SegmentReport: Sendable {
    /// Media sequence number; also the file name (`seg/000001.m4s`).
    public var sequence: Int
    public var bytes: [UInt8]
    /// Video start and duration in video ticks: EXTINF is the real video duration
    /// (RFC 8216bis §3: video in preference to audio). In an audio rendition's segment
    /// (`AudioSegmenter`), the sound's, at its sample rate.
    public var videoStart: Int64
    public var videoDuration: Int64
    public var videoTimescale: Int64
    public var videoSamples: Int
    public var audioSamples: Int
    /// nil while the wall clock is not trusted (`StreamDating`).
    public var programDateTimeMs: Int64?
    /// The first segment after the source was interrupted: its timestamps jump.
    public var discontinuity = false
    /// How many bytes from the start hold the `moof`, the `mdat` header and the IDR that
    /// opens the segment: its entry in the I-frame playlist (RFC 8216bis §4.4.3.6). nil
    /// when it does not open with one.
    public var iFrameLength: Int?

    public var durationSeconds: String { decimalSeconds(videoDuration, timescale: videoTimescale) }

    public init(sequence: Int, bytes: [UInt8], videoStart: Int64, videoDuration: Int64, videoTimescale: Int64,
                videoSamples: Int, audioSamples: Int, programDateTimeMs: Int64?) {
        self.sequence = sequence
        self.bytes = bytes
        self.videoStart = videoStart
        self.videoDuration = videoDuration
        self.videoTimescale = videoTimescale
        self.videoSamples = videoSamples
        self.audioSamples = audioSamples
        self.programDateTimeMs = programDateTimeMs
    }
}

/// One partial segment (RFC 8216bis §4.4.4.9) of the segment in progress: its own
/// `moof` + `mdat` of the very samples its parent segment will hold (HLS_RULES LL6), for
/// the built-in server's low-latency playlist. Parts exist only in memory.
public struct PartReport: Sendable {
    /// The parent segment's media sequence number.
    public var sequence: Int
    /// The Part Index within the parent, from 0.
    public var index: Int
    public var bytes: [UInt8]
    public var videoStart: Int64
    public var videoDuration: Int64
    public var videoTimescale: Int64
    /// Starts with an IDR: `INDEPENDENT=YES` (HLS_RULES LL7).
    public var independent: Bool
    /// The last part of its parent: the parent segment follows it.
    public var endsSegment: Bool
    /// What the parent segment will carry: EXT-X-DISCONTINUITY and PROGRAM-DATE-TIME go
    /// before its first part (HLS_RULES LL5).
    public var parentDiscontinuity = false
    public var parentProgramDateTimeMs: Int64?
    /// When its last frame was captured (monotonic ns): how long a part took to be
    /// served is measured from here (make bench).
    public var lastFrameCaptureTime: Int64 = 0

    public init(sequence: Int, index: Int, bytes: [UInt8], videoStart: Int64, videoDuration: Int64, videoTimescale: Int64,
                independent: Bool, endsSegment: Bool, parentDiscontinuity: Bool = false, parentProgramDateTimeMs: Int64? = nil,
                lastFrameCaptureTime: Int64 = 0) {
        self.sequence = sequence
        self.index = index
        self.bytes = bytes
        self.videoStart = videoStart
        self.videoDuration = videoDuration
        self.videoTimescale = videoTimescale
        self.independent = independent
        self.endsSegment = endsSegment
        self.parentDiscontinuity = parentDiscontinuity
        self.parentProgramDateTimeMs = parentProgramDateTimeMs
        self.lastFrameCaptureTime = lastFrameCaptureTime
    }

    /// DURATION, to the 10 µs (a frame at 30 fps is 0.03333 s; PART-TARGET is rounded up
    /// to the same places, so no part reads longer than it).
    public var durationSeconds: String { decimalSeconds(videoDuration, timescale: videoTimescale, places: 5) }
}

/// Cuts encoded samples into fMP4 media segments at the IDR frames the encoder forced on
/// the segment grid. A cut waits until the audio encoder has delivered audio up to the
/// cut, so every segment holds its audio (HLS_RULES S14); audio that starts before a
/// segment's video end belongs to it.
public struct Segmenter {
    public struct Tracks: Sendable {
        public var video: UInt32 = 1
        public var videoTimescale: Int64 = Timescale.video
        public var audio: UInt32?
        public var audioTimescale: Int64 = 48_000
        public init(video: UInt32 = 1, videoTimescale: Int64 = Timescale.video, audio: UInt32?, audioTimescale: Int64 = 48_000) {
            self.video = video
            self.videoTimescale = videoTimescale
            self.audio = audio
            self.audioTimescale = audioTimescale
        }
    }

    public let grid: SegmentGrid
    public let tracks: Tracks
    public let timeline: Timeline
    /// Duration given to the very last frame, whose successor never comes (and to the
    /// last one before a discontinuity); follows the frame rate when it changes.
    public var nominalFrameDuration: Int64
    /// HLS segments start with an IDR (RFC 8216bis §6.2.3 wants them independent); the
    /// fragments of a recording file may start at any frame.
    public let cutsOnlyAtSync: Bool
    /// The longest a part may last (PART-TARGET, in video ticks); nil: no parts.
    public let partTicks: Int64?

    /// A run of video frames closed for writing: a part, or the whole segment when there
    /// are no parts. A segment is the runs from one that `startsSegment` to one that
    /// `endsSegment`.
    private struct Run {
        var samples: [EncodedSample]
        var discontinuous: Bool
        var endsSegment: Bool
    }
    /// The run in progress, and the decode time of its segment's first frame.
    private var current: [EncodedSample] = []
    private var segmentStart: Int64?
    private var currentIsDiscontinuous = false
    private var closed: [Run] = []
    private var audio: [EncodedSample] = []
    private var audioEnd: Int64?
    private var nextAudioDecodeTime: Int64?
    /// The runs of the segment in progress already written as parts.
    private var segment: (video: [EncodedSample], audio: [EncodedSample], audioBase: Int64?, discontinuous: Bool) = ([], [], nil, false)
    private var partIndex = 0
    private var madeParts: [PartReport] = []
    private var nextSequence = 1
    /// A cut whose audio is this many segments late is written without waiting further,
    /// so a silent microphone cannot hold the live stream back.
    private let maximumAudioWait = 2

    public init(grid: SegmentGrid, tracks: Tracks, timeline: Timeline, nominalFrameDuration: Int64, cutsOnlyAtSync: Bool = true,
                partTicks: Int64? = nil) {
        self.grid = grid
        self.cutsOnlyAtSync = cutsOnlyAtSync
        self.tracks = tracks
        self.timeline = timeline
        self.nominalFrameDuration = nominalFrameDuration
        self.partTicks = partTicks
    }

    /// The media sequence number of the next segment it cuts.
    public var nextSegmentSequence: Int { nextSequence }

    /// A rung taken up again after the heat dropped it: its next segment is number
    /// `sequence`, where the rungs that went on are (its own numbers stopped meanwhile).
    public mutating func resume(at sequence: Int) {
        precondition(current.isEmpty && closed.isEmpty && sequence >= nextSequence)
        nextSequence = sequence
    }

    public var pendingVideoSamples: Int { current.count + closed.reduce(0) { $0 + $1.samples.count } + segment.video.count }

    /// The parts made since the last call, in order. A part comes before its parent
    /// segment's report, and may come before the report of the segment before it.
    public mutating func takeParts() -> [PartReport] {
        defer { madeParts = [] }
        return madeParts
    }

    public mutating func appendVideo(_ sample: EncodedSample) -> [SegmentReport] {
        if var last = current.popLast() {
            last.duration = max(1, sample.dts - last.dts)
            current.append(last)
            if sample.isSync || !cutsOnlyAtSync, let start = segmentStart, grid.slot(sample.dts) > grid.slot(start) {
                closeCurrent(endsSegment: true)
            } else if let partTicks, let first = current.first, sample.dts + nominalFrameDuration - first.dts > partTicks {
                // This frame would take the part past PART-TARGET (HLS_RULES LL4): the
                // frames are on a constant-rate grid, so the next part starts here.
                closeCurrent(endsSegment: false)
            }
        }
        if segmentStart == nil { segmentStart = sample.dts }
        current.append(sample)
        return drain(final: false)
    }

    public mutating func appendAudio(_ sample: EncodedSample) -> [SegmentReport] {
        if nextAudioDecodeTime == nil { nextAudioDecodeTime = sample.dts }
        audio.append(sample)
        audioEnd = sample.dts + sample.duration
        return drain(final: false)
    }

    private mutating func closeCurrent(endsSegment: Bool) {
        closed.append(Run(samples: current, discontinuous: currentIsDiscontinuous, endsSegment: endsSegment))
        current = []
        currentIsDiscontinuous = false
        if endsSegment { segmentStart = nil }
    }

    /// Ends the segment in progress (its last frame gets the nominal duration): the
    /// source was interrupted, and the next video sample (an IDR) starts a segment marked
    /// as a discontinuity. Sound from the gap is left out of the stream.
    public mutating func discontinuity() -> [SegmentReport] {
        if var last = current.popLast() {
            last.duration = nominalFrameDuration
            current.append(last)
            closeCurrent(endsSegment: true)
        }
        currentIsDiscontinuous = true
        return drain(final: false)
    }

    /// Writes what is left as the last segment; trailing audio past the video end is
    /// dropped so both tracks end together.
    public mutating func finish() -> [SegmentReport] {
        if var last = current.popLast() {
            last.duration = nominalFrameDuration
            current.append(last)
            closeCurrent(endsSegment: true)
        }
        return drain(final: true)
    }

    private func videoEnd(_ run: [EncodedSample]) -> Int64 {
        guard let last = run.last else { return 0 }
        return last.dts + last.duration
    }

    /// Audio tick `a` is before video tick `v`, compared exactly across timescales.
    private func audioIsBefore(_ a: Int64, video v: Int64) -> Bool {
        a * tracks.videoTimescale < v * tracks.audioTimescale
    }

    /// Writes the closed runs whose audio has arrived: each as a part (when there are
    /// parts), and each segment once its last run is written. A segment's audio is the
    /// sound that starts before its video ends, so it waits for that; a part inside a
    /// segment takes what of it has arrived and leaves the rest to the next part, so it is
    /// served a frame after its last picture rather than after the audio encoder's delay.
    /// Either way a segment holds exactly its parts' samples.
    private mutating func drain(final: Bool) -> [SegmentReport] {
        var reports: [SegmentReport] = []
        while let run = closed.first {
            let end = videoEnd(run.samples)
            let audioReady = tracks.audio == nil || final || !run.endsSegment || closed.filter(\.endsSegment).count > maximumAudioWait
                || audioEnd.map { !audioIsBefore($0, video: end) } ?? false
            guard audioReady else { break }
            closed.removeFirst()
            let videoTimescale = tracks.videoTimescale, audioTimescale = tracks.audioTimescale
            if run.discontinuous, let start = run.samples.first?.dts {
                // Sound captured while the pictures were away ends before this segment.
                audio.removeAll { ($0.dts + $0.duration) * videoTimescale <= start * audioTimescale }
            }
            var take = audio.prefix { audioIsBefore($0.dts, video: end) }.count
            if final && closed.isEmpty {
                audio.removeAll { $0.dts * videoTimescale >= end * audioTimescale }
                take = audio.count
            }
            let runAudio = Array(audio.prefix(take))
            audio.removeFirst(take)
            if segment.video.isEmpty { segment = ([], [], nextAudioDecodeTime, run.discontinuous) }
            if partTicks != nil { madeParts.append(makePart(video: run.samples, audio: runAudio, endsSegment: run.endsSegment)) }
            if let last = runAudio.last { nextAudioDecodeTime = last.dts + last.duration }
            segment.video += run.samples
            segment.audio += runAudio
            guard run.endsSegment else { continue }
            var report = makeReport(video: segment.video, audio: segment.audio, audioBase: segment.audioBase)
            report.discontinuity = segment.discontinuous
            reports.append(report)
            segment = ([], [], nil, false)
            partIndex = 0
        }
        return reports
    }

    private func runs(video: [EncodedSample], audio runAudio: [EncodedSample], audioBase: Int64?) -> [TrackRun] {
        let start = video[0].dts
        var runs = [TrackRun(trackID: tracks.video, baseDecodeTime: start, samples: video)]
        if let audioID = tracks.audio {
            let base = runAudio.first?.dts ?? audioBase ?? rescale(start, from: tracks.videoTimescale, to: tracks.audioTimescale)
            runs.append(TrackRun(trackID: audioID, baseDecodeTime: base, samples: runAudio))
        }
        return runs
    }

    /// A part's fragment carries its parent's sequence number: `mfhd` never goes back
    /// whether a player reads parts or whole segments (HLS_RULES S2).
    private mutating func makePart(video: [EncodedSample], audio runAudio: [EncodedSample], endsSegment: Bool) -> PartReport {
        let bytes = MP4.Fragment.make(sequenceNumber: UInt32(nextSequence), runs: runs(video: video, audio: runAudio, audioBase: nextAudioDecodeTime))
        defer { partIndex += 1 }
        let parentStart = segment.video.first?.dts ?? video[0].dts
        return PartReport(sequence: nextSequence, index: partIndex, bytes: bytes, videoStart: video[0].dts,
                          videoDuration: videoEnd(video) - video[0].dts, videoTimescale: tracks.videoTimescale,
                          independent: video[0].isSync, endsSegment: endsSegment, parentDiscontinuity: segment.discontinuous,
                          parentProgramDateTimeMs: timeline.wallClockMs(ticks: parentStart, timescale: tracks.videoTimescale),
                          lastFrameCaptureTime: timeline.captureTime(ticks: video[video.count - 1].dts, timescale: tracks.videoTimescale))
    }

    private mutating func makeReport(video: [EncodedSample], audio segmentAudio: [EncodedSample], audioBase: Int64?) -> SegmentReport {
        let start = video[0].dts
        let sequence = nextSequence
        nextSequence += 1
        let bytes = MP4.Fragment.make(sequenceNumber: UInt32(sequence), runs: runs(video: video, audio: segmentAudio, audioBase: audioBase))
        var report = SegmentReport(sequence: sequence, bytes: bytes, videoStart: start,
                                   videoDuration: videoEnd(video) - start, videoTimescale: tracks.videoTimescale,
                                   videoSamples: video.count, audioSamples: segmentAudio.count,
                                   programDateTimeMs: timeline.wallClockMs(ticks: start, timescale: tracks.videoTimescale))
        // The video samples come first in the mdat (`Fragment`), so the IDR ends the range.
        if video[0].isSync { report.iFrameLength = MP4.Fragment.payloadOffset(bytes) + video[0].data.count }
        return report
    }
}
