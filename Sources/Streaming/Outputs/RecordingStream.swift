import Live
import Codecs
import Files
import HLS
import Logging
import Media
import Spool
import Recording

/// One local recording, beside the live stream of the same id: its own encoders and
/// profile (`EncodedStream`) → `RecordingSink`: one-second fragments →
/// `recordings/<id>.mp4.part` → `recordings/<id>.mp4`.
final class RecordingStream {
    let file: RecordingFile
    let stream: EncodedStream

    var id: String { file.id }
    var framesEncoded: Int { stream.encoder.framesEncoded }

    /// A fragment every second: what a power cut can cost at most.
    static let fragmentTicks = Timescale.video
    /// An IDR every two seconds, where a player can start or seek.
    static let keyframeTicks = 2 * Timescale.video

    /// A recording from `origin`: its encoder, timeline, and any pre-roll already encoded.
    init(start: StreamStart, origin: StreamOrigin, profile: RecordingProfile, log: Log,
         makeRoom: @escaping SpaceRetry.MakeRoom = { false }) throws {
        let encoder = origin.encoder
        let rate = Int64(profile.output.sampleRate)
        let fragmenter = Segmenter(grid: origin.grid(Self.fragmentTicks),
                                   tracks: .init(audio: encoder.audio == nil ? nil : 2, audioTimescale: rate),
                                   timeline: origin.timeline, nominalFrameDuration: Timescale.video / Int64(encoder.fps), cutsOnlyAtSync: false)
        let recordings = Recordings(root: profile.output.dataDirectory)
        let video = encoder.video
        let tracks = try encoder.initSegment()
        file = try RecordingFile(layout: recordings.layout, id: start.id, initSegment: tracks.bytes,
                                 preallocateBytes: Int64(profile.preallocateMegabytes) << 20, makeRoom: makeRoom)
        let sink = RecordingSink(file: file, fragmenter: fragmenter, recordings: recordings, priority: profile.priority,
                                 timeline: origin.timeline, log: log)
        stream = EncodedStream(origin: origin, sinks: [sink], marksDiscontinuities: false)
        log(.recordingStarted, ("id", start.id), ("file", file.partPath), ("codec", video.codecName),
            ("width", video.settings.width), ("height", video.settings.height), ("fps", encoder.fps), ("bitrate", profile.output.video.bitrate),
            ("preroll_frames", origin.video.count))
        try stream.appendHeld(audioTimescale: rate)
    }

    /// A recording that starts at `firstFrame`.
    convenience init(start: StreamStart, firstFrame: VideoFrame, profile: RecordingProfile, video: VideoEncoder,
                     audio: AACEncoder?, log: Log) throws {
        let encoder = Self.encoder(firstFrame: firstFrame, dating: start.dating, profile: profile, video: video, audio: audio)
        try self.init(start: start, origin: StreamOrigin(encoder: encoder), profile: profile, log: log)
        try encode(firstFrame)
    }

    /// The recording's encoders on a timeline that starts at `firstFrame`, an IDR every 2 s.
    static func encoder(firstFrame: VideoFrame, dating: StreamDating, profile: RecordingProfile, video: VideoEncoder,
                        audio: AACEncoder?) -> StreamEncoder {
        let timeline = Timeline(firstVideoCaptureTime: firstFrame.captureTime, dating: dating)
        return StreamEncoder(timeline: timeline, fps: profile.output.video.fps, rotation: profile.output.rotation,
                             keyframes: SegmentGrid(start: timeline.startTicks(timescale: Timescale.video), segmentTicks: keyframeTicks),
                             video: video, audio: audio)
    }

    /// The file has no discontinuities: the last picture stays up through a gap (one long
    /// sample) while the sound goes on.
    func encode(_ frame: VideoFrame) throws { try stream.encode(frame) }
    func encode(_ chunk: AudioChunk) throws { try stream.encode(chunk) }

    /// The recording changes rate with the live stream (no discontinuity in a file).
    func setRate(_ fps: Int) { stream.setRate(fps) }

    /// The last fragment, then the progressive MP4.
    func finish() throws { try stream.finish() }
}

/// The recording's consumer of encoded samples: fragments into the `.part` file, and at
/// the end the progressive MP4 and its description.
final class RecordingSink: EncodedSink {
    private let file: RecordingFile
    private var fragmenter: Segmenter
    private let recordings: Recordings
    private let priority: Recordings.Priority
    private let timeline: Timeline
    private let log: Log
    private var id: String { file.id }

    init(file: RecordingFile, fragmenter: Segmenter, recordings: Recordings, priority: Recordings.Priority, timeline: Timeline, log: Log) {
        self.file = file
        self.fragmenter = fragmenter
        self.recordings = recordings
        self.priority = priority
        self.timeline = timeline
        self.log = log
    }

    func append(video sample: EncodedSample) throws { try store(fragmenter.appendVideo(sample)) }
    func append(audio sample: EncodedSample) throws { try store(fragmenter.appendAudio(sample)) }

    /// Only a new rate reaches a file (it marks no discontinuity): its frames' length.
    func discontinuity(_ change: StreamChange) throws {
        fragmenter.nominalFrameDuration = Timescale.video / Int64(change.fps)
    }

    func finish(_ totals: StreamTotals) throws {
        try store(fragmenter.finish())
        let latencies = file.writeLatencies
        guard let result = try file.finish() else { return }
        // Its true start, when the clock was trusted at any time during it (else none).
        let started = timeline.wallClockMs(ticks: timeline.startTicks(timescale: Timescale.video), timescale: Timescale.video)
        try recordings.describe(result, id: id, priority: priority, startMs: started)
        log(.recordingEnded, ("id", id), ("file", result.path), ("seconds", result.seconds), ("frames", result.videoFrames),
            ("bytes", result.bytes), ("repeated", totals.framesRepeated), ("skipped", totals.framesSkipped),
            ("write_ms_p50", percentileMilliseconds(latencies, 0.5)), ("write_ms_p99", percentileMilliseconds(latencies, 0.99)))
    }

    /// A full disk pauses the recording (its fragments are left out) and never the live
    /// stream; each change is said once, on the console too.
    private func store(_ fragments: [SegmentReport]) throws {
        for fragment in fragments {
            let wasPaused = file.paused, wasReserving = !file.reservationOff
            try file.append(fragment.bytes)
            if wasReserving && file.reservationOff {
                log(.recordingReserveOff, level: .warn, ("id", id), ("reason", "no room for record.preallocate_mb"))
            }
            if file.paused != wasPaused {
                log(file.paused ? Event.recordingPaused : Event.recordingResumed, level: file.paused ? .error : .warn, ("id", id),
                    ("reason", "disk full"), ("fragments_dropped", file.fragmentsDropped))
            }
        }
    }
}
