import Media
import MP4

/// One finished media segment and what the playlist needs to know of it.
public struct SegmentReport: Sendable {
    /// Media sequence number; also the file name (`seg/000001.m4s`).
    public var sequence: Int
    public var bytes: [UInt8]
    /// Video start and duration in video ticks: EXTINF is the real video duration
    /// (RFC 8216bis §3: video in preference to audio).
    public var videoStart: Int64
    public var videoDuration: Int64
    public var videoTimescale: Int64
    public var videoSamples: Int
    public var audioSamples: Int
    /// nil while the wall clock is not trusted (`StreamDating`).
    public var programDateTimeMs: Int64?
    /// The first segment after the source was interrupted: its timestamps jump.
    public var discontinuity = false

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

    private var current: [EncodedSample] = []
    private var currentIsDiscontinuous = false
    private var closed: [(samples: [EncodedSample], discontinuous: Bool)] = []
    private var audio: [EncodedSample] = []
    private var audioEnd: Int64?
    private var nextAudioDecodeTime: Int64?
    private var nextSequence = 1
    /// A cut whose audio is this many segments late is written without waiting further,
    /// so a silent microphone cannot hold the live stream back.
    private let maximumAudioWait = 2

    public init(grid: SegmentGrid, tracks: Tracks, timeline: Timeline, nominalFrameDuration: Int64, cutsOnlyAtSync: Bool = true) {
        self.grid = grid
        self.cutsOnlyAtSync = cutsOnlyAtSync
        self.tracks = tracks
        self.timeline = timeline
        self.nominalFrameDuration = nominalFrameDuration
    }

    public var pendingVideoSamples: Int { current.count + closed.reduce(0) { $0 + $1.samples.count } }

    public mutating func appendVideo(_ sample: EncodedSample) -> [SegmentReport] {
        if var last = current.popLast() {
            last.duration = max(1, sample.dts - last.dts)
            current.append(last)
            if sample.isSync || !cutsOnlyAtSync, let first = current.first, grid.slot(sample.dts) > grid.slot(first.dts) {
                closeCurrent()
            }
        }
        current.append(sample)
        return drain(final: false)
    }

    public mutating func appendAudio(_ sample: EncodedSample) -> [SegmentReport] {
        if nextAudioDecodeTime == nil { nextAudioDecodeTime = sample.dts }
        audio.append(sample)
        audioEnd = sample.dts + sample.duration
        return drain(final: false)
    }

    private mutating func closeCurrent() {
        closed.append((current, currentIsDiscontinuous))
        current = []
        currentIsDiscontinuous = false
    }

    /// Ends the segment in progress (its last frame gets the nominal duration): the
    /// source was interrupted, and the next video sample (an IDR) starts a segment marked
    /// as a discontinuity. Sound from the gap is left out of the stream.
    public mutating func discontinuity() -> [SegmentReport] {
        if var last = current.popLast() {
            last.duration = nominalFrameDuration
            current.append(last)
            closeCurrent()
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
            closeCurrent()
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

    private mutating func drain(final: Bool) -> [SegmentReport] {
        var reports: [SegmentReport] = []
        while let (run, discontinuous) = closed.first {
            let end = videoEnd(run)
            let audioReady = tracks.audio == nil || final || closed.count > maximumAudioWait
                || audioEnd.map { !audioIsBefore($0, video: end) } ?? false
            guard audioReady else { break }
            closed.removeFirst()
            if discontinuous, let start = run.first?.dts {
                // Sound captured while the pictures were away ends before this segment.
                let videoTimescale = tracks.videoTimescale, audioTimescale = tracks.audioTimescale
                audio.removeAll { ($0.dts + $0.duration) * videoTimescale <= start * audioTimescale }
            }
            let isLast = final && closed.isEmpty
            var take = audio.prefix { audioIsBefore($0.dts, video: end) }.count
            if isLast {
                let videoTimescale = tracks.videoTimescale, audioTimescale = tracks.audioTimescale
                audio.removeAll { $0.dts * videoTimescale >= end * audioTimescale }
                take = audio.count
            }
            let segmentAudio = Array(audio.prefix(take))
            audio.removeFirst(take)
            var report = makeReport(video: run, audio: segmentAudio)
            report.discontinuity = discontinuous
            reports.append(report)
        }
        return reports
    }

    private mutating func makeReport(video: [EncodedSample], audio segmentAudio: [EncodedSample]) -> SegmentReport {
        let start = video[0].dts
        var runs = [TrackRun(trackID: tracks.video, baseDecodeTime: start, samples: video)]
        if let audioID = tracks.audio {
            let base = segmentAudio.first?.dts ?? nextAudioDecodeTime ?? rescale(start, from: tracks.videoTimescale, to: tracks.audioTimescale)
            runs.append(TrackRun(trackID: audioID, baseDecodeTime: base, samples: segmentAudio))
            if let last = segmentAudio.last { nextAudioDecodeTime = last.dts + last.duration }
        }
        let sequence = nextSequence
        nextSequence += 1
        let bytes = MP4.Fragment.make(sequenceNumber: UInt32(sequence), runs: runs)
        return SegmentReport(sequence: sequence, bytes: bytes, videoStart: start,
                             videoDuration: videoEnd(video) - start, videoTimescale: tracks.videoTimescale,
                             videoSamples: video.count, audioSamples: segmentAudio.count,
                             programDateTimeMs: timeline.wallClockMs(ticks: start, timescale: tracks.videoTimescale))
    }
}
